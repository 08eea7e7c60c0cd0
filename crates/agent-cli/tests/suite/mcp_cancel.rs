//! server-everything's long-running tool cancelled by the agent: a call cut at the
//! server's `tool_max_sec` must reach the server as `notifications/cancelled` naming that call's
//! request, before the agent exits. A tap between the agent and the server
//! (`tests/peers/stdio_tap.py`) logs every line the server reads on its stdin and writes on its
//! stdout; the control run, without the cap, shows the tap sees the server's answer when there
//! is one.

use std::path::Path;

use serde_json::Value;

use crate::suite::{
    agent,
    mcp::{STARTUP, config, everything},
    stderr, stdout,
};

/// What the tap logged: the messages the server received (`>`) and sent (`<`).
struct Tapped {
    received: Vec<Value>,
    sent: Vec<Value>,
}

/// Runs `trigger-long-running-operation` (`arguments`) through `agent tools call`, with the
/// server's tools capped at `max_sec`; returns the output and what the tap saw.
fn call(bin: &Path, max_sec: u32, arguments: &str) -> (std::process::Output, Tapped) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tap.log");
    let tap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/stdio_tap.py");
    let table = format!(
        "[mcp_servers.everything]\ncommand = \"python3\"\nargs = [{:?}, {:?}, \"--\", {:?}, \"stdio\"]\n\
         {STARTUP}tool_timeout_sec = {max_sec}\ntool_max_sec = {max_sec}\n",
        tap.display(),
        log.display(),
        bin.display()
    );
    let config = config(dir.path(), &table);
    let name = "mcp__everything__trigger-long-running-operation";
    let output = agent(dir.path(), &["tools", "call", name, arguments, "--config", &config]);
    let text = std::fs::read_to_string(&log).unwrap();
    let parse = |tag: &str| -> Vec<Value> {
        text.lines()
            .filter_map(|line| line.strip_prefix(tag))
            .filter_map(|json| serde_json::from_str(json).ok())
            .collect()
    };
    (output, Tapped { received: parse("> "), sent: parse("< ") })
}

/// The id of the `tools/call` request the server received.
fn call_id(tapped: &Tapped) -> Value {
    let request = tapped.received.iter().find(|message| message["method"] == "tools/call");
    request.unwrap_or_else(|| panic!("no tools/call reached the server")).get("id").unwrap().clone()
}

#[test]
fn a_call_cut_at_its_cap_reaches_server_everything_as_a_cancellation() {
    let Some(bin) = everything() else { return };
    // Ten seconds of work with progress every half second, so the 1 s idle timeout never fires
    // and the call is cut by the executor at its 1 s cap (the path Ctrl-C also takes).
    let (output, tapped) = call(&bin, 1, r#"{"duration":10,"steps":20}"#);
    assert_eq!(output.status.code(), Some(1), "{}\n{}", stdout(&output), stderr(&output));
    let id = call_id(&tapped);
    let cancelled = tapped
        .received
        .iter()
        .find(|message| message["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no cancellation reached the server: {:?}", tapped.received));
    assert_eq!(cancelled["params"]["requestId"], id, "{cancelled}");
    assert!(!tapped.sent.iter().any(|message| message["id"] == id), "the cut call was answered");
}

/// The control: without the cap the same kind of call is answered, and nothing is cancelled.
#[test]
fn an_uncut_call_is_answered_and_never_cancelled() {
    let Some(bin) = everything() else { return };
    let (output, tapped) = call(&bin, 60, r#"{"duration":1,"steps":2}"#);
    assert!(output.status.success(), "{}\n{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains("Long running operation completed"), "{}", stdout(&output));
    let id = call_id(&tapped);
    assert!(
        tapped.sent.iter().any(|message| message["id"] == id && message.get("result").is_some())
    );
    assert!(!tapped.received.iter().any(|message| message["method"] == "notifications/cancelled"));
}
