//! `FileChange`: what a call of write_file or edit_file would do to a file, worked out without
//! writing it, so a front end can show the change before it is approved.

use std::path::PathBuf;

/// The text of one file before and after a call, as the tool would write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file, resolved inside the workspace as the call would resolve it.
    pub path: PathBuf,
    /// The path as the tools show it (relative to the workspace root when inside it).
    pub shown: String,
    /// The text now; `None` when the file does not exist yet.
    pub before: Option<String>,
    /// The text after the call, with the line endings the tool would write.
    pub after: String,
}
