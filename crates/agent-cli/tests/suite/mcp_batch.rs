//! Two calls of one MCP tool in one model turn, through the `agent` binary, against a server
//! written with the Python `mcp` SDK (`agent-mcp/tests/peers/py_batch_server.py`) that serves calls
//! concurrently and logs when each call starts and ends.
//!
//! A tool the server annotates as destructive runs alone, like a built-in that writes: the two
//! calls never overlap. The control: the same server's read-only tool, on a trusted server, does
//! run both calls at once, so the check can fail.

use std::path::Path;

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{
    exec::exec,
    mcp::{STARTUP, code, config, outputs, python},
    session_id, stderr,
};

/// The server's script.
fn server() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-mcp/tests/peers/py_batch_server.py")
}

/// When one call ran, in the server's monotonic nanoseconds.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
}

impl Span {
    fn overlaps(self, other: Span) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// The spans of the calls tagged `a` and `b`, read from the server's log.
fn spans(log: &Path) -> (Span, Span) {
    let text = std::fs::read_to_string(log).unwrap();
    let at = |what: &str, tag: &str| -> u64 {
        let line = text
            .lines()
            .find(|line| line.starts_with(&format!("{what} {tag} ")))
            .unwrap_or_else(|| panic!("no `{what} {tag}` in the log:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let span = |tag| Span { start: at("start", tag), end: at("end", tag) };
    (span("a"), span("b"))
}

/// Runs one turn that calls `tool` twice (tags `a` and `b`) with that tool allowed, and returns
/// the two calls' spans.
async fn two_calls_of(tool: &str) -> (Span, Span) {
    let python = python().expect("checked by the caller");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    // `trust` lets the read-only hint count (the control); it never makes a destructive tool
    // read-only.
    let table = format!(
        "[mcp_servers.batch]\ncommand = {:?}\nargs = [{:?}, \"--log\", {:?}]\n{STARTUP}required = true\ntrust = true\n",
        python.display(),
        server().display(),
        log.display()
    );
    let config = config(dir.path(), &table);
    let name = format!("mcp__batch__{tool}");
    let turns = vec![
        Turn::tool_calls([
            ScriptedCall::new("c1", name.as_str(), json!({"tag": "a"})),
            ScriptedCall::new("c2", name.as_str(), json!({"tag": "b"})),
        ]),
        Turn::text("done"),
    ];
    let args = ["--api", "chat", "--config", &config, "--allow", &name, "exec", "go"];
    let (output, _) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outputs = outputs(dir.path(), &session_id(&output));
    let codes: Vec<String> = outputs.iter().map(code).collect();
    assert_eq!(codes, ["ok", "ok"], "{outputs:?}");
    spans(&log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_of_a_destructive_mcp_tool_in_one_turn_never_overlap() {
    if python().is_none() {
        return;
    }
    let (a, b) = two_calls_of("change").await;
    assert!(!a.overlaps(b), "the calls overlapped: {a:?} {b:?}");
    // In call order: the second starts after the first has ended.
    assert!(a.end <= b.start, "{a:?} {b:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_of_a_read_only_mcp_tool_in_one_turn_run_at_once() {
    if python().is_none() {
        return;
    }
    let (a, b) = two_calls_of("look").await;
    assert!(a.overlaps(b), "the calls ran one after the other: {a:?} {b:?}");
}
