//! Transcripts read on resume.

use agent_exec::fuzz::load_transcript;

use crate::cuts;

/// A transcript that loads whole, cut at any byte (as a crash mid-write leaves it), still loads:
/// at most its last line is dropped as torn, and none is when the cut falls after a newline.
pub(super) fn truncated(data: &[u8]) {
    let Ok(whole) = load_transcript(data) else { return };
    if !whole.torn_lines.is_empty() {
        return;
    }
    for at in cuts::points(data.len(), 64) {
        let prefix = &data[..at];
        let loaded = match load_transcript(prefix) {
            Ok(loaded) => loaded,
            Err(error) => panic!("cut at {at}: {error}"),
        };
        let last = prefix.split(|&byte| byte == b'\n').count();
        match loaded.torn_lines.as_slice() {
            [] => {}
            [torn] => {
                assert_eq!(*torn, last, "cut at {at}: a line before the last was dropped");
                assert!(!prefix.ends_with(b"\n"), "cut at {at}, after a newline: a line dropped");
            }
            more => panic!("cut at {at}: lines {more:?} dropped"),
        }
    }
}
