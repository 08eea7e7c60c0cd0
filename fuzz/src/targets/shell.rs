//! The shell analyzer that permission rules match commands against.

use agent_exec::fuzz::{Analysis, analyze_command};

/// The analysis never panics past its own guard, refuses what is longer than its 64 KiB, is the
/// same every time, and cuts no more segments than the line has bytes.
pub(super) fn analyze(data: &[u8]) {
    let command = String::from_utf8_lossy(data);
    let first = analyze_command(&command);
    assert_eq!(analyze_command(&command), first, "a second analysis differs");
    match &first {
        Analysis::Segments(segments) => {
            assert!(command.len() <= 64 * 1024, "a line over the cap was analysed");
            assert!(segments.len() <= command.len(), "{} segments", segments.len());
        }
        Analysis::Refused(_) | Analysis::ParserPanicked => {}
    }
}
