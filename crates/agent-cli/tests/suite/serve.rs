//! `agent serve`: two sessions over HTTP, each against its own scripted model (one profile
//! each), running tool calls that ask, answered over HTTP; an event stream dropped and resumed
//! with `Last-Event-ID`; every event checked against the `exec --json` schema; transcript,
//! checkpoints, undo and fork through the API (docs/serve.md).

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{
    DEADLINE, all_gone, processes_with,
    serve_client::{Serve, check_events, start},
};

/// A config file with one profile per scripted model.
fn config(dir: &std::path::Path, profiles: &[(&str, &ScriptedServer)]) -> String {
    let mut text = String::new();
    for (name, server) in profiles {
        text.push_str(&format!(
            "[profiles.{name}]\nbase_url = \"{}\"\nmodel = \"model-{name}\"\n\n",
            server.url()
        ));
    }
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Opens a session in `workspace` with `profile`; its info.
async fn open(serve: &Serve, workspace: &std::path::Path, profile: &str) -> Value {
    let body = json!({"workspace": workspace, "profile": profile});
    let (status, info) = serve.call("POST", "/v1/sessions", Some(body)).await;
    assert_eq!(status, 201, "{info}\n{}", serve.running.stderr_so_far());
    info
}

/// The one approval waiting in `session`; answers it `decision`.
async fn approve(serve: &Serve, session: &str, decision: &str) -> Value {
    let (status, list) =
        serve.call("GET", &format!("/v1/sessions/{session}/approvals"), None).await;
    assert_eq!(status, 200);
    let pending = list.as_array().unwrap();
    assert_eq!(pending.len(), 1, "{list}");
    let id = pending[0]["id"].as_u64().unwrap();
    let path = format!("/v1/sessions/{session}/approvals/{id}");
    let (status, _) = serve.call("POST", &path, Some(json!({"decision": decision}))).await;
    assert_eq!(status, 204);
    pending[0].clone()
}

/// The user prompts in `events`.
fn prompts(events: &[(u64, Value)]) -> Vec<String> {
    events
        .iter()
        .filter(|(_, e)| e["type"] == "item.added" && e["item"]["role"] == "user")
        .map(|(_, e)| e["item"]["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_sessions_run_tool_calls_approved_over_http_and_a_stream_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (ws_a, ws_b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&ws_a).unwrap();
    std::fs::create_dir(&ws_b).unwrap();
    let write = ScriptedCall::new("wa", "write_file", json!({"path": "a.txt", "content": "A\n"}));
    let model_a =
        ScriptedServer::start(Script::new([Turn::tool_calls([write]), Turn::text("Wrote a.")]))
            .await
            .unwrap();
    let run = ScriptedCall::new("rb", "bash", json!({"command": "echo from-b > b.txt"}));
    let model_b =
        ScriptedServer::start(Script::new([Turn::tool_calls([run]), Turn::text("Ran it.")]))
            .await
            .unwrap();
    let config = config(dir.path(), &[("a", &model_a), ("b", &model_b)]);
    let serve = start(dir.path(), &["--config", &config], &[]);

    let a = open(&serve, &ws_a, "a").await;
    let b = open(&serve, &ws_b, "b").await;
    let (id_a, id_b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    assert_eq!((a["model"].as_str(), b["model"].as_str()), (Some("model-a"), Some("model-b")));
    assert_eq!(a["permission_mode"], "default", "{a}");
    let (_, listed) = serve.call("GET", "/v1/sessions", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");

    let mut stream_a = serve.events(id_a, 0).await;
    let mut stream_b = serve.events(id_b, 0).await;
    for (id, text) in [(id_a, "write a"), (id_b, "run b")] {
        let path = format!("/v1/sessions/{id}/prompt");
        let (status, accepted) = serve.call("POST", &path, Some(json!({"text": text}))).await;
        assert_eq!((status, &accepted["after"]), (202, &json!(0)), "{accepted}");
    }
    // A second prompt while one runs is refused, and changes nothing.
    let path = format!("/v1/sessions/{id_a}/prompt");
    let (status, _) = serve.call("POST", &path, Some(json!({"text": "again"}))).await;
    assert_eq!(status, 409);

    // A: the write waits for its approval, which comes over HTTP.
    let mut events_a = stream_a.until("approval.requested").await;
    assert!(!ws_a.join("a.txt").exists(), "written before approval");
    let asked = approve(&serve, id_a, "allow_once").await;
    assert_eq!(asked["tool"], "write_file");
    events_a.extend(stream_a.until("run.completed").await);
    assert_eq!(std::fs::read_to_string(ws_a.join("a.txt")).unwrap(), "A\n");

    // B: the stream drops while the approval waits; what happens meanwhile is not lost.
    let seen_b = stream_b.until("approval.requested").await;
    drop(stream_b);
    approve(&serve, id_b, "allow_once").await;
    let last_seen = seen_b.last().unwrap().0;
    let mut resumed = serve.events(id_b, last_seen).await;
    let rest_b = resumed.until("run.completed").await;
    assert_eq!(rest_b[0].0, last_seen + 1, "the resumed stream starts right after the last seen");
    assert_eq!(std::fs::read_to_string(ws_b.join("b.txt")).unwrap(), "from-b\n");
    let events_b: Vec<(u64, Value)> = seen_b.into_iter().chain(rest_b).collect();
    // Exactly the missed events: a replay of the whole run from the start is the same.
    let mut replay = serve.events(id_b, 0).await;
    let replayed = replay.until("run.completed").await;
    assert_eq!(replayed, events_b);

    for (events, id, own, other) in
        [(&events_a, id_a, "write a", "run b"), (&events_b, id_b, "run b", "write a")]
    {
        check_events(events);
        assert_eq!(events[0].1["session_id"], id, "{events:?}");
        assert_eq!(prompts(events), [own], "no event of the other session: {other}");
        let tools: Vec<&Value> =
            events.iter().filter(|(_, e)| e["type"] == "tool.completed").map(|(_, e)| e).collect();
        assert_eq!(tools.len(), 1, "{events:?}");
        assert_eq!(tools[0]["ok"], true, "{events:?}");
    }
    history(&serve, id_a, &ws_a).await;
    let _ = serve.running.kill();
}

/// Transcript, checkpoints, undo and fork of session `id`, whose one prompt wrote a.txt.
async fn history(serve: &Serve, id: &str, workspace: &std::path::Path) {
    let (status, transcript) =
        serve.call("GET", &format!("/v1/sessions/{id}/transcript"), None).await;
    assert_eq!(status, 200);
    let types: Vec<&str> = transcript["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["message", "tool_call", "tool_output", "message"], "{transcript}");

    let (_, checkpoints) = serve.call("GET", &format!("/v1/sessions/{id}/checkpoints"), None).await;
    let list = checkpoints.as_array().unwrap();
    assert_eq!(list.len(), 1, "{checkpoints}");
    assert_eq!((&list[0]["prompt"], &list[0]["paths"]), (&json!("write a"), &json!(["a.txt"])));

    let (status, fork) =
        serve.call("POST", &format!("/v1/sessions/{id}/fork"), Some(json!({}))).await;
    assert_eq!(status, 201, "{fork}\n{}", serve.running.stderr_so_far());
    let forked = fork["id"].as_str().unwrap();
    assert_ne!(forked, id);
    let (_, copy) = serve.call("GET", &format!("/v1/sessions/{forked}/transcript"), None).await;
    assert_eq!(copy, transcript, "the fork has the whole history");

    let (status, undone) =
        serve.call("POST", &format!("/v1/sessions/{id}/undo"), Some(json!({}))).await;
    assert_eq!(status, 200, "{undone}");
    assert_eq!(undone["removed"], json!(["a.txt"]), "{undone}");
    assert!(!workspace.join("a.txt").exists(), "{undone}");
    let (status, _) = serve.call("DELETE", &format!("/v1/sessions/{forked}"), None).await;
    assert_eq!(status, 204);
    let (status, _) = serve.call("GET", &format!("/v1/sessions/{forked}"), None).await;
    assert_eq!(status, 404);
}

/// Cancelling over HTTP ends the run (`run.failed`, `cancelled`) and kills the command it ran;
/// the session takes the next prompt.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_ends_the_run_and_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let marker = "31.4159";
    let call = ScriptedCall::new("s1", "bash", json!({"command": format!("sleep {marker}")}));
    let turns = [Turn::tool_calls([call]), Turn::text("Next answer.")];
    let model = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let config = config(dir.path(), &[("m", &model)]);
    let serve = start(dir.path(), &["--config", &config], &[]);
    let body = json!({"workspace": ws, "profile": "m", "permission_mode": "bypass"});
    let (_, info) = serve.call("POST", "/v1/sessions", Some(body)).await;
    let id = info["id"].as_str().unwrap();
    let mut stream = serve.events(id, 0).await;
    let path = format!("/v1/sessions/{id}/prompt");
    serve.call("POST", &path, Some(json!({"text": "sleep"}))).await;
    stream.until("tool.started").await;
    let start = std::time::Instant::now();
    while processes_with(marker).is_empty() {
        assert!(start.elapsed() < DEADLINE, "the command never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (status, _) = serve.call("POST", &format!("/v1/sessions/{id}/cancel"), None).await;
    assert_eq!(status, 204);
    let events = stream.until("run.failed").await;
    assert_eq!(events.last().unwrap().1["reason"], "cancelled", "{events:?}");
    all_gone(marker);
    let (status, _) = serve.call("POST", &path, Some(json!({"text": "next"}))).await;
    assert_eq!(status, 202, "the session takes the next prompt");
    stream.until("run.completed").await;
    let _ = serve.running.kill();
}
