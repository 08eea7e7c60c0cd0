//! The REPL fed from a pipe (rustyline reads plain lines when stdin is not a terminal).

use std::{
    io::Write,
    path::Path,
    process::{Output, Stdio},
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{Running, command, stderr, stdout};

/// Runs `agent chat` against a scripted server, typing `lines`; returns the output and bodies.
pub(crate) async fn chat(
    workspace: &Path,
    turns: Vec<Turn>,
    lines: &[&str],
) -> (Output, Vec<Value>) {
    chat_script(workspace, Script::new(turns), lines).await
}

/// [`chat`] with a whole script.
async fn chat_script(workspace: &Path, script: Script, lines: &[&str]) -> (Output, Vec<Value>) {
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let input = lines.iter().map(|line| format!("{line}\n")).collect::<String>();
    let dir = workspace.to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args = ["--base-url", &url, "--model", "m", "--api", "chat", "chat"];
        let mut running = Running::spawn(command(&dir, &args).stdin(Stdio::piped()));
        running.stdin().write_all(input.as_bytes()).unwrap();
        running.finish("agent chat")
    })
    .await
    .unwrap();
    let bodies = server.requests().iter().map(|request| request.json()).collect();
    (output, bodies)
}

fn write_call() -> Turn {
    Turn::tool_calls([ScriptedCall::new(
        "call_w",
        "write_file",
        json!({"path": "new.txt", "content": "x\n"}),
    )])
}

fn user_messages(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_then_keep_the_conversation_until_clear() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![
        write_call(),
        Turn::text("Written."),
        Turn::text("Second answer."),
        Turn::text("Fresh start."),
    ];
    let lines = ["/tools", "write it", "y", "and then?", "/clear", "hello again", "/exit"];
    let (output, bodies) = chat(dir.path(), turns, &lines).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("uppercase"), "/tools lists the tools: {err}");
    assert!(err.contains("? write_file") && err.contains("allow? [y]es"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("new.txt")).unwrap(), "x\n");
    let out = stdout(&output);
    assert!(
        out.contains("Written.") && out.contains("Second answer.") && out.contains("Fresh start."),
        "{out}"
    );
    assert_eq!(bodies.len(), 4);
    assert_eq!(user_messages(&bodies[2]), ["write it", "and then?"]);
    assert_eq!(user_messages(&bodies[3]), ["hello again"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_reaches_the_model_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![write_call(), Turn::text("I will not write it.")];
    let (output, bodies) = chat(dir.path(), turns, &["write it", "n not today", "/nope"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!dir.path().join("new.txt").exists());
    let observation = bodies[1]["messages"][3]["content"].as_str().unwrap();
    assert!(observation.contains("not today"), "{observation}");
    assert!(stderr(&output).contains("no command /nope"), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_shows_the_window_and_the_agents_md_read_and_compact_reports() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
    let lines = ["/context", "hello", "/compact", "/exit"];
    let (output, bodies) = chat(dir.path(), vec![Turn::text("Hi.")], &lines).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("32768 tokens (default for an unknown model)"), "{err}");
    assert!(err.contains("free "), "{err}");
    let agents = dir.path().canonicalize().unwrap().join("AGENTS.md");
    assert!(err.contains(&agents.display().to_string()), "{err}");
    assert!(err.contains("agent: context compacted (manual)"), "{err}");
    assert_eq!(bodies.len(), 1, "a conversation this short has nothing to summarise");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_a_server_reports_replaces_the_default_for_an_unknown_model() {
    let dir = tempfile::tempdir().unwrap();
    // A 4096-token window, as many llama.cpp users run: the first request with every default
    // tool (update_plan and task included) must fit it (the first request's budget).
    let script = Script::new([Turn::text("Hi.")]).with_context_window(4_096);
    let (output, bodies) = chat_script(dir.path(), script, &["/context", "hello", "/exit"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("4096 tokens (reported by the server); compaction at 3276"), "{err}");
    // Asking for the window is not a model request, and uses no turn of the script.
    assert_eq!(bodies.len(), 1);
    assert!(stdout(&output).contains("Hi."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_counts_tokens_and_model_switches_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![Turn::text("One."), Turn::text("Two.")];
    let lines =
        ["/help", "hello", "/status", "/model", "/model other-model", "again", "/status", "/exit"];
    let (output, bodies) = chat(dir.path(), turns, &lines).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("/status") && err.contains("/model [NAME]"), "/help lists them: {err}");
    // The scripted server reports 42 input tokens a response and a quarter of the text's bytes
    // (plus one) as output.
    let (first, second) =
        err.split_once("agent: model other-model from the next prompt on").unwrap();
    assert!(first.contains("  42 in · 2 out · "), "the line after the turn: {first}");
    assert!(first.contains("  model        m\n"), "{first}");
    assert!(first.contains("  api          chat\n"), "{first}");
    assert!(first.contains("  tokens       42 in · 2 out this session\n"), "{first}");
    assert!(first.contains("\n  m\n"), "/model alone names the model: {first}");
    assert!(second.contains("  model        other-model\n"), "{second}");
    assert!(second.contains("  tokens       84 in · 4 out this session\n"), "{second}");
    assert!(second.contains("% of 32,768"), "the context is known: {second}");
    // What the server received: the old model, then the new one with the whole conversation.
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "m");
    assert_eq!(bodies[1]["model"], "other-model");
    assert_eq!(user_messages(&bodies[1]), ["hello", "again"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_session_has_no_model_to_switch() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--api", "chat", "exec", "hello"];
    let (recorded, _) = crate::suite::exec::exec(dir.path(), vec![Turn::text("Hi.")], &args).await;
    let id = crate::suite::session_id(&recorded);
    let recording = crate::suite::data_dir(dir.path()).join("sessions").join(id);
    let replay = recording.join("transcript.jsonl");
    let args = ["chat", "--replay", replay.to_str().unwrap()];
    let mut running = Running::spawn(command(dir.path(), &args).stdin(Stdio::piped()));
    running.stdin().write_all(b"/model other\n/status\n/exit\n").unwrap();
    let output = running.finish("agent chat --replay");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("agent: a replayed session plays its recording"), "{err}");
    assert!(err.contains("  api          replay\n"), "{err}");
    assert!(err.contains("  base url     none (a recorded transcript)\n"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switched_model_gets_the_whole_conversation_not_the_old_models_response_id() {
    let turns = vec![Turn::text("One."), Turn::text("Two."), Turn::text("Three.")];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let args = ["--base-url", &url, "--model", "m", "--api", "responses", "chat"];
    let mut command = command(dir.path(), &args);
    command.stdin(Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        let mut running = Running::spawn(&mut command);
        running.stdin().write_all(b"hello\nagain\n/model other\nthird\n/exit\n").unwrap();
        running.finish("agent chat")
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies: Vec<Value> = server.requests().iter().map(|request| request.json()).collect();
    assert_eq!(bodies.len(), 3);
    // Before the switch the conversation continues the stored response; after it, the new
    // model gets every item, since the old model's response id means nothing to it.
    assert!(bodies[1]["previous_response_id"].is_string(), "{}", bodies[1]);
    assert_eq!(bodies[2]["model"], "other");
    assert!(bodies[2].get("previous_response_id").is_none(), "{}", bodies[2]);
    let sent = bodies[2]["input"].to_string();
    assert!(sent.contains("hello") && sent.contains("One.") && sent.contains("third"), "{sent}");
}
