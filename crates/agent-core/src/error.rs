//! Tool failures the model reads: a stable code ([`ToolErrorKind`]) and a message.

use std::{borrow::Cow, fmt};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::schema::ArgsError;

/// Why a tool call failed, as a stable snake_case code the model and the logs can rely on.
///
/// Codes never change once shipped: transcripts, tests and users' rules match on them.
///
/// A kind serializes as its code alone (`"timeout"`), so transcripts, the wire and `--json`
/// carry the same string they always did. Reading a code back gives the named kind when there is
/// one, and [`ToolErrorKind::Other`] with the code otherwise (a tool's own code, or one from an
/// older transcript); `Other("timeout")` therefore reads back as [`ToolErrorKind::Timeout`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// A tool-specific code not listed above; must be snake_case. Tools name theirs with
    /// [`ToolErrorKind::other`]; a code read back from a transcript is owned.
    Other(Cow<'static, str>),
}

/// Every named kind, for reading a code back.
const NAMED: [ToolErrorKind; 15] = [
    ToolErrorKind::UnknownTool,
    ToolErrorKind::InvalidJson,
    ToolErrorKind::InvalidArguments,
    ToolErrorKind::PermissionDenied,
    ToolErrorKind::Rejected,
    ToolErrorKind::Timeout,
    ToolErrorKind::Cancelled,
    ToolErrorKind::ToolError,
    ToolErrorKind::NotFound,
    ToolErrorKind::AmbiguousMatch,
    ToolErrorKind::StaleFile,
    ToolErrorKind::BinaryFile,
    ToolErrorKind::OutsideWorkspace,
    ToolErrorKind::SandboxUnavailable,
    ToolErrorKind::NotConfigured,
];

impl ToolErrorKind {
    /// A tool-specific code (snake_case), as [`ToolErrorKind::Other`].
    pub const fn other(code: &'static str) -> Self {
        ToolErrorKind::Other(Cow::Borrowed(code))
    }

    /// The kind a code names: a named kind, or [`ToolErrorKind::Other`] with the code.
    pub fn from_code(code: &str) -> Self {
        Self::named(code).unwrap_or_else(|| ToolErrorKind::Other(Cow::Owned(code.to_owned())))
    }

    /// The named kind whose code is `code`, if there is one.
    fn named(code: &str) -> Option<Self> {
        NAMED.iter().find(|kind| kind.as_str() == code).cloned()
    }

    /// The stable snake_case code.
    pub fn as_str(&self) -> &str {
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

impl Serialize for ToolErrorKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolErrorKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        Ok(Self::named(&code).unwrap_or(ToolErrorKind::Other(Cow::Owned(code))))
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

    #[test]
    fn a_kind_is_its_code_on_the_wire_and_reads_back() {
        for kind in NAMED.into_iter().chain([ToolErrorKind::other("no_match")]) {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<ToolErrorKind>(&json).unwrap(), kind);
            assert_eq!(ToolErrorKind::from_code(kind.as_str()), kind);
        }
        // A code this version does not name, from an older or newer transcript, is kept as is.
        let unknown: ToolErrorKind = serde_json::from_str(r#""gone_away""#).unwrap();
        assert_eq!(unknown, ToolErrorKind::Other(Cow::Owned("gone_away".to_owned())));
        assert_eq!(serde_json::to_string(&unknown).unwrap(), r#""gone_away""#);
        // A tool's own code that spells a named one reads back as the named one.
        let named: ToolErrorKind =
            serde_json::from_str(&serde_json::to_string(&ToolErrorKind::other("timeout")).unwrap())
                .unwrap();
        assert_eq!(named, ToolErrorKind::Timeout);
    }

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
            ToolErrorKind::other("no_match"),
            "line \"a\"\nline b",
            r#"{"ok":false,"error":"no_match","message":"line \"a\"\nline b"}"#,
        );
    }
}
