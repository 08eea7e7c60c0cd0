//! Checkpoint turns under `agent acp`: each `session/prompt` is a turn of its own, as a REPL or
//! `exec` prompt is, so `agent undo` after an editor session takes back the last prompt alone.
//! Driven by the official Python SDK's client (`tests/acp/client.py`) against the scripted model.

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{acp::server, acp_methods::play, agent, stderr, stdout};

/// A model turn that writes `content` to `path` with `write_file`.
fn write(id: &str, path: &str, content: &str) -> Turn {
    Turn::tool_calls([ScriptedCall::new(
        id,
        "write_file",
        json!({"path": path, "content": content}),
    )])
}

/// One session, two prompts: the first writes a.txt, the second rewrites it and creates b.txt.
/// They leave two checkpoints, and `agent undo` takes back the second prompt's writes only.
#[tokio::test(flavor = "multi_thread")]
async fn two_prompts_make_two_checkpoints_and_undo_takes_back_the_second_alone() {
    let Some(python) = agent_test_support::peer_python("acp") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let turns = vec![
        write("w1", "a.txt", "first\n"),
        Turn::text("Wrote a."),
        write("w2", "a.txt", "second\n"),
        write("w3", "b.txt", "new\n"),
        Turn::text("Rewrote a, wrote b."),
    ];
    let (_server, args) = server(turns).await;
    let steps = json!([
        {"initialize": {}}, {"new": {}},
        {"prompt": "write a"}, {"prompt": "rewrite a and write b"},
    ]);
    let summary = play(python, &ws, json!({"answer": "allow-once", "steps": steps}), args).await;
    for step in [2, 3] {
        assert_eq!(summary["results"][step]["stopReason"], "end_turn", "{summary}");
    }
    let read = |name: &str| std::fs::read_to_string(ws.join(name)).ok();
    assert_eq!(read("a.txt").as_deref(), Some("second\n"));
    assert_eq!(read("b.txt").as_deref(), Some("new\n"));

    // The list names the session, so that it shows what the store holds even where a plain
    // `agent undo` would not find the session (no prompt ever began a turn in it).
    let id = summary["results"][1]["sessionId"].as_str().unwrap().to_owned();
    let list = agent(&ws, &["undo", "--session", &id, "--list"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let listed = stdout(&list);
    let checkpoints: Vec<&str> = listed.lines().filter(|line| line.contains(" turn ")).collect();
    assert_eq!(checkpoints.len(), 2, "{listed}");
    assert!(checkpoints[0].contains("turn 1 \"write a\": 1 path(s)"), "{listed}");
    assert!(checkpoints[1].contains("turn 2 \"rewrite a and write b\": 2 path(s)"), "{listed}");

    // The command an editor's user runs: the latest session with checkpoints of the workspace.
    let undo = agent(&ws, &["undo"]);
    assert_eq!(undo.status.code(), Some(0), "{}{}", stdout(&undo), stderr(&undo));
    assert_eq!(read("a.txt").as_deref(), Some("first\n"), "{}", stdout(&undo));
    assert_eq!(read("b.txt"), None, "{}", stdout(&undo));
}
