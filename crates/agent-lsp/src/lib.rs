//! Diagnostics after edits, from real language servers: started on demand from a per-language
//! table, run under the OS sandbox with process and memory limits, restarted with backoff and
//! turned off after repeated failures; each edit reports only the errors it introduced.
//!
//! [`LspSession`] is the session's set of servers and implements [`agent_core::EditObserver`],
//! the seam the edit tools call after they write; [`Diagnostics`] is the read-only tool for the
//! whole list. The protocol types come from `ls-types`, the framing is a tokio-util codec
//! (`codec`); see `docs/lsp.md`.

#![deny(missing_docs)]

mod codec;
mod config;
mod diff;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
mod report;
mod server;
mod session;
mod tool;
mod watch;

pub use crate::{
    config::{LspConfig, ServerConfig, TYPESCRIPT_SETTLE, defaults},
    diff::{Delta, Diag, Severity, delta},
    session::LspSession,
    tool::{Diagnostics, DiagnosticsInput},
};

/// Why a language server could not serve a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LspError {
    /// It could not be started or initialised.
    #[error("the language server did not start: {0}")]
    Start(String),
    /// It exited.
    #[error("the language server exited")]
    Gone,
    /// It answered a request with an error.
    #[error("the language server answered with an error: {0}")]
    Answer(String),
    /// The language is off for this session; `notice` is set the first time this is said.
    #[error("{reason}")]
    Off {
        /// Whether this is the first time (the one notice).
        notice: bool,
        /// What happened.
        reason: String,
    },
    /// No configured server takes the file.
    #[error("no language server is configured for this file")]
    NoServer,
    /// The server did not answer in time.
    #[error("the language server has not answered yet")]
    Pending,
}
