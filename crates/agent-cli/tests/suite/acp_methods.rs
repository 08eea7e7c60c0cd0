//! Every method `agent acp` advertises beyond the prompt itself, driven by the official Python
//! SDK's client (`tests/acp/client.py`, PyPI `agent-client-protocol`, pinned in
//! scripts/peers/acp/) against the scripted model, each with its effect checked where the user
//! would see it: on the disk, in the requests the model server receives, in `/proc`. Every frame
//! the agent writes is validated against the protocol's schema, and its stderr holds no internal
//! error.

use std::path::{Path, PathBuf};

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{
    acp::{check_frames, edit_turns, run_peer, server, updates_of},
    command,
};

/// Plays `plan` (see client.py) with the Python client against `agent [args] acp` in
/// `workspace`; returns the client's summary after checking the agent's frames and stderr.
pub(crate) async fn play(
    python: PathBuf,
    workspace: &Path,
    plan: Value,
    args: Vec<String>,
) -> Value {
    play_with(python, workspace, plan, args, Vec::new()).await
}

async fn play_with(
    python: PathBuf,
    workspace: &Path,
    plan: Value,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/client.py");
    let agent = command(workspace, &[]).get_program().to_owned();
    let frames = workspace.parent().unwrap().join("frames-python.jsonl");
    let ws = workspace.to_owned();
    let frames_path = frames.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut client = std::process::Command::new(python);
        client.arg(script).arg(agent).arg(&ws).arg(&frames_path).arg(plan.to_string()).args(&args);
        for (key, value) in env {
            client.env(key, value);
        }
        run_peer(client, &ws)
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client failed: {stderr}");
    // A request the agent answered must never have been dropped unanswered inside it.
    assert!(!stderr.contains("Responder dropped"), "{stderr}");
    check_frames(&std::fs::read_to_string(&frames).unwrap());
    let summary: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {stderr}"));
    assert_eq!(summary["exitCode"], 0, "{summary}\n{stderr}");
    summary
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "hello\n").unwrap();
    (dir, workspace)
}

fn python() -> Option<PathBuf> {
    agent_test_support::peer_python("acp")
}

/// The requests' bodies the scripted server received, parsed.
fn bodies(server: &agent_model::scripted::ScriptedServer) -> Vec<Value> {
    server.requests().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect()
}

/// The tool names a request offered.
fn tool_names(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| Some(t["function"]["name"].as_str()?.to_owned())).collect()
}

/// `session/set_mode` to `accept-edits`: the edit that default mode asks about (and this
/// client would reject) runs without a question. The control is
/// `the_python_sdk_client_allows_an_edit_and_sees_its_diff`, where the same edit asks.
#[tokio::test(flavor = "multi_thread")]
async fn set_mode_changes_what_is_asked() {
    let Some(python) = python() else { return };
    let (_dir, ws) = workspace();
    let (_server, args) = server(edit_turns()).await;
    let steps = json!([{"initialize": {}}, {"new": {}}, {"set_mode": "accept-edits"}, {"prompt": "do the task"}]);
    let summary = play(python, &ws, json!({"answer": "reject", "steps": steps}), args).await;
    assert_eq!(summary["results"][1]["modes"]["currentModeId"], "default", "{summary}");
    assert!(summary["results"][2].get("error").is_none(), "{summary}");
    let updates = summary["updates"].as_array().unwrap();
    let changed = updates.iter().find(|u| u["sessionUpdate"] == "current_mode_update");
    assert_eq!(changed.expect("no current_mode_update")["currentModeId"], "accept-edits");
    assert_eq!(summary["results"][3]["stopReason"], "end_turn", "{summary}");
    assert_eq!(summary["permissions"], json!([]), "{summary}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "goodbye\n");
}

/// `session/resume` after `session/close`: nothing is replayed, and the next request to the
/// model carries the earlier prompt and answer.
#[tokio::test(flavor = "multi_thread")]
async fn resume_brings_back_the_earlier_conversation() {
    let Some(python) = python() else { return };
    let (_dir, ws) = workspace();
    let turns = vec![Turn::text("Noted: the word."), Turn::text("It was zebra-7731.")];
    let (server, args) = server(turns).await;
    let steps = json!([
        {"initialize": {}}, {"new": {}}, {"prompt": "remember the word zebra-7731"},
        {"close": null}, {"resume": null}, {"prompt": "what was the word?"},
    ]);
    let summary = play(python, &ws, json!({"steps": steps}), args).await;
    assert_eq!(summary["results"][4]["modes"]["currentModeId"], "default", "{summary}");
    assert_eq!(summary["results"][5]["stopReason"], "end_turn", "{summary}");
    let replayed = summary["updates"].as_array().unwrap().iter().filter(|u| u["step"] == 4);
    assert_eq!(replayed.count(), 0, "resume replays nothing: {summary}");
    let bodies = bodies(&server);
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let resumed = bodies[1]["messages"].to_string();
    assert!(!bodies[0]["messages"].to_string().contains("Noted: the word."));
    for earlier in ["remember the word zebra-7731", "Noted: the word.", "what was the word?"] {
        assert!(resumed.contains(earlier), "{earlier} missing from {resumed}");
    }
}

/// `authenticate`: no method is advertised (the key comes from our configuration), the call is
/// answered, and the session after it reaches the model with the configured key.
#[tokio::test(flavor = "multi_thread")]
async fn authenticate_is_answered_and_the_configured_key_is_used() {
    let Some(python) = python() else { return };
    let (_dir, ws) = workspace();
    let (server, args) = server(vec![Turn::text("Hi.")]).await;
    let steps = json!([{"initialize": {}}, {"authenticate": "any"}, {"new": {}}, {"prompt": "hi"}]);
    let env = vec![("OPENAI_API_KEY", "sk-acp-test-key".to_owned())];
    let summary = play_with(python, &ws, json!({"steps": steps}), args, env).await;
    let advertised = summary["results"][0]["authMethods"].as_array().cloned().unwrap_or_default();
    assert_eq!(advertised, Vec::<Value>::new(), "{summary}");
    assert_eq!(summary["results"][1], json!({}), "{summary}");
    assert_eq!(summary["results"][3]["stopReason"], "end_turn", "{summary}");
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-acp-test-key"));
}

/// The `model` option: the next request names the model chosen, the one before it the first.
#[tokio::test(flavor = "multi_thread")]
async fn the_model_option_switches_the_model_of_the_next_request() {
    let Some(python) = python() else { return };
    let (_dir, ws) = workspace();
    let (server, args) = server(vec![Turn::text("One."), Turn::text("Two.")]).await;
    let steps = json!([
        {"initialize": {}}, {"new": {}}, {"prompt": "first"},
        {"set_model": "second-model"}, {"prompt": "second"},
    ]);
    let summary = play(python, &ws, json!({"steps": steps}), args).await;
    let option = |step: usize| summary["results"][step]["configOptions"][0].clone();
    assert_eq!(option(1)["id"], "model", "{summary}");
    assert_eq!(option(1)["currentValue"], "test-model", "{summary}");
    assert_eq!(option(3)["currentValue"], "second-model", "{summary}");
    let models: Vec<Value> = bodies(&server).iter().map(|b| b["model"].clone()).collect();
    assert_eq!(models, [json!("test-model"), json!("second-model")]);
}

/// `session/close` with a background job and a client MCP server running: before the close
/// both processes run; once it is answered neither does, while the agent itself still runs;
/// and the session is gone.
#[tokio::test(flavor = "multi_thread")]
async fn close_ends_the_sessions_processes_while_the_agent_runs_on() {
    let (Some(python), Some(mcp_python)) = (python(), crate::suite::mcp::python()) else { return };
    let (dir, ws) = workspace();
    let marker = format!("acp-close-{}", std::process::id());
    // The MCP server's marker folder names it in its command line.
    let markers = dir.path().join(format!("mcp-{marker}"));
    std::fs::create_dir(&markers).unwrap();
    let sleep = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("sleep"))
        .find(|path| path.is_file())
        .unwrap();
    let job = format!("cp {} ./{marker}; ./{marker} 600", sleep.display());
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new(
            "b1",
            "bash",
            json!({"command": job, "background": true}),
        )]),
        Turn::text("Started."),
    ];
    let (_server, mut args) = server(turns).await;
    args.extend(["--allow".to_owned(), "Bash".to_owned()]);
    let mcp = json!({"name": "py", "command": mcp_python, "env": [],
                     "args": [crate::suite::mcp::py_server(), "--marker-dir", markers]});
    let job_marker = format!("./{marker}");
    let mcp_marker = format!("mcp-{marker}");
    let processes =
        |marker: &str, wait: bool| json!({"processes": {"marker": marker, "wait": wait}});
    let steps = json!([
        {"initialize": {}}, {"new": {"mcpServers": [mcp]}}, {"prompt": "start it"},
        processes(&job_marker, true), processes(&mcp_marker, true),
        {"close": null},
        processes(&job_marker, false), processes(&mcp_marker, false),
        {"prompt": "still there?"},
    ]);
    let summary = play(python, &ws, json!({"steps": steps}), args).await;
    let results = &summary["results"];
    assert_eq!(results[2]["stopReason"], "end_turn", "{summary}");
    // The controls: both ran before the close.
    assert!(!results[3]["pids"].as_array().unwrap().is_empty(), "{summary}");
    assert!(!results[4]["pids"].as_array().unwrap().is_empty(), "{summary}");
    assert!(results[5].get("error").is_none(), "{summary}");
    for after in [&results[6], &results[7]] {
        assert_eq!(after["pids"], json!([]), "survived the close: {summary}");
        assert_eq!(after["agentRunning"], true, "{summary}");
    }
    assert_eq!(results[8]["error"]["code"], -32002, "{summary}");
}

/// MCP servers the client names in `session/new` reach the model: their tools are in the
/// first request, and a call runs on the server; a session without them offers none.
#[tokio::test(flavor = "multi_thread")]
async fn client_mcp_servers_reach_the_model() {
    let (Some(python), Some(mcp_python)) = (python(), crate::suite::mcp::python()) else { return };
    let (dir, ws) = workspace();
    let markers = dir.path().join("markers");
    std::fs::create_dir(&markers).unwrap();
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("m1", "mcp__py__touch", json!({"name": "from-acp"}))]),
        Turn::text("Touched."),
        Turn::text("Plain."),
    ];
    let (server, args) = server(turns).await;
    let mcp = json!({"name": "py", "command": mcp_python, "env": [],
                     "args": [crate::suite::mcp::py_server(), "--marker-dir", markers]});
    let steps = json!([
        {"initialize": {}}, {"new": {"mcpServers": [mcp]}}, {"prompt": "touch it"},
        {"new": {}}, {"prompt": "and without"},
    ]);
    let summary = play(python, &ws, json!({"answer": "allow-once", "steps": steps}), args).await;
    assert_eq!(summary["results"][2]["stopReason"], "end_turn", "{summary}");
    let bodies = bodies(&server);
    let offered = tool_names(&bodies[0]);
    for tool in ["mcp__py__echo", "mcp__py__touch"] {
        assert!(offered.iter().any(|name| name == tool), "{tool} not in {offered:?}");
    }
    let done = updates_of(&summary, "m1").into_iter().find(|u| u["status"] == "completed");
    assert!(done.is_some(), "{summary}");
    assert!(markers.join("from-acp").exists(), "the call never reached the server");
    // The control: the session opened without servers offers none of their tools.
    assert!(!tool_names(&bodies[2]).iter().any(|name| name.starts_with("mcp__py__")));
}
