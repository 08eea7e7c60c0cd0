//! Child agents in the REPL (fed from a pipe): `/status` counts their tokens, and a child's
//! question to the approver says which agent asks.

use std::{io::Write, path::Path, process::Stdio};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::json;

use crate::suite::{
    Running,
    agents::{config, task},
    command, stderr,
};

/// Runs `agent chat` with the two tools on, typing `lines`; the output.
async fn chat(dir: &Path, script: Script, lines: &[&str]) -> std::process::Output {
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let config = config(dir, "");
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let args =
            ["--config", &config, "--base-url", &url, "--model", "m", "--api", "chat", "chat"];
        let mut running = Running::spawn(command(&dir, &args).stdin(Stdio::piped()));
        running.stdin().write_all(input.as_bytes()).unwrap();
        running.finish("agent chat")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_adds_the_childrens_tokens() {
    let dir = tempfile::tempdir().unwrap();
    // Each response reports 42 tokens in (and its length out): two parent turns, one child turn.
    let script =
        Script::new([Turn::tool_calls([task("t", "explore", "look \"A1\"")]), Turn::text("done")])
            .with_standing("\\\"A1\\\"", Turn::text("child saw it"));
    let output = chat(dir.path(), script, &["/status", "look", "/status", "/exit"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    let reports: Vec<&str> = err.split("  model ").skip(1).collect();
    assert_eq!(reports.len(), 2, "{err}");
    assert!(!reports[0].contains("children"), "a child row before any child ran: {}", reports[0]);
    assert!(reports[1].contains("tokens       126 in · 22 out this session"), "{}", reports[1]);
    assert!(
        reports[1].contains("children     1 child agent: 42 in · 4 out (in the tokens above)"),
        "{}",
        reports[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_question_says_which_agent_asks() {
    let dir = tempfile::tempdir().unwrap();
    let write =
        ScriptedCall::new("wf1", "write_file", json!({"path": "new.txt", "content": "x\n"}));
    let script =
        Script::new([Turn::tool_calls([task("t", "general", "write \"A1\"")]), Turn::text("done")])
            .with_standing("\"wf1\"", Turn::text("wrote it"))
            .with_standing("\\\"A1\\\"", Turn::tool_calls([write]));
    let output = chat(dir.path(), script, &["write it", "y", "/exit"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    let asks = err.lines().find(|line| line.contains("asks:")).unwrap_or_else(|| panic!("{err}"));
    assert!(asks.contains("agent `general` (") && asks.contains(".c1)"), "{asks}");
    assert_eq!(std::fs::read_to_string(dir.path().join("new.txt")).unwrap(), "x\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_is_shown_after_each_change_and_on_plan() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!([
        {"id": null, "step": "read", "status": "completed"},
        {"id": null, "step": "fix", "status": "in_progress"},
    ]);
    let call = ScriptedCall::new(
        "p",
        "update_plan",
        json!({"explanation": null, "plan": plan, "ops": null}),
    );
    let script = Script::new([Turn::tool_calls([call]), Turn::text("planned")]);
    let output = chat(dir.path(), script, &["/plan", "plan it", "/plan", "/exit"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    let checklist = "plan: 1 of 2 done\n  [x] 1. read\n  [>] 2. fix";
    assert!(err.contains("no plan yet"), "{err}");
    // Once after the change, once for `/plan`.
    assert_eq!(err.matches(checklist).count(), 2, "{err}");
}
