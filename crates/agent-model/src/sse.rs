//! A linear, bounded server-sent-events decoder: bytes in, one event out at a time.
//!
//! It replaces eventsource-stream (under async-openai), whose parser re-scans its whole buffer for
//! every chunk, so one large event cost time quadratic in its size (a 20 MB event took 68 s of
//! CPU). Here every byte is looked at once: a line is split where it ends, a line that spans
//! chunks is copied once into a buffer, and one event may hold at most `max_event_bytes` (the
//! line being read included) before decoding fails. Events are handed out one at a time and the
//! next chunk is taken only once the current one is used up, so the decoder never holds more than
//! one chunk and one event, whatever the server sends.
//!
//! The format is the WHATWG one: lines end in CR, LF or CRLF; `data:` lines join with LF; a
//! blank line ends an event; lines starting with `:` are comments; `event:` names the event; `id:`
//! and `retry:` are read and ignored, as are unknown fields; one space after the colon is dropped;
//! a UTF-8 byte order mark at the very start is skipped; an event not ended by a blank line when
//! the body ends is dropped.

use bytes::Bytes;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event:` field, empty when the event had none.
    pub(crate) name: String,
    /// The `data:` lines, joined with LF.
    pub(crate) data: Vec<u8>,
}

/// One event (with the line being read) grew past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge;

/// The decoder's state between chunks.
#[derive(Debug)]
pub(crate) struct Decoder {
    max_event_bytes: usize,
    chunk: Bytes,
    at: usize,
    /// The start of a line whose end is not in the chunks seen so far.
    line: Vec<u8>,
    data: Vec<u8>,
    name: Vec<u8>,
    /// The last line ended with CR, so an LF at the start of the next bytes ends nothing.
    after_cr: bool,
    /// Whether the first line was seen (the byte order mark is only skipped there).
    started: bool,
}

impl Decoder {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            chunk: Bytes::new(),
            at: 0,
            line: Vec::new(),
            data: Vec::new(),
            name: Vec::new(),
            after_cr: false,
            started: false,
        }
    }

    /// Whether the current chunk is used up, so [`Decoder::push`] may take the next one.
    pub(crate) fn needs_input(&self) -> bool {
        self.at >= self.chunk.len()
    }

    /// Takes the next chunk of the body. Call only when [`Decoder::needs_input`].
    pub(crate) fn push(&mut self, chunk: Bytes) {
        debug_assert!(self.needs_input(), "a chunk was pushed before the last one was decoded");
        self.chunk = chunk;
        self.at = 0;
    }

    /// The next complete event in what was pushed, or `None` when more input is needed.
    pub(crate) fn next_event(&mut self) -> Result<Option<Event>, EventTooLarge> {
        loop {
            if self.needs_input() {
                return Ok(None);
            }
            let rest = &self.chunk[self.at..];
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    self.at += 1;
                    continue;
                }
            }
            let Some(end) = rest.iter().position(|&byte| byte == b'\n' || byte == b'\r') else {
                self.check(self.line.len() + rest.len())?;
                self.line.extend_from_slice(rest);
                self.at = self.chunk.len();
                return Ok(None);
            };
            self.check(self.line.len() + end)?;
            self.after_cr = rest[end] == b'\r';
            let start = self.at;
            self.at += end + 1;
            let event = if self.line.is_empty() {
                // The usual case: the whole line is in this chunk and is read in place.
                let chunk = self.chunk.clone();
                self.line_ended(&chunk[start..start + end])
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&self.chunk[start..start + end]);
                let event = self.line_ended(&line);
                // The buffer is kept for the next long line, emptied.
                line.clear();
                self.line = line;
                event
            };
            if event.is_some() {
                return Ok(event);
            }
        }
    }

    /// Fails when an event would hold more than the limit with `pending` more bytes.
    fn check(&self, pending: usize) -> Result<(), EventTooLarge> {
        match self.data.len().checked_add(pending) {
            Some(total) if total <= self.max_event_bytes => Ok(()),
            _ => Err(EventTooLarge),
        }
    }

    /// Interprets one complete line; a blank line dispatches the event it ends.
    fn line_ended(&mut self, mut line: &[u8]) -> Option<Event> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None;
        }
        let (field, value) = match line.iter().position(|&byte| byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.name.clear();
                self.name.extend_from_slice(value);
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let name = String::from_utf8_lossy(&self.name).into_owned();
        self.name.clear();
        if self.data.is_empty() {
            return None;
        }
        self.data.pop();
        Some(Event { name, data: std::mem::take(&mut self.data) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `chunks` in order and renders what came out, one line per event (`name|data`,
    /// with newlines shown as `\n`), or the error.
    fn decode(chunks: &[&[u8]], max: usize) -> String {
        let mut decoder = Decoder::new(max);
        let mut out = String::new();
        for chunk in chunks {
            decoder.push(Bytes::copy_from_slice(chunk));
            loop {
                match decoder.next_event() {
                    Ok(Some(event)) => {
                        let data = String::from_utf8_lossy(&event.data).replace('\n', "\\n");
                        out.push_str(&format!("{}|{data}\n", event.name));
                    }
                    Ok(None) => break,
                    Err(EventTooLarge) => return out + "error: event too large\n",
                }
            }
        }
        out
    }

    #[track_caller]
    fn check(chunks: &[&[u8]], expect: &str) {
        assert_eq!(decode(chunks, 1024), expect);
    }

    #[test]
    fn line_endings_lf_cr_and_crlf_are_all_line_ends() {
        check(&[b"data: a\n\ndata: b\r\rdata: c\r\n\r\n"], "|a\n|b\n|c\n");
    }

    #[test]
    fn a_crlf_split_between_chunks_ends_one_line() {
        check(&[b"data: a\r", b"\n\r", b"\ndata: b\r", b"\r"], "|a\n|b\n");
    }

    #[test]
    fn data_lines_join_with_newlines_and_one_space_is_dropped() {
        check(&[b"data: one\ndata:two\ndata:  three\ndata\n\n"], "|one\\ntwo\\n three\\n\n");
    }

    #[test]
    fn comments_ids_retries_and_unknown_fields_are_ignored() {
        check(&[b": keepalive\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n:\n\n"], "|x\n");
    }

    #[test]
    fn an_event_name_is_kept_and_reset_after_dispatch() {
        check(
            &[b"event: response.completed\ndata: {}\n\ndata: next\n\n"],
            "response.completed|{}\n|next\n",
        );
    }

    #[test]
    fn an_event_with_no_data_is_not_dispatched() {
        check(&[b"event: ping\n\ndata: a\n\n"], "|a\n");
    }

    #[test]
    fn lines_split_anywhere_across_chunks_decode_the_same() {
        let body: &[u8] = b"event: e\ndata: {\"a\":1}\n\ndata: [DONE]\n\n";
        let whole = decode(&[body], 1024);
        for split in 1..body.len() {
            let (head, tail) = body.split_at(split);
            assert_eq!(decode(&[head, tail], 1024), whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes, 1024), whole);
        insta::assert_snapshot!(whole, @r#"
        e|{"a":1}
        |[DONE]
        "#);
    }

    #[test]
    fn done_is_an_ordinary_event_left_to_the_caller() {
        check(&[b"data: [DONE]\n\n"], "|[DONE]\n");
    }

    #[test]
    fn a_byte_order_mark_is_skipped_only_at_the_start() {
        check(&[b"\xEF\xBB", b"\xBFdata: a\n\n"], "|a\n");
        check(&[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"], "|a\n");
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_not_dispatched() {
        check(&[b"data: a\n\ndata: cut"], "|a\n");
        check(&[b"data: a\n\ndata: cut\n"], "|a\n");
    }

    #[test]
    fn an_event_over_the_limit_fails_whether_in_one_line_or_many() {
        // The limit counts the bytes of the event's lines as they arrive, field names included.
        let mut decoder = Decoder::new(14);
        decoder.push(Bytes::from_static(b"data: 12345678\n\n"));
        assert_eq!(
            decoder.next_event(),
            Ok(Some(Event { name: String::new(), data: b"12345678".to_vec() }))
        );
        insta::assert_snapshot!(decode(&[b"data: 1234", b"56789"], 8), @"error: event too large");
        insta::assert_snapshot!(decode(&[b"data: 1234\ndata: 5678\n\n"], 12), @"error: event too large");
        insta::assert_snapshot!(decode(&[b"data: a\n\n", b"0123456789"], 8), @r"
        |a
        error: event too large
        ");
    }

    #[test]
    fn comments_alone_never_grow_an_event() {
        let keepalives = b": keepalive\n".repeat(1000);
        assert_eq!(decode(&[&keepalives, b"data: a\n\n"], 64), "|a\n");
    }
}
