//! Terminal safety: what a peer wrote (an MCP tool's description, a server's stderr, the model's
//! arguments) reaches the terminal with its control characters made visible, in every listing,
//! the REPL and the approval prompt. The peer is `agent-mcp/tests/peers/py_hostile.py`, whose
//! `lure` tool's description clears the screen (`ESC[2J ESC[H`) and retitles the window
//! (`ESC]0;pwned BEL`).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Output, Stdio},
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{Running, agent, command, mcp::STARTUP, stderr, stdout};

/// The hostile peer as `[mcp_servers.h]` (with `extra` keys), written to a config file in `dir`.
fn config(dir: &Path, python: &Path, args: &[&str], extra: &str) -> String {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-mcp/tests/peers/py_hostile.py");
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    let table = format!(
        "[mcp_servers.h]\ncommand = {:?}\nargs = {all:?}\n{STARTUP}{extra}\n",
        python.display()
    );
    crate::suite::mcp::config(dir, &table)
}

fn python() -> Option<PathBuf> {
    agent_test_support::mcp_python()
}

/// Fails when `output` holds an escape or a bell byte anywhere, naming where.
#[track_caller]
fn assert_no_escape_byte(output: &Output, what: &str) {
    for (name, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let at = bytes.iter().position(|&byte| byte == 0x1b || byte == 0x07);
        assert!(
            at.is_none(),
            "{what}: {name} holds an escape byte at {at:?}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn mcp_descriptions_with_escapes_print_no_escape_byte_in_any_listing() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &python, &[], "");
    // The control: the description as the server sent it does hold the escapes.
    let output = agent(dir.path(), &["--config", &config, "tools", "list", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let list: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let lure = list.iter().find(|tool| tool["name"] == "mcp__h__lure").unwrap();
    let raw = lure["description"].as_str().unwrap();
    assert!(raw.contains("\x1b[2J\x1b[H") && raw.contains("\x1b]0;pwned\x07"), "{raw:?}");
    // Which listings show descriptions: those must show what was there, made visible.
    for (args, describes) in [
        (&["tools", "list"][..], true),
        (&["tools", "list", "--tokens"], false),
        (&["mcp", "list"], false),
        (&["mcp", "get", "h"], true),
    ] {
        let mut all = vec!["--config", config.as_str()];
        all.extend_from_slice(args);
        let output = agent(dir.path(), &all);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert_no_escape_byte(&output, &args.join(" "));
        let out = stdout(&output);
        assert_eq!(out.contains("␛[2J␛[HReads a file.␛]0;pwned␇"), describes, "{args:?}: {out}");
    }
}

#[test]
fn a_failing_servers_stderr_with_escapes_prints_no_escape_byte() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &python, &["--stderr-escape"], "");
    for args in [&["mcp", "list"][..], &["mcp", "get", "h"], &["tools", "list"]] {
        let mut all = vec!["--config", config.as_str()];
        all.extend_from_slice(args);
        let output = agent(dir.path(), &all);
        assert_no_escape_byte(&output, &args.join(" "));
        let shown = format!("{}{}", stdout(&output), stderr(&output));
        assert!(
            shown.contains("starting ␛]0;pwned-by-stderr␇ ␛[2J then giving up"),
            "{args:?}: {shown}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_tools_list_and_the_approval_prompt_print_no_escape_byte() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Required, so the session starts with the server's tools and `/tools` lists them.
    let config = config(dir.path(), &python, &[], "required = true");
    // The model's arguments carry an escape too: the prompt's title shows them.
    let call =
        ScriptedCall::new("call_l", "mcp__h__lure", json!({"path": "\u{1b}]0;pwned\u{7}/etc"}));
    let script = Script::new([Turn::tool_calls([call]), Turn::text("Done.")]);
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args =
            ["--config", &config, "--base-url", &url, "--model", "m", "--api", "chat", "chat"];
        let mut running = Running::spawn(command(&workspace, &args).stdin(Stdio::piped()));
        running.stdin().write_all(b"/tools\nlook\ny\n/exit\n").unwrap();
        running.finish("agent chat")
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_no_escape_byte(&output, "the REPL");
    let err = stderr(&output);
    assert!(err.contains("␛[2J␛[HReads a file.␛]0;pwned␇"), "/tools lists it: {err}");
    assert!(err.contains("? mcp__h__lure") && err.contains("␛]0;pwned␇/etc"), "the prompt: {err}");
    // The call ran after the approval, with the arguments as the model sent them.
    let bodies: Vec<Value> = server.requests().iter().map(|request| request.json()).collect();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1].to_string().contains("read \\u001b]0;pwned\\u0007/etc"), "{}", bodies[1]);
    assert!(stdout(&output).contains("Done."));
}
