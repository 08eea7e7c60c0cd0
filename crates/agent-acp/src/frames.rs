//! Reading the client's frames, one line each, never holding more than [`MAX_FRAME_BYTES`] of
//! one: a longer line is read to its end without being kept, and stands in the stream as a
//! short frame that gets the client a JSON-RPC error for it (docs/acp.md).

use std::io::BufRead;

/// The longest frame kept: far above any real message (a prompt with embedded files, a file a
/// client's `fs/read_text_file` returns), far below what would strain the machine.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// The method of the stand-in for a request too large to read; [`crate::serve`] answers it
/// with an invalid-request error naming the sizes.
pub(crate) const TOO_LARGE_METHOD: &str = "_agent/frame_too_large";

/// The stand-in's parameters: the frame's size and the limit.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct TooLarge {
    pub(crate) bytes: u64,
    pub(crate) limit: u64,
}

/// The next frame from `reader` (without its line ending), a stand-in for one over
/// [`MAX_FRAME_BYTES`], or `None` at the end of the input. A frame that is not UTF-8 is passed
/// on with its bad bytes replaced, so the client gets a parse error for it and the connection
/// lives on.
pub fn read_frame(reader: &mut impl BufRead) -> std::io::Result<Option<String>> {
    read_limited(reader, MAX_FRAME_BYTES)
}

pub(crate) fn read_limited(
    reader: &mut impl BufRead,
    limit: usize,
) -> std::io::Result<Option<String>> {
    loop {
        match read_one(reader, limit)? {
            Read::Frame(frame) => return Ok(Some(frame)),
            Read::End => return Ok(None),
            Read::Dropped(bytes) => tracing::warn!(
                "acp: a notification of {bytes} bytes, over the limit of {limit}, was dropped"
            ),
        }
    }
}

/// What one line of input came to.
enum Read {
    Frame(String),
    /// A notification over the limit: nothing answers it.
    Dropped(usize),
    End,
}

fn read_one(reader: &mut impl BufRead, limit: usize) -> std::io::Result<Read> {
    let mut line = Vec::new();
    // Once the frame passes the limit, only its outline is kept: whether it names an id and a
    // method at its top level, which decide how it is answered.
    let mut outline: Option<Outline> = None;
    let mut bytes = 0usize;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buffer.is_empty() {
            if bytes == 0 && outline.is_none() {
                return Ok(Read::End);
            }
            break;
        }
        let (chunk, ends) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        if let Some(outline) = &mut outline {
            outline.feed(chunk);
        } else if line.len() + chunk.len() > limit {
            let mut fresh = Outline::default();
            fresh.feed(&line);
            fresh.feed(chunk);
            line = Vec::new();
            outline = Some(fresh);
        } else {
            line.extend_from_slice(chunk);
        }
        bytes = bytes.saturating_add(chunk.len());
        let used = chunk.len() + usize::from(ends);
        reader.consume(used);
        if ends {
            break;
        }
    }
    match outline {
        Some(outline) if outline.whole() && !outline.has_id && outline.method => {
            Ok(Read::Dropped(bytes))
        }
        Some(outline) => Ok(Read::Frame(stand_in(&outline, bytes, limit))),
        None => {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            Ok(Read::Frame(
                String::from_utf8(line)
                    .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned()),
            ))
        }
    }
}

/// The frame that takes the place of one over the limit. A request becomes a request of ours
/// with its id, answered with an error; a response (to a request of ours) becomes an error
/// response with its id, so what waits for it fails instead of waiting for ever; anything else
/// becomes a line that is not JSON, which the client gets a parse error for. (A notification,
/// which expects no answer, is dropped before this.)
fn stand_in(outline: &Outline, bytes: usize, limit: usize) -> String {
    let message = format!("the frame is {bytes} bytes, over the limit of {limit}; it was not read");
    let id = outline.id.as_ref().filter(|_| outline.whole());
    match (id, outline.method) {
        (Some(id), true) => serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": TOO_LARGE_METHOD,
            "params": {"bytes": bytes, "limit": limit},
        })
        .to_string(),
        (Some(id), false) => {
            let code = agent_client_protocol::ErrorCode::INVALID_REQUEST;
            let error = agent_client_protocol::Error::new(code, message);
            serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
        }
        _ => message,
    }
}

/// What a frame says at its top level, learned byte by byte without keeping it: its `id` (a
/// number or a string of a sensible length) and whether it names a `method`.
#[derive(Debug, Default)]
struct Outline {
    /// Nesting: 0 before the object opens, 1 inside it, deeper inside its values.
    depth: u32,
    /// The frame is not one object (or something after it is not white space).
    broken: bool,
    /// The object closed.
    complete: bool,
    in_string: bool,
    escaped: bool,
    /// At depth 1: after a key's colon, until the next comma.
    in_value: bool,
    /// The key being read (its first bytes) and the key whose value is being read.
    key: Vec<u8>,
    value_of: Vec<u8>,
    /// The `id` value's text, while it is read and once it is whole.
    id_text: Vec<u8>,
    id: Option<serde_json::Value>,
    /// It names an `id` (usable or not) and a `method`.
    has_id: bool,
    method: bool,
}

/// The longest `id` kept, and the longest key compared.
const MAX_ID_BYTES: usize = 128;
const MAX_KEY_BYTES: usize = 8;

impl Outline {
    /// The frame was one object and nothing else.
    fn whole(&self) -> bool {
        self.complete && !self.broken
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&byte, rest)) = bytes.split_first() {
            if self.broken {
                return;
            }
            // Inside a string that is neither a top-level key nor the id (where a frame's bulk
            // is), only a quote or a backslash matters: skip to the next one.
            let kept = self.depth == 1 && (!self.in_value || self.value_of == b"id");
            if self.in_string && !self.escaped && !kept {
                let plain = bytes.iter().position(|&b| b == b'"' || b == b'\\');
                let plain = plain.unwrap_or(bytes.len());
                if plain > 0 {
                    bytes = &bytes[plain..];
                    continue;
                }
            }
            self.byte(byte);
            bytes = rest;
        }
    }

    fn byte(&mut self, byte: u8) {
        let top_value = self.depth == 1 && self.in_value && self.value_of == b"id";
        if self.in_string {
            if top_value {
                self.keep_id(byte);
            } else if self.depth == 1 && !self.in_value && self.key.len() <= MAX_KEY_BYTES {
                self.key.push(byte);
            }
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if self.depth == 1 && !self.in_value {
                    self.key.pop();
                }
            }
            return;
        }
        match (self.depth, byte) {
            (_, b' ' | b'\t' | b'\r' | b'\n') => {}
            (0, b'{') if !self.complete => self.depth = 1,
            (0, _) => self.broken = true,
            (1, b'"') if !self.in_value => {
                self.key.clear();
                self.in_string = true;
            }
            (1, b':') if !self.in_value => {
                self.in_value = true;
                self.value_of = std::mem::take(&mut self.key);
                self.method |= self.value_of == b"method";
                self.has_id |= self.value_of == b"id";
            }
            (1, b',') => self.end_value(),
            (1, b'}') => {
                self.end_value();
                self.depth = 0;
                self.complete = true;
            }
            (_, b'"') => {
                if top_value {
                    self.keep_id(byte);
                }
                self.in_string = true;
            }
            (_, b'{' | b'[') => self.depth += 1,
            (_, b'}' | b']') => self.depth -= 1,
            _ if top_value => self.keep_id(byte),
            _ => {}
        }
    }

    fn keep_id(&mut self, byte: u8) {
        if self.id_text.len() <= MAX_ID_BYTES {
            self.id_text.push(byte);
        }
    }

    fn end_value(&mut self) {
        if self.value_of == b"id" && self.id_text.len() <= MAX_ID_BYTES {
            self.id = serde_json::from_slice(&self.id_text)
                .ok()
                .filter(|id: &serde_json::Value| id.is_number() || id.is_string());
        }
        self.id_text.clear();
        self.value_of.clear();
        self.in_value = false;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The frames `input` reads as with a limit of 64 bytes, through a small buffer so frames
    /// arrive in pieces; a stand-in's size is checked against the frame it replaced.
    #[track_caller]
    fn check(input: &[String], expect: &[Value]) {
        let text: String = input.iter().map(|frame| format!("{frame}\n")).collect();
        let mut reader = std::io::BufReader::with_capacity(7, text.as_bytes());
        let mut frames = Vec::new();
        while let Some(frame) = read_limited(&mut reader, 64).unwrap() {
            frames.push(serde_json::from_str(&frame).unwrap_or(Value::String(frame)));
        }
        assert_eq!(frames, expect);
    }

    fn request(id: Value, bytes: usize) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": TOO_LARGE_METHOD,
               "params": {"bytes": bytes, "limit": 64}})
    }

    fn named(bytes: usize) -> String {
        format!("the frame is {bytes} bytes, over the limit of 64; it was not read")
    }

    fn big() -> String {
        "x".repeat(200)
    }

    #[test]
    fn frames_under_the_limit_pass_whole() {
        let lines = ["{\"a\":1}\r".to_owned(), "{\"b\":2}".to_owned()];
        check(&lines, &[json!({"a": 1}), json!({"b": 2})]);
        check(&[], &[]);
        let mut reader = "{\"a\":1}".as_bytes();
        assert_eq!(read_limited(&mut reader, 64).unwrap().as_deref(), Some("{\"a\":1}"));
        let mut reader = b"\xff{}".as_slice();
        assert_eq!(read_limited(&mut reader, 64).unwrap().as_deref(), Some("\u{fffd}{}"));
    }

    #[test]
    fn a_request_over_the_limit_keeps_its_id_wherever_it_is() {
        let first =
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"x","params":{{"t":"{}"}}}}"#, big());
        // Braces and an `id` inside strings and nested values are not the frame's.
        let last =
            format!(r#"{{"params":{{"id":1,"t":"}}\"{}"}},"method":"x","id":"a\"b"}}"#, big());
        let (a, b) = (first.len(), last.len());
        check(
            &[first, last, "{}".to_owned()],
            &[request(json!(7), a), request(json!("a\"b"), b), json!({})],
        );
    }

    #[test]
    fn a_response_over_the_limit_becomes_an_error_with_its_id() {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":"{}"}}}}"#, big());
        let error = json!({"jsonrpc": "2.0", "id": 3,
                           "error": {"code": -32600, "message": named(frame.len())}});
        check(&[frame], &[error]);
    }

    #[test]
    fn a_notification_over_the_limit_is_dropped_and_anything_else_is_named() {
        let notification = format!(r#"{{"method":"session/cancel","params":{{"t":"{}"}}}}"#, big());
        let unclosed = format!(r#"{{"id":1,"method":"x","params":"{}"#, big());
        let trailing = format!(r#"{{"id":1,"method":"x","params":"{}"}} x"#, big());
        let huge_id = format!(r#"{{"id":"{}","method":"x"}}"#, big());
        let sizes = [big().len(), unclosed.len(), trailing.len(), huge_id.len()];
        check(
            &[notification, big(), unclosed, trailing, huge_id, "{}".to_owned()],
            &[
                json!(named(sizes[0])),
                json!(named(sizes[1])),
                json!(named(sizes[2])),
                json!(named(sizes[3])),
                json!({}),
            ],
        );
    }
}
