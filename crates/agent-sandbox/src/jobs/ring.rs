//! The last bytes of a job's output, addressed by their offset in the whole stream.

use std::collections::VecDeque;

/// Keeps the last `cap` bytes written; offsets count every byte ever written.
#[derive(Debug)]
pub(crate) struct Ring {
    cap: usize,
    bytes: VecDeque<u8>,
    total: u64,
}

impl Ring {
    pub(crate) fn new(cap: usize) -> Self {
        Self { cap, bytes: VecDeque::new(), total: 0 }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let bytes = &bytes[bytes.len().saturating_sub(self.cap)..];
        let excess = (self.bytes.len() + bytes.len()).saturating_sub(self.cap);
        self.bytes.drain(..excess);
        self.bytes.extend(bytes);
    }

    /// Bytes written so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The bytes from offset `from` on, and how many bytes after `from` were already dropped.
    pub(crate) fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let start = self.total - self.bytes.len() as u64;
        let skipped = start.saturating_sub(from);
        let skip = usize::try_from(from.saturating_sub(start)).unwrap_or(usize::MAX);
        (self.bytes.iter().skip(skip).copied().collect(), skipped)
    }

    /// The last `lines` lines (at most `max_bytes` bytes of them).
    pub(crate) fn last_lines(&self, lines: usize, max_bytes: usize) -> String {
        let from = self.bytes.len().saturating_sub(max_bytes);
        let tail: Vec<u8> = self.bytes.iter().skip(from).copied().collect();
        let text = String::from_utf8_lossy(&tail);
        let text = text.trim_end();
        let kept: Vec<&str> = text.lines().rev().take(lines).collect();
        kept.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(cap: usize, chunks: &[&str], from: u64, expect: &str, skipped: u64) {
        let mut ring = Ring::new(cap);
        for chunk in chunks {
            ring.push(chunk.as_bytes());
        }
        let (bytes, lost) = ring.since(from);
        assert_eq!((String::from_utf8(bytes).unwrap().as_str(), lost), (expect, skipped));
    }

    #[test]
    fn keeps_the_last_bytes_by_offset() {
        check(4, &["ab", "cd"], 0, "abcd", 0);
        check(4, &["ab", "cd"], 3, "d", 0);
        check(4, &["abc", "def"], 0, "cdef", 2);
        check(4, &["abc", "def"], 4, "ef", 0);
        check(4, &["abcdefgh"], 1, "efgh", 3);
        check(4, &["ab"], 2, "", 0);
    }

    #[test]
    fn last_lines() {
        let mut ring = Ring::new(100);
        ring.push(b"one\ntwo\nthree\n");
        assert_eq!(ring.last_lines(2, 100), "two\nthree");
        assert_eq!(ring.last_lines(5, 6), "three");
    }
}
