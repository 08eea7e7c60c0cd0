//! The crate's `Error`: failures of the harness itself, never of a tool call.
//!
//! A tool call that fails is a value the model reads (see [`crate::Outcome`]); an `Error` means the
//! harness was set up wrongly (two tools with one name, a rule that does not parse, a workspace root
//! that does not exist) and the caller must fix its configuration.

use std::path::PathBuf;

/// The errors of this crate's fallible functions.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tool's name or alias is already taken by another registered tool.
    #[error(
        "tool `{new}` cannot be registered: the name `{name}` is already used by tool `{existing}`"
    )]
    NameTaken {
        /// The tool being registered.
        new: String,
        /// The clashing name or alias.
        name: String,
        /// The tool that already owns `name`.
        existing: String,
    },
    /// A tool list names a tool that is not there.
    #[error("no tool named `{name}`; the tools are: {known}")]
    UnknownTool {
        /// The name as given.
        name: String,
        /// The names of the tools that are there, comma-separated.
        known: String,
    },
    /// A transcript file cannot be read or written.
    #[error("transcript {path}: {source}")]
    Transcript {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// Another process has the transcript open (its session is running there).
    #[error(
        "session {path} is open in another agent process ({}); only one process at a time may \
         write a session, so wait for that one to end or start a new session",
        match pid { Some(pid) => format!("pid {pid}"), None => "pid unknown".to_owned() }
    )]
    TranscriptBusy {
        /// The transcript file.
        path: PathBuf,
        /// The process holding it, as it recorded itself.
        pid: Option<u32>,
    },
    /// A line of a transcript file is not a transcript line.
    #[error("transcript {path}:{line}: {reason}")]
    TranscriptLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A JSON Schema given for a schema-only tool does not compile.
    #[error("tool `{tool}` has an invalid schema: {source}")]
    Schema {
        /// The tool name.
        tool: String,
        /// What the schema compiler reported.
        source: agent_core::schema::InvalidSchema,
    },
    /// A permission rule does not parse.
    #[error("invalid permission rule `{rule}`: {reason}")]
    Rule {
        /// The rule text as given.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A permission mode name is not one of the known modes.
    #[error("unknown permission mode `{0}`; use default, accept-edits, plan, dont-ask or bypass")]
    Mode(String),
    /// The workspace root cannot be used.
    #[error("workspace root {path} cannot be used: {source}")]
    Workspace {
        /// The root as given.
        path: PathBuf,
        /// Why it cannot be canonicalized.
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
