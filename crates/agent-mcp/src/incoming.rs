//! What a stdio server writes, read line by line before rmcp sees it, so that the two messages
//! rmcp would drop without a word are answered at once instead.
//!
//! rmcp discards a line longer than its 16 MiB cap, and serde_json refuses a message nested more
//! than 128 levels deep; either way the request it answered waits for its whole timeout, and a
//! `tools/list` answer with one deep schema loses every tool of the server. Here each line of the
//! server's stdout is scanned once, in linear time, with a small state machine that knows only
//! JSON's structure (strings, escapes, nesting) and the few members it looks for:
//!
//! - a line over [`LINE_CAP`] is not buffered past the cap; as soon as its top-level `id` is
//!   known, rmcp gets an error answer for that id naming the cap (code [`DROPPED_CODE`]);
//! - a line nested deeper than [`MAX_DEPTH`] that answers `tools/list` loses only the tools that
//!   are too deep (each recorded in [`Dropped`] for the server's report); any other such line
//!   becomes an error answer for its id;
//! - every other line passes unchanged.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

/// The longest line read: rmcp's own cap, so every line passed on is one rmcp reads.
pub(crate) const LINE_CAP: usize = 16 * 1024 * 1024;

/// The deepest nesting a message passed on may have: serde_json refuses more than 128 levels,
/// and rmcp's message types add a few of their own.
pub(crate) const MAX_DEPTH: usize = 120;

/// The JSON-RPC error code of an answer made here for a message that was dropped.
pub(crate) const DROPPED_CODE: i32 = -32_099;

/// The longest `id` or tool name kept from a line; a longer one is not looked at.
const SHORT: usize = 256;

/// A tool left out of a `tools/list` answer because its definition nests too deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DroppedTool {
    /// Its name on the server (`?` when it had none that could be read).
    pub(crate) name: String,
    /// How deep the whole message nested with it.
    pub(crate) depth: usize,
}

/// The tools dropped so far, shared with the server that reports them.
pub(crate) type Dropped = Arc<Mutex<Vec<DroppedTool>>>;

/// Copies the server's lines from `from` to `to` (rmcp's end), as the module says, until either
/// side closes.
pub(crate) async fn relay(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    dropped: Dropped,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, from);
    let mut line: Vec<u8> = Vec::new();
    // The scan of a line past the cap, whose bytes are no longer kept.
    let mut overlong: Option<Overlong> = None;
    loop {
        let (used, end) = {
            let Ok(chunk) = reader.fill_buf().await else { return };
            if chunk.is_empty() {
                // A last line without its newline is read as rmcp would read it.
                if overlong.is_none()
                    && !line.is_empty()
                    && let Some(mut out) = checked(line, &dropped)
                {
                    out.push(b'\n');
                    let _ = to.write_all(&out).await;
                    let _ = to.flush().await;
                }
                return;
            }
            let newline = chunk.iter().position(|&byte| byte == b'\n');
            let part = &chunk[..newline.unwrap_or(chunk.len())];
            match &mut overlong {
                Some(state) => state.feed(part),
                None if line.len() + part.len() > LINE_CAP => {
                    let mut state = Overlong::default();
                    state.feed(&line);
                    state.feed(part);
                    line = Vec::new();
                    overlong = Some(state);
                }
                None => line.extend_from_slice(part),
            }
            (newline.map_or(chunk.len(), |at| at + 1), newline.is_some())
        };
        reader.consume(used);
        // An answer for an overlong line goes out as soon as its id is known, not at its end.
        if let Some(state) = &mut overlong
            && let Some(mut answer) = state.answer()
        {
            answer.push(b'\n');
            if to.write_all(&answer).await.is_err() || to.flush().await.is_err() {
                return;
            }
        }
        if !end {
            continue;
        }
        let out = match overlong.take() {
            Some(state) => {
                if !state.answered {
                    tracing::warn!(
                        bytes = state.bytes,
                        "an MCP server sent a message over the line cap without an id; dropped"
                    );
                }
                None
            }
            None => checked(std::mem::take(&mut line), &dropped),
        };
        if let Some(mut out) = out {
            out.push(b'\n');
            if to.write_all(&out).await.is_err() || to.flush().await.is_err() {
                return;
            }
        }
    }
}

/// A line within the cap as it is passed on: unchanged, without its too-deep tools, as an error
/// answer, or not at all (a too-deep notification).
fn checked(line: Vec<u8>, dropped: &Dropped) -> Option<Vec<u8>> {
    let mut scan = Scan::default();
    scan.feed(&line);
    if scan.max_depth <= MAX_DEPTH {
        return Some(line);
    }
    if let Some(array) = scan.tools_array() {
        let deep: Vec<&Element> =
            scan.elements.iter().filter(|element| element.depth > MAX_DEPTH).collect();
        let mut out = line[..=array.0].to_vec();
        let kept = scan.elements.iter().filter(|element| element.depth <= MAX_DEPTH);
        for (index, element) in kept.enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&line[element.start..element.end]);
        }
        out.extend_from_slice(&line[array.1..]);
        let mut again = Scan::default();
        again.feed(&out);
        if again.max_depth <= MAX_DEPTH {
            let mut list = dropped.lock().unwrap_or_else(PoisonError::into_inner);
            for element in deep {
                let name = element.name.as_deref().map(unquote).unwrap_or_else(|| "?".to_owned());
                tracing::warn!(tool = %name, depth = element.depth, "an MCP tool's schema nests too deep; left out");
                list.push(DroppedTool { name, depth: element.depth });
            }
            return Some(out);
        }
    }
    let message = format!(
        "the server's answer nests {} levels deep, more than the {MAX_DEPTH} a message may have, \
         and was dropped",
        scan.max_depth
    );
    match &scan.id.value {
        Some(id) => Some(error_answer(id, &message)),
        None => {
            tracing::warn!(
                depth = scan.max_depth,
                "an MCP server sent a too-deep notification; dropped"
            );
            None
        }
    }
}

/// A JSON-RPC error answer for the request `id` (its raw JSON).
fn error_answer(id: &[u8], message: &str) -> Vec<u8> {
    let error = serde_json::json!({"code": DROPPED_CODE, "message": message});
    let mut out = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    out.extend_from_slice(id);
    out.extend_from_slice(br#","error":"#);
    out.extend_from_slice(error.to_string().as_bytes());
    out.push(b'}');
    out
}

/// A JSON string's text, or the raw bytes when it does not parse.
fn unquote(raw: &[u8]) -> String {
    serde_json::from_slice::<String>(raw)
        .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
}

/// The scan of a line past the cap: only its size and its top-level `id` are kept.
#[derive(Default)]
struct Overlong {
    scan: Scan,
    bytes: usize,
    answered: bool,
}

impl Overlong {
    fn feed(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len();
        self.scan.elements_off = true;
        self.scan.feed(bytes);
    }

    /// The error answer, once the id is known and none was sent yet.
    fn answer(&mut self) -> Option<Vec<u8>> {
        if self.answered {
            return None;
        }
        let id = self.scan.id.value.as_ref()?;
        self.answered = true;
        tracing::warn!(bytes = self.bytes, "an MCP server's answer is over the line cap; dropped");
        let message = format!(
            "the server's answer is over the {} MiB a message may take and was dropped; ask for \
             less at a time",
            LINE_CAP >> 20
        );
        Some(error_answer(id, &message))
    }
}

/// One open array or object.
#[derive(Debug, Default)]
struct Frame {
    object: bool,
    /// Whether the next string of this object is a key.
    expect_key: bool,
    /// The key of the member being read, when it was short.
    key: Option<Vec<u8>>,
}

/// A value being captured: a short string or scalar whose bytes are kept.
#[derive(Debug, Default)]
struct Capture {
    bytes: Vec<u8>,
    active: bool,
    value: Option<Vec<u8>>,
}

impl Capture {
    fn push(&mut self, byte: u8) {
        if self.bytes.len() < SHORT {
            self.bytes.push(byte);
        } else {
            // Too long to be an id or a name worth keeping.
            self.active = false;
            self.bytes.clear();
        }
    }

    fn finish(&mut self) {
        if self.active && !self.bytes.is_empty() {
            self.value = Some(std::mem::take(&mut self.bytes));
        }
        self.active = false;
    }
}

/// One element of a `tools/list` answer's `result.tools` array.
#[derive(Debug)]
struct Element {
    start: usize,
    end: usize,
    depth: usize,
    name: Option<Vec<u8>>,
}

/// JSON's structure, one byte at a time.
#[derive(Debug, Default)]
struct Scan {
    offset: usize,
    frames: Vec<Frame>,
    in_string: bool,
    escaped: bool,
    /// The key being read (when short).
    key: Option<Vec<u8>>,
    /// Whether the string being read is a key.
    reading_key: bool,
    max_depth: usize,
    /// The top-level `id`.
    id: Capture,
    /// The `name` of the element being read.
    name: Capture,
    /// In a scalar captured for `id` or `name`.
    in_scalar: bool,
    /// Where `result.tools` opens and closes.
    array_open: Option<usize>,
    array_close: Option<usize>,
    elements: Vec<Element>,
    /// Elements are not recorded (an overlong line keeps no offsets).
    elements_off: bool,
}

impl Scan {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
            self.offset += 1;
        }
    }

    /// `result.tools`'s brackets, when the line has that array.
    fn tools_array(&self) -> Option<(usize, usize)> {
        Some((self.array_open?, self.array_close?))
    }

    fn capturing(&mut self) -> Option<&mut Capture> {
        if self.id.active {
            Some(&mut self.id)
        } else if self.name.active {
            Some(&mut self.name)
        } else {
            None
        }
    }

    fn byte(&mut self, byte: u8) {
        if self.in_string {
            let ends = !self.escaped && byte == b'"';
            self.escaped = !self.escaped && byte == b'\\';
            if self.reading_key {
                // A key is kept as its raw text between the quotes (the keys looked for need
                // no escapes).
                if let Some(key) = &mut self.key
                    && !ends
                {
                    if key.len() < 32 {
                        key.push(byte);
                    } else {
                        self.key = None;
                    }
                }
            } else if let Some(capture) = self.capturing() {
                // A captured value is kept as raw JSON, quotes included.
                capture.push(byte);
            }
            if ends {
                self.in_string = false;
                self.end_string();
            }
            return;
        }
        if self.in_scalar {
            if is_scalar(byte) {
                if let Some(capture) = self.capturing() {
                    capture.push(byte);
                }
                return;
            }
            self.in_scalar = false;
            self.id.finish();
            self.name.finish();
        }
        match byte {
            b'"' => {
                self.in_string = true;
                let key = self.frames.last().is_some_and(|frame| frame.object && frame.expect_key);
                self.reading_key = key;
                if key {
                    self.key = Some(Vec::new());
                } else {
                    self.start_value();
                    if let Some(capture) = self.capturing() {
                        capture.push(b'"');
                    }
                }
            }
            b'{' | b'[' => {
                // An id or a name is a string or a scalar; a container is not captured.
                self.id.active = false;
                self.name.active = false;
                self.open(byte == b'{');
            }
            b'}' | b']' => self.close(),
            b',' => {
                if let Some(frame) = self.frames.last_mut()
                    && frame.object
                {
                    frame.expect_key = true;
                    frame.key = None;
                }
            }
            b':' => {}
            byte if is_scalar(byte) => {
                self.start_value();
                self.in_scalar = true;
                if let Some(capture) = self.capturing() {
                    capture.push(byte);
                }
            }
            _ => {}
        }
    }

    /// A string that ended: a key is stored in its object; a captured value is complete.
    fn end_string(&mut self) {
        if self.reading_key {
            self.reading_key = false;
            let key = self.key.take();
            if let Some(frame) = self.frames.last_mut() {
                frame.key = key;
                frame.expect_key = false;
            }
        } else {
            self.id.finish();
            self.name.finish();
        }
    }

    /// A value starts here: capture it when it is the top-level `id` or an element's `name`.
    fn start_value(&mut self) {
        let key_is =
            |frame: &Frame, name: &[u8]| frame.object && frame.key.as_deref() == Some(name);
        match self.frames.as_slice() {
            [top] if key_is(top, b"id") => self.id.active = true,
            [result, tools, array, element]
                if !self.elements_off
                    && key_is(result, b"result")
                    && key_is(tools, b"tools")
                    && !array.object
                    && key_is(element, b"name") =>
            {
                self.name.active = true;
                self.name.bytes.clear();
            }
            _ => {}
        }
    }

    fn in_tools_array(&self) -> bool {
        let key_is =
            |frame: &Frame, name: &[u8]| frame.object && frame.key.as_deref() == Some(name);
        matches!(self.frames.as_slice(), [result, tools, array]
            if key_is(result, b"result") && key_is(tools, b"tools") && !array.object)
    }

    fn open(&mut self, object: bool) {
        if !self.elements_off && self.in_tools_array() {
            self.elements.push(Element {
                start: self.offset,
                end: self.offset,
                depth: 0,
                name: None,
            });
            self.name = Capture::default();
        }
        self.frames.push(Frame { object, expect_key: object, key: None });
        let depth = self.frames.len();
        self.max_depth = self.max_depth.max(depth);
        if !self.elements_off && depth == 3 && self.in_tools_array() {
            self.array_open = Some(self.offset);
        }
        if self.frames.len() > 3
            && let Some(element) = self.elements.last_mut()
            && element.end == element.start
        {
            element.depth = element.depth.max(depth);
        }
    }

    fn close(&mut self) {
        if !self.elements_off && self.in_tools_array() {
            self.array_close = Some(self.offset);
        }
        self.frames.pop();
        if !self.elements_off
            && self.in_tools_array()
            && let Some(element) = self.elements.last_mut()
            && element.end == element.start
        {
            element.end = self.offset + 1;
            element.name = self.name.value.take();
        }
    }
}

/// A byte of a number, `true`, `false` or `null`.
fn is_scalar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`relay`] passes on for `input`, and the tools it dropped.
    fn check(input: &[u8]) -> (String, Vec<DroppedTool>) {
        let dropped = Dropped::default();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut out = Vec::new();
        runtime.block_on(relay(input, &mut out, dropped.clone()));
        let list = dropped.lock().unwrap().clone();
        (String::from_utf8(out).unwrap(), list)
    }

    /// A schema nested `depth` objects deep.
    fn nested(depth: usize) -> String {
        let mut schema = r#"{"type":"object"}"#.to_owned();
        for _ in 0..depth {
            schema = format!(r#"{{"type":"object","properties":{{"x":{schema}}}}}"#);
        }
        schema
    }

    #[test]
    fn ordinary_lines_pass_unchanged() {
        let lines = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"description\":\"x \\\" [{\"}]}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n";
        assert_eq!(check(lines.as_bytes()), (lines.to_owned(), Vec::new()));
    }

    #[test]
    fn a_too_deep_tool_is_dropped_and_the_others_are_kept() {
        let deep = nested(70);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":"list-1","result":{{"tools":[{{"name":"ok","inputSchema":{}}},{{"name":"deep\"er","inputSchema":{deep}}},{{"name":"ok2","inputSchema":{{}}}}]}}}}"#,
            nested(2)
        );
        let (out, dropped) = check(format!("{line}\n").as_bytes());
        let value: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let names: Vec<&str> = value["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ok", "ok2"]);
        assert_eq!(value["id"], "list-1");
        assert_eq!(dropped, [DroppedTool { name: "deep\"er".to_owned(), depth: 145 }]);
    }

    #[test]
    fn any_other_too_deep_answer_becomes_an_error_for_its_id() {
        let line = format!(r#"{{"jsonrpc":"2.0","result":{{"content":{}}},"id":7}}"#, nested(70));
        let (out, _) = check(format!("{line}\n").as_bytes());
        let value: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(value["id"], 7);
        assert_eq!(value["error"]["code"], DROPPED_CODE);
        let message = value["error"]["message"].as_str().unwrap();
        assert!(message.contains("more than the 120 a message may have"), "{message}");
        // A notification has no id to answer: it goes.
        let line = format!(r#"{{"jsonrpc":"2.0","method":"x","params":{}}}"#, nested(70));
        assert_eq!(check(format!("{line}\n").as_bytes()).0, "");
    }

    #[test]
    fn a_line_over_the_cap_is_answered_with_an_error_naming_it_whatever_the_id_s_place() {
        let text = "y".repeat(LINE_CAP + 10);
        for line in [
            format!(
                r#"{{"jsonrpc":"2.0","id":42,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"text","text":"{text}"}}]}},"id":"late"}}"#
            ),
        ] {
            let input = format!("{line}\n{{\"jsonrpc\":\"2.0\",\"id\":43,\"result\":{{}}}}\n");
            let (out, _) = check(input.as_bytes());
            let lines: Vec<serde_json::Value> = out
                .lines()
                .map(|line| {
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:.300}"))
                })
                .collect();
            assert_eq!(lines.len(), 2, "{out:.500}");
            assert!(lines[0]["id"] == 42 || lines[0]["id"] == "late", "{out:.500}");
            let message = lines[0]["error"]["message"].as_str().unwrap();
            assert!(message.contains("over the 16 MiB a message may take"), "{message}");
            // The next line is read as usual.
            assert_eq!(lines[1]["id"], 43);
        }
    }
}
