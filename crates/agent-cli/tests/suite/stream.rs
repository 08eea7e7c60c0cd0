//! The `exec --json` contract: every stream fits `docs/exec-events.schema.json`, starts with
//! `run.started` and ends with exactly one `run.completed` or `run.failed`, whatever ended the run.

use std::{path::Path, process::Stdio, time::Duration};

use agent_model::scripted::{Fault, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{
    command,
    exec::{exec, uppercase_then_answer},
    json_events, stderr,
};

/// Runs `exec --json` with `args` before `exec` and returns the exit code and the events.
async fn stream(workspace: &Path, turns: Vec<Turn>, args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut full = vec!["--api", "chat"];
    full.extend(args);
    full.extend(["exec", "--json", "go"]);
    let (output, _) = exec(workspace, turns, &full).await;
    (output.status.code(), json_events(&output))
}

fn last(events: &[Value]) -> &Value {
    events.last().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_run_streams_the_documented_events() {
    let dir = tempfile::tempdir().unwrap();
    let (code, events) = stream(dir.path(), uppercase_then_answer(), &[]).await;
    assert_eq!(code, Some(0));
    insta::assert_json_snapshot!("answered_stream", events, {
        "[].session_id" => "[session]",
        "[].duration_ms" => "[ms]",
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_reported_per_turn_and_cumulative() {
    let dir = tempfile::tempdir().unwrap();
    let (_, events) = stream(dir.path(), uppercase_then_answer(), &[]).await;
    let usage: Vec<&Value> = events.iter().filter(|e| e["type"] == "usage").collect();
    assert_eq!(usage.len(), 2, "{events:?}");
    let input = |e: &Value, key: &str| e[key]["input_tokens"].as_u64().unwrap();
    assert_eq!(usage[0]["turn"], 1);
    assert_eq!(usage[1]["turn"], 2);
    assert_eq!(input(usage[0], "cumulative_usage"), input(usage[0], "turn_usage"));
    assert_eq!(
        input(usage[1], "cumulative_usage"),
        input(usage[0], "turn_usage") + input(usage[1], "turn_usage")
    );
    assert_eq!(last(&events)["cumulative_usage"], usage[1]["cumulative_usage"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_limit_ends_with_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let turns = (0..3)
        .map(|i| {
            Turn::tool_calls([ScriptedCall::new(
                format!("c{i}"),
                "uppercase",
                json!({"text": "a"}),
            )])
        })
        .collect();
    let (code, events) = stream(dir.path(), turns, &["--max-turns", "2"]).await;
    assert_eq!(code, Some(1));
    assert_eq!(last(&events)["reason"], "max_turns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_error_ends_with_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let fault = Fault::Status {
        status: 400,
        body: r#"{"error":{"message":"bad request","type":"invalid_request_error"}}"#.to_owned(),
        content_type: None,
        headers: Default::default(),
    };
    let (code, events) = stream(dir.path(), vec![Turn::fault(fault)], &[]).await;
    assert_eq!(code, Some(1));
    assert!(events.iter().any(|e| e["type"] == "error"), "{events:?}");
    assert_eq!(last(&events)["reason"], "model_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_carries_its_remedy_and_a_capped_one_its_full_output() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[limits]\noutput_cap = 200\n").unwrap();
    let long = "word ".repeat(200);
    let turns = vec![
        Turn::tool_calls([
            ScriptedCall::new("call_w", "write_file", json!({"path": "new.txt", "content": "x"})),
            ScriptedCall::new("call_u", "uppercase", json!({"text": long})),
        ]),
        Turn::text("done"),
    ];
    let (code, events) = stream(dir.path(), turns, &["--config", config.to_str().unwrap()]).await;
    assert_eq!(code, Some(0));
    let done = |id: &str| {
        events.iter().find(|e| e["type"] == "tool.completed" && e["call_id"] == id).unwrap().clone()
    };
    let refused = done("call_w");
    assert_eq!(refused["error"], "permission_denied");
    assert_eq!(refused["remedy"]["mode"], "accept-edits", "{refused}");
    let capped = done("call_u");
    assert_eq!(capped["truncated"], true, "{capped}");
    let path = capped["output_path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), long.to_uppercase());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_stops_the_run_ends_it_with_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let hook = "[[hooks.PostToolUse]]\ncommand = \"echo '{\\\"continue\\\":false,\\\"stopReason\\\":\\\"quota\\\"}'\"\n";
    std::fs::write(&config, hook).unwrap();
    let (code, events) =
        stream(dir.path(), uppercase_then_answer(), &["--config", config.to_str().unwrap()]).await;
    assert_eq!(code, Some(1));
    assert_eq!(last(&events)["reason"], "stopped");
    assert_eq!(last(&events)["message"], "quota");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_during_a_tool_ends_the_stream_with_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    // The call is held in a PreToolUse hook, which runs outside the OS sandbox, so this check
    // does not depend on what the kernel can enforce.
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[[hooks.PreToolUse]]\ncommand = \"touch started; sleep 30\"\n")
        .unwrap();
    let server = ScriptedServer::start(Script::new(uppercase_then_answer())).await.unwrap();
    let url = server.url();
    let config = config.display().to_string();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "--config", &config];
    let mut args = args.to_vec();
    args.extend(["exec", "--json", "go"]);
    let child =
        command(dir.path(), &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = dir.path().join("started");
    for _ in 0..200 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started.exists(), "the call never started");
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output =
        tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let events = json_events(&output);
    let done = events.iter().find(|e| e["type"] == "tool.completed").unwrap();
    assert_eq!(done["error"], "cancelled");
    assert_eq!(last(&events)["reason"], "cancelled");
}
