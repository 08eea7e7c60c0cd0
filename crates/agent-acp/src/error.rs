//! The crate's one error type.

/// What went wrong serving a client.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The host could not open or find a session.
    #[error("{0}")]
    Host(String),
    /// The session named in a request is not open on this connection.
    #[error("no session {0} is open on this connection")]
    UnknownSession(String),
    /// A parameter named something we do not have.
    #[error("{0}")]
    InvalidParams(String),
    /// A frame was longer than [`crate::MAX_FRAME_BYTES`], so it was not read.
    #[error("the frame is {bytes} bytes, over the limit of {limit}; it was not read")]
    FrameTooLarge {
        /// The frame's length as far as it was counted.
        bytes: u64,
        /// The most a frame may hold.
        limit: u64,
    },
    /// The connection failed.
    #[error("connection: {0}")]
    Connection(String),
}

impl Error {
    /// The JSON-RPC error the client receives, with the protocol's code for the case.
    pub(crate) fn to_rpc(&self) -> agent_client_protocol::Error {
        use agent_client_protocol::ErrorCode;
        let code = match self {
            Error::Host(_) | Error::Connection(_) => ErrorCode::INTERNAL_ERROR,
            Error::UnknownSession(_) => ErrorCode::RESOURCE_NOT_FOUND,
            Error::InvalidParams(_) => ErrorCode::INVALID_PARAMS,
            Error::FrameTooLarge { .. } => ErrorCode::INVALID_REQUEST,
        };
        agent_client_protocol::Error::new(code, self.to_string())
    }
}
