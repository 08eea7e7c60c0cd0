//! `agent serve`'s web page in a real browser: the distribution's Chromium, headless, driven by
//! Playwright for Python (pinned in scripts/peers/serve/). The page asks for the token when it
//! has none, shows a streamed answer and an edit's diff, and its Approve buttons let the edit
//! and then a command run (tests/serve/browser.py). Screenshots are kept under
//! `target/serve-page/`.

use std::process::Command;

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::serve_client::start;

/// The distribution's Chromium, or `None` after saying the check is skipped.
fn chromium() -> Option<std::path::PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|path| path.is_file());
    if found.is_none() {
        agent_test_support::skipped("no Chromium (apt-get install chromium)");
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_asks_for_the_token_streams_the_answer_shows_the_diff_and_approves() {
    let Some(python) = agent_test_support::peer_python("serve") else { return };
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "old\n").unwrap();
    let edit = ScriptedCall::new(
        "e1",
        "edit_file",
        json!({"path": "a.txt", "old_string": "old", "new_string": "new"}),
    );
    let mut first = Turn::tool_calls([edit]);
    first.text = Some("I will **fix** it.".to_owned());
    let run = ScriptedCall::new("b1", "bash", json!({"command": "echo ran > ran.txt"}));
    let turns = [
        Turn::tool_calls([ScriptedCall::new("r1", "read_file", json!({"path": "a.txt"}))]),
        first,
        Turn::tool_calls([run]),
        Turn::text("All done."),
    ];
    let model = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let config = dir.path().join("config.toml");
    let profile = format!("[profiles.p]\nbase_url = \"{}\"\nmodel = \"m\"\n", model.url());
    std::fs::write(&config, profile).unwrap();
    let serve = start(dir.path(), &["--config", config.to_str().unwrap()], &[]);
    let body = json!({"workspace": ws, "profile": "p", "permission_mode": "default"});
    let (status, info) = serve.call("POST", "/v1/sessions", Some(body)).await;
    assert_eq!(status, 201, "{info}");

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../serve-page");
    std::fs::create_dir_all(&shots).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/serve/browser.py");
    let mut command = Command::new(&python);
    command.arg(script).arg(&chromium).args([&serve.base, &serve.token]);
    command.arg(info["id"].as_str().unwrap()).arg(&shots);
    let ran = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    let log = serve.running.stderr_so_far();
    assert!(ran.status.success(), "{out}{}\n{log}", String::from_utf8_lossy(&ran.stderr));
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["asked_for_token"], true);
    assert_eq!(summary["tools_ok"], 3, "{summary}");
    assert!(summary["checkpoints"].as_str().unwrap().contains("a.txt"), "{summary}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");
    assert_eq!(std::fs::read_to_string(ws.join("ran.txt")).unwrap(), "ran\n");
    for shot in ["1-asks-for-the-token", "2-answer-and-diff", "3-command-asks", "4-done"] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "{shot}");
    }
    let _ = serve.running.kill();
}
