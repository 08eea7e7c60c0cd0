//! `--replay`: a session recorded against the scripted server plays back offline, tools included.

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, data_dir, exec::exec, session_id, stderr, stdout, transcript};

fn outputs(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|line| line["item"]["type"] == "tool_output")
        .map(|line| line["item"]["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_session_replays_offline_and_the_tools_run_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first draft\n").unwrap();
    let turns = vec![
        Turn::tool_calls([
            ScriptedCall::new("call_u", "uppercase", json!({"text": "hello"})),
            ScriptedCall::new("call_r", "read_file", json!({"path": "notes.txt"})),
        ]),
        Turn::text("Read it."),
    ];
    let (recorded, _) = exec(dir.path(), turns, &["--api", "chat", "exec", "read the notes"]).await;
    assert_eq!(recorded.status.code(), Some(0), "{}", stderr(&recorded));
    let id = session_id(&recorded);
    let recording = data_dir(dir.path()).join("sessions").join(&id).join("transcript.jsonl");
    let first = outputs(&transcript(dir.path(), &id));
    assert!(first[1].contains("first draft"), "{first:?}");

    // No server and no key: the recording is the model. The file changed, so a tool that really
    // runs again sees the new text.
    std::fs::write(dir.path().join("notes.txt"), "second draft\n").unwrap();
    let replay = recording.to_str().unwrap();
    let replayed = agent(dir.path(), &["exec", "--replay", replay, "read the notes"]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    assert_eq!(stdout(&replayed).trim(), "Read it.");
    let again = outputs(&transcript(dir.path(), &session_id(&replayed)));
    assert_eq!(again[0], first[0]);
    assert!(again[1].contains("second draft"), "{again:?}");
}

#[test]
fn a_replay_that_runs_out_of_turns_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    // A recording cut off after a tool call: the second request has nothing left to play.
    let call = json!({"item": {"type": "tool_call", "call_id": "c1", "name": "uppercase",
        "arguments": "{\"text\":\"a\"}"}});
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(
        &cut,
        format!(
            "{}\n{call}\n",
            json!({"item": {"type": "message", "role": "user", "content": "hi"}})
        ),
    )
    .unwrap();
    let output = agent(dir.path(), &["exec", "--replay", cut.to_str().unwrap(), "hi"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("uppercase: ok"), "{}", stderr(&output));
    assert!(stderr(&output).contains("is exhausted: all 1 assistant turns"), "{}", stderr(&output));

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let output = agent(dir.path(), &["exec", "--replay", empty.to_str().unwrap(), "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no assistant turns"), "{}", stderr(&output));
}
