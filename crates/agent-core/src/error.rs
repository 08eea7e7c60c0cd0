//! Error kinds: tool failures the model reads, and the crate's own `Error`.

use std::fmt;

use serde::Serialize;

use crate::schema::{ArgsError, InvalidSchema, StrictError};

/// The errors of this crate's fallible functions.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A schema has no OpenAI strict form.
    #[error(transparent)]
    Strict(#[from] StrictError),
    /// Tool arguments failed to parse or validate.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// A JSON Schema does not compile.
    #[error(transparent)]
    Schema(#[from] InvalidSchema),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a tool call failed, as a stable snake_case code the model and the logs can rely on.
///
/// Codes never change once shipped: transcripts, tests and users' rules match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolErrorKind {
    /// No tool has the requested name or alias.
    UnknownTool,
    /// The argument string is not valid JSON, or not a JSON object.
    InvalidJson,
    /// The arguments are JSON but do not fit the tool's schema.
    InvalidArguments,
    /// A permission rule or mode denied the call.
    PermissionDenied,
    /// The user was asked and said no.
    Rejected,
    /// The call ran past its time limit.
    Timeout,
    /// The call was cancelled (by the user or the harness).
    Cancelled,
    /// The tool failed for another reason (including a panic).
    ToolError,
    /// A file or directory does not exist.
    NotFound,
    /// A search-and-replace matched more than one place.
    AmbiguousMatch,
    /// A file changed since the model last read it.
    StaleFile,
    /// A file is binary and was not read or edited as text.
    BinaryFile,
    /// A path resolves outside the workspace.
    OutsideWorkspace,
    /// The OS sandbox cannot enforce the requested policy here.
    SandboxUnavailable,
    /// A feature the call needs is not configured (for example a web search provider).
    NotConfigured,
    /// A tool-specific code not listed above; must be snake_case.
    Other(&'static str),
}

impl ToolErrorKind {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::UnknownTool => "unknown_tool",
            ToolErrorKind::InvalidJson => "invalid_json",
            ToolErrorKind::InvalidArguments => "invalid_arguments",
            ToolErrorKind::PermissionDenied => "permission_denied",
            ToolErrorKind::Rejected => "rejected",
            ToolErrorKind::Timeout => "timeout",
            ToolErrorKind::Cancelled => "cancelled",
            ToolErrorKind::ToolError => "tool_error",
            ToolErrorKind::NotFound => "not_found",
            ToolErrorKind::AmbiguousMatch => "ambiguous_match",
            ToolErrorKind::StaleFile => "stale_file",
            ToolErrorKind::BinaryFile => "binary_file",
            ToolErrorKind::OutsideWorkspace => "outside_workspace",
            ToolErrorKind::SandboxUnavailable => "sandbox_unavailable",
            ToolErrorKind::NotConfigured => "not_configured",
            ToolErrorKind::Other(code) => code,
        }
    }
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed tool call: a value the model reads, never a failure of the harness.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ToolError {
    /// The stable code.
    pub kind: ToolErrorKind,
    /// What was wrong and what to do next, written for the model.
    pub message: String,
}

impl ToolError {
    /// A new error of `kind`.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    /// The observation the model reads:
    /// `{"ok":false,"error":"<code>","message":"<what was wrong; what to do next>"}`.
    pub fn observation(&self) -> String {
        #[derive(Serialize)]
        struct Observation<'a> {
            ok: bool,
            error: &'a str,
            message: &'a str,
        }
        let observation =
            Observation { ok: false, error: self.kind.as_str(), message: &self.message };
        // Serializing a struct of strings and a bool cannot fail; the fallback keeps the contract anyway.
        serde_json::to_string(&observation).unwrap_or_else(|_| {
            format!(r#"{{"ok":false,"error":"{}","message":"unprintable message"}}"#, self.kind)
        })
    }
}

impl From<ArgsError> for ToolError {
    fn from(err: ArgsError) -> Self {
        let kind = match err {
            ArgsError::Json { .. } => ToolErrorKind::InvalidJson,
            ArgsError::Invalid { .. } => ToolErrorKind::InvalidArguments,
        };
        ToolError::new(kind, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(kind: ToolErrorKind, message: &str, expect: &str) {
        assert_eq!(ToolError::new(kind, message).observation(), expect);
    }

    #[test]
    fn observation_is_the_exact_contract() {
        check(
            ToolErrorKind::Timeout,
            "timed out after 2s",
            r#"{"ok":false,"error":"timeout","message":"timed out after 2s"}"#,
        );
    }

    #[test]
    fn observation_escapes_quotes_and_newlines() {
        check(
            ToolErrorKind::Other("no_match"),
            "line \"a\"\nline b",
            r#"{"ok":false,"error":"no_match","message":"line \"a\"\nline b"}"#,
        );
    }
}
