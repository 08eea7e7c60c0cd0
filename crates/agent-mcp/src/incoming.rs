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

use self::scan::{Element, Scan};

mod scan;

/// The longest line read: rmcp's own cap, so every line passed on is one rmcp reads.
pub(crate) const LINE_CAP: usize = 16 * 1024 * 1024;

/// The deepest nesting a message passed on may have: serde_json refuses more than 128 levels,
/// and rmcp's message types add a few of their own.
pub(crate) const MAX_DEPTH: usize = 120;

/// The JSON-RPC error code of an answer made here for a message that was dropped.
pub(crate) const DROPPED_CODE: i32 = -32_099;

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

/// The relay's task for one connection; it stops with the connection.
pub(crate) struct Relay(tokio::task::JoinHandle<()>);

impl Relay {
    /// Starts relaying a server's `stdout`; rmcp reads the end this returns.
    pub(crate) fn start(
        stdout: impl AsyncRead + Unpin + Send + 'static,
        dropped: Dropped,
    ) -> (tokio::io::DuplexStream, Self) {
        let (reader, writer) = tokio::io::duplex(64 * 1024);
        (reader, Self(tokio::spawn(relay(stdout, writer, dropped, LINE_CAP))))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Copies the server's lines from `from` to `to` (rmcp's end), as the module says, until either
/// side closes. `cap` is [`LINE_CAP`]; the fuzz targets pass a small one to reach that path.
pub(crate) async fn relay(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    dropped: Dropped,
    cap: usize,
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
                None if line.len() + part.len() > cap => {
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
            // Reported with the server's other left-out tools; the log only notes it.
            let mut list = dropped.lock().unwrap_or_else(PoisonError::into_inner);
            for element in deep {
                let name = element.name.as_deref().map(unquote).unwrap_or_else(|| "?".to_owned());
                tracing::debug!(tool = %name, depth = element.depth, "an MCP tool's schema nests too deep; left out");
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
    match scan.valid_id() {
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
        let id = self.scan.valid_id()?;
        self.answered = true;
        // The call's result says it; the log only notes it.
        tracing::debug!(bytes = self.bytes, "an MCP server's answer is over the line cap; dropped");
        let message = format!(
            "the server's answer is over the {} MiB a message may take and was dropped; ask for \
             less at a time",
            LINE_CAP >> 20
        );
        Some(error_answer(id, &message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`relay`] passes on for `input`, and the tools it dropped.
    fn check(input: &[u8]) -> (String, Vec<DroppedTool>) {
        let dropped = Dropped::default();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut out = Vec::new();
        runtime.block_on(relay(input, &mut out, dropped.clone(), LINE_CAP));
        let list = dropped.lock().unwrap().clone();
        (String::from_utf8(out).unwrap(), list)
    }

    /// The fuzz finding `regression-answer-depends-on-read-size` (fuzz/corpus/mcp_frames): an
    /// overlong line whose `id` key was given several values (malformed JSON) was answered with
    /// whichever value had been read when a read ended, so the answer depended on how the pipe cut
    /// the line, and it could name an id that is not JSON at all.
    #[test]
    fn regression_answer_depends_on_read_size() {
        struct OneByte<'a>(&'a [u8]);
        impl tokio::io::AsyncRead for OneByte<'_> {
            fn poll_read(
                mut self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                if let Some((&byte, rest)) = self.0.split_first() {
                    buf.put_slice(&[byte]);
                    self.0 = rest;
                }
                std::task::Poll::Ready(Ok(()))
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for line in [
            &br#"{"id":6e sum "x","id":7,"pad":"0123456789abcdef"}"#[..],
            br#"{"id":7 8,"id":"x","pad":"0123456789abcdef"}"#,
        ] {
            let (mut whole, mut bytewise) = (Vec::new(), Vec::new());
            runtime.block_on(relay(line, &mut whole, Dropped::default(), 16));
            runtime.block_on(relay(OneByte(line), &mut bytewise, Dropped::default(), 16));
            assert_eq!(String::from_utf8_lossy(&bytewise), String::from_utf8_lossy(&whole));
            for answer in whole.split(|&byte| byte == b'\n').filter(|line| !line.is_empty()) {
                serde_json::from_slice::<serde_json::Value>(answer).unwrap();
            }
        }
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
