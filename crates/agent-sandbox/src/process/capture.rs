//! The output a foreground command keeps: its head and its tail, the middle counted and dropped.

use std::collections::VecDeque;

/// Output kept as a head and a tail of at most `half` bytes each.
#[derive(Debug)]
pub(crate) struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Capture {
    pub(crate) fn new(half: usize) -> Self {
        Self { half, head: Vec::new(), tail: VecDeque::new(), dropped: 0 }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half.saturating_sub(self.head.len());
        let now = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..now]);
        bytes = &bytes[now..];
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.half);
        self.tail.drain(..excess);
        self.dropped += excess as u64;
    }

    pub(crate) fn finish(&mut self) -> (String, u64) {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[… {} bytes dropped …]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(half: usize, chunks: &[&str], expect: &str, dropped: u64) {
        let mut capture = Capture::new(half);
        for chunk in chunks {
            capture.push(chunk.as_bytes());
        }
        assert_eq!(capture.finish(), (expect.to_owned(), dropped));
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        check(4, &["abc"], "abc", 0);
        check(4, &["abcd", "efgh"], "abcdefgh", 0);
        check(2, &["abcdef"], "ab\n[… 2 bytes dropped …]\nef", 2);
        check(2, &["a", "b", "c", "d", "e", "f", "g"], "ab\n[… 3 bytes dropped …]\nfg", 3);
    }
}
