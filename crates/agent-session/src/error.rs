//! The one error of session assembly: each says what was being done and what went wrong, in
//! words a user can act on, so a front end prints it as it is.

use std::fmt::Display;

/// Why a session could not be configured, opened or changed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration file, flag, profile or file the session needs is wrong or unreadable; the
    /// message names it.
    #[error("{0}")]
    Invalid(String),
    /// No model server is configured and the default (OpenAI) has no key.
    #[error("{}", crate::config::NO_PROVIDER)]
    NoProvider,
    /// An MCP server marked `required` did not start (its failure was already reported).
    #[error("a required MCP server did not start, so the session cannot begin")]
    RequiredServer,
}

/// What a fallible step of this crate returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Invalid`] with `message`.
    pub(crate) fn invalid(message: impl Display) -> Self {
        Self::Invalid(message.to_string())
    }
}

/// The whole chain of `err`'s causes on one line, each once: `reading x: permission denied`.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        // Many errors already print their source in their own message.
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// Adds what was being done to an error, as `anyhow`'s `Context` does for a binary.
pub(crate) trait Context<T> {
    /// `what: the error`.
    fn context(self, what: impl Display) -> Result<T>;
    /// `what(): the error`, the message made only when there is an error.
    fn with_context<W: Display>(self, what: impl FnOnce() -> W) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|err| Error::Invalid(format!("{what}: {}", err.into())))
    }

    fn with_context<W: Display>(self, what: impl FnOnce() -> W) -> Result<T> {
        self.map_err(|err| Error::Invalid(format!("{}: {}", what(), err.into())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.ok_or_else(|| Error::invalid(what))
    }

    fn with_context<W: Display>(self, what: impl FnOnce() -> W) -> Result<T> {
        self.ok_or_else(|| Error::invalid(what()))
    }
}

/// Errors of the crates below become [`Error::Invalid`] with their whole chain.
macro_rules! from_errors {
    ($($source:ty),* $(,)?) => {$(
        impl From<$source> for Error {
            fn from(err: $source) -> Self {
                Self::Invalid(chain(&err))
            }
        }
    )*};
}

from_errors!(
    std::io::Error,
    serde_json::Error,
    toml::de::Error,
    std::fmt::Error,
    std::num::ParseIntError,
    agent_core::ModelError,
    agent_core::schema::StrictError,
    agent_exec::Error,
    agent_checkpoints::CheckpointError,
    agent_exec::CheckpointFailed,
    agent_exec::hooks::HookError,
    agent_exec::network::BadPin,
    agent_exec::sandbox::SandboxError,
    agent_exec::sandbox::UnknownPolicy,
    agent_lsp::LspError,
    agent_mcp::ConfigError,
    opentelemetry_otlp::ExporterBuildError,
    reqwest::Error,
);

/// Returns early with an [`Error::Invalid`] made from a format string.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::Error::Invalid(format!($($arg)*)))
    };
}

/// An [`Error::Invalid`] made from a format string.
macro_rules! invalid {
    ($($arg:tt)*) => {
        $crate::Error::Invalid(format!($($arg)*))
    };
}

pub(crate) use {bail, invalid};
