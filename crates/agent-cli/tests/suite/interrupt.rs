//! Ctrl-C during a long bash call: the command's process group dies, the transcript records a
//! cancelled output for the call, and the next request is valid.

use std::{io::Write, process::Stdio};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{
    Running, all_gone, command, exec::exec, processes_with, session_id, stderr, transcript,
};

/// Sends SIGINT to the process, as Ctrl-C in its terminal would.
fn interrupt(running: &Running) {
    let pid = running.id().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_kills_the_command_records_cancelled_and_resume_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    // A duration no other process on the machine uses, so the check below sees only ours.
    let marker = format!("30.{}", std::process::id());
    let server = ScriptedServer::start(Script::new([Turn::tool_calls([ScriptedCall::new(
        "call_sleep",
        "bash",
        json!({"command": format!("sleep {marker}")}),
    )])]))
    .await
    .unwrap();
    let url = server.url();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat"];
    let mut args: Vec<&str> = args.to_vec();
    args.extend(["--permission-mode", "bypass", "exec", "sleep a while"]);
    let mut running = Running::spawn(command(dir.path(), &args).stdin(Stdio::null()));
    running.wait_until("a process running the sleep", |_| !processes_with(&marker).is_empty());
    interrupt(&running);
    let output = tokio::task::spawn_blocking(move || running.finish("agent exec after Ctrl-C"))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    all_gone(&marker);

    let id = session_id(&output);
    let lines = transcript(dir.path(), &id);
    let cancelled = lines.iter().find(|line| {
        line["item"]["type"] == "tool_output" && line["item"]["call_id"] == "call_sleep"
    });
    let cancelled = cancelled.unwrap_or_else(|| panic!("no output for call_sleep: {lines:?}"));
    assert_eq!(cancelled["item"]["error"], "cancelled", "{cancelled}");

    let (resumed, bodies) = exec(
        dir.path(),
        vec![Turn::text("Stopped, as asked.")],
        &["--api", "chat", "exec", "--resume", &id, "never mind"],
    )
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let messages = bodies[0]["messages"].as_array().unwrap();
    let calls: Vec<&Value> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|call| &call["id"])
        .collect();
    let answered: Vec<&Value> =
        messages.iter().map(|m| &m["tool_call_id"]).filter(|id| !id.is_null()).collect();
    assert_eq!(calls, answered);
    assert_eq!(calls, [&json!("call_sleep")]);
    assert_eq!(messages.last().unwrap()["content"], "never mind");
}

#[test]
fn ctrl_c_in_the_repl_cancels_the_turn_not_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("31.{}", std::process::id());
    // A recording as the model: a long bash call, then an answer for the next prompt.
    let lines = [
        json!({"item": {"type": "message", "role": "user", "content": "wait"}}),
        json!({"item": {"type": "tool_call", "call_id": "c1", "name": "bash",
            "arguments": json!({"command": format!("sleep {marker}")}).to_string()}}),
        json!({"item": {"type": "tool_output", "call_id": "c1", "output": "", "ok": false}}),
        json!({"item": {"type": "message", "role": "assistant", "content": "Still here."}}),
    ];
    let recording = dir.path().join("recording.jsonl");
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&recording, text).unwrap();
    let args = ["--permission-mode", "bypass", "chat", "--replay", recording.to_str().unwrap()];
    let mut running = Running::spawn(command(dir.path(), &args).stdin(Stdio::piped()));
    let mut stdin = running.stdin();
    stdin.write_all(b"wait\n").unwrap();
    running.wait_until("a process running the sleep", |_| !processes_with(&marker).is_empty());
    interrupt(&running);
    running.wait_for_stderr("turn cancelled", 1);
    all_gone(&marker);
    stdin.write_all(b"are you there?\n/exit\n").unwrap();
    drop(stdin);
    let output = running.finish("agent chat after /exit");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("turn cancelled"), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "Still here.");
}

#[test]
fn ctrl_c_at_an_approval_prompt_cancels_the_turn_and_keeps_the_next_line() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        json!({"item": {"type": "message", "role": "user", "content": "wait"}}),
        json!({"item": {"type": "tool_call", "call_id": "c1", "name": "bash",
            "arguments": json!({"command": "touch ran.txt"}).to_string()}}),
        json!({"item": {"type": "tool_output", "call_id": "c1", "output": "", "ok": false}}),
        json!({"item": {"type": "message", "role": "assistant", "content": "Still here."}}),
    ];
    let recording = dir.path().join("recording.jsonl");
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&recording, text).unwrap();
    // Default mode asks before `touch`; the prompt is left unanswered and interrupted.
    let args = ["chat", "--replay", recording.to_str().unwrap()];
    let mut running = Running::spawn(command(dir.path(), &args).stdin(Stdio::piped()));
    let mut stdin = running.stdin();
    stdin.write_all(b"wait\n").unwrap();
    running.wait_for_stderr("allow? [y]es", 1);
    interrupt(&running);
    running.wait_for_stderr("turn cancelled", 1);
    // The line typed after Ctrl-C is the next prompt, not an answer to the abandoned question.
    stdin.write_all(b"y\n/exit\n").unwrap();
    drop(stdin);
    let output = running.finish("agent chat after /exit");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("bash: error: cancelled") && err.contains("turn cancelled"), "{err}");
    assert!(!dir.path().join("ran.txt").exists());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "Still here.");
}
