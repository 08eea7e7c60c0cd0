//! The checked-in OpenAPI document is true: the server serves it unchanged at its fixed path,
//! and a client generated from it by openapi-python-client (pinned in scripts/peers/serve/)
//! runs a session end to end (tests/serve/client.py).

use std::process::Command;

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::serve_client::start;

const DOCUMENT: &str = include_str!("../../../../docs/serve.openapi.json");

#[tokio::test(flavor = "multi_thread")]
async fn a_client_generated_from_the_document_runs_a_session() {
    let Some(python) = agent_test_support::peer_python("serve") else { return };
    let generator = python.with_file_name("openapi-python-client");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let write = ScriptedCall::new("w1", "write_file", json!({"path": "a.txt", "content": "A\n"}));
    let turns = [Turn::tool_calls([write]), Turn::text("Wrote a.")];
    let model = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let config = dir.path().join("config.toml");
    let profile = format!("[profiles.p]\nbase_url = \"{}\"\nmodel = \"m\"\n", model.url());
    std::fs::write(&config, profile).unwrap();
    let serve = start(dir.path(), &["--config", config.to_str().unwrap()], &[]);

    let (status, served) = serve.call("GET", "/v1/openapi.json", None).await;
    assert_eq!(status, 200);
    assert_eq!(served, serde_json::from_str::<Value>(DOCUMENT).unwrap(), "served as committed");

    let generated = dir.path().join("generated");
    std::fs::create_dir(&generated).unwrap();
    let made = Command::new(&generator)
        .args(["generate", "--meta", "none", "--output-path", "agent_client", "--path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/serve.openapi.json"))
        .current_dir(&generated)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&made.stdout).into_owned();
    assert!(made.status.success(), "{said}{}", String::from_utf8_lossy(&made.stderr));
    // Every operation of the document became a function: the generator skipped none.
    assert!(!said.contains("will not be generated"), "{said}");

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/serve/client.py");
    let mut command = Command::new(&python);
    command.arg(script).arg(&generated).args([&serve.base, &serve.token]).arg(&ws).arg("p");
    let ran = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    assert!(ran.status.success(), "{out}{}", String::from_utf8_lossy(&ran.stderr));
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["listed"], json!([summary["id"]]), "{summary}");
    assert_eq!(summary["pending_tool"], "write_file", "{summary}");
    assert_eq!(summary["answer_status"], 204, "{summary}");
    let types: Vec<&str> =
        summary["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"run.started"), "{summary}");
    assert_eq!(types.last(), Some(&"run.completed"), "{summary}");
    assert_eq!(summary["items"], json!(["message", "tool_call", "tool_output", "message"]));
    assert_eq!(summary["checkpoints"], json!([["a.txt"]]), "{summary}");
    assert_eq!(summary["removed"], json!(["a.txt"]), "the undo through the client took it back");
    assert!(!ws.join("a.txt").exists());
    assert_eq!(summary["close_status"], 204);
    let _ = serve.running.kill();
}
