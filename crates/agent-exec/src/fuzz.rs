//! Entry points for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): a transcript loaded
//! from bytes for resuming, and the shell analyzer the permission rules rely on.

use std::path::Path;

use crate::{Loaded, Result, Transcript, permission::shell};

/// [`Transcript::load`] of a transcript file holding `bytes`.
pub fn load_transcript(bytes: &[u8]) -> Result<Loaded> {
    Transcript::load_bytes(bytes, Path::new("fuzz.jsonl"))
}

/// The shell analyzer's reading of `command`: the segments it cut (as their debug text), or why
/// it could not, and whether that reason is the parser's caught panic.
pub fn analyze_command(command: &str) -> Analysis {
    match shell::analyze(command) {
        Ok(segments) => Analysis::Segments(segments.iter().map(|s| format!("{s:?}")).collect()),
        Err(shell::AnalysisError::ParserPanicked) => Analysis::ParserPanicked,
        Err(error) => Analysis::Refused(error.to_string()),
    }
}

/// What [`analyze_command`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Analysis {
    /// The segments, each as its debug text.
    Segments(Vec<String>),
    /// The line was refused (too long, too deep, a syntax error, empty), and why.
    Refused(String),
    /// The shell parser panicked (caught; the line is refused).
    ParserPanicked,
}
