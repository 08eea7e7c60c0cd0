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
        };
        agent_client_protocol::Error::new(code, self.to_string())
    }
}
