//! The plan and a child through a long session's life: three compactions, a `--replay` (which
//! plays the child back from its own recording) and a `--resume`, the plan unchanged by each.

use std::path::Path;

use agent_exec::compaction::SUMMARY_MARKER;
use agent_model::scripted::{RecordedRequest, Script, ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{
    agent,
    agents::{answered, config, plan_call, run, session_dir, task},
    data_dir, json_events, stderr, stdout,
};

const CHECKLIST: &str = "[x] 1. read the code\n[>] 2. fix the bug\n[ ] 3. run the tests";
const READS: usize = 12;

/// The last plan in a session folder's `plan.jsonl`, and how many changes it holds.
fn last_plan(folder: &Path) -> (Value, usize) {
    let log = std::fs::read_to_string(folder.join("plan.jsonl")).unwrap();
    let lines: Vec<Value> = log.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    (lines.last().unwrap()["plan"].clone(), lines.len())
}

/// The model's own requests: neither a summary request nor a child's.
fn parents(requests: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    requests
        .iter()
        .filter(|r| !r.body.contains(SUMMARY_MARKER) && !r.body.contains("read-only explorer"))
        .collect()
}

/// Files of about 10,000 tokens each, so three recent turns pass the compaction threshold and
/// only a summary (not shrinking old outputs) brings a request back under it.
fn big_files(dir: &Path) {
    for part in 0..READS {
        let line = format!("part {part}: the quick brown fox jumps over the lazy dog again\n");
        std::fs::write(dir.join(format!("big{part}.txt")), line.repeat(600)).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_survives_three_compactions_a_replay_and_a_resume_and_the_child_replays() {
    let dir = tempfile::tempdir().unwrap();
    big_files(dir.path());
    std::fs::write(dir.path().join("notes.txt"), "the bug is in \"OUTA\" land\n").unwrap();
    let plan = json!([
        {"id": null, "step": "read the code", "status": "completed"},
        {"id": null, "step": "fix the bug", "status": "in_progress"},
        {"id": null, "step": "run the tests", "status": "pending"},
    ]);
    let mut turns =
        vec![Turn::tool_calls([plan_call("p1", plan), task("t1", "explore", "find \"A1\"")])];
    for part in 0..READS {
        let read = json!({"path": format!("big{part}.txt")});
        turns.push(Turn::tool_calls([ScriptedCall::new(format!("r{part}"), "read_file", read)]));
    }
    turns.push(Turn::text("done"));
    let grep =
        ScriptedCall::new("g1", "grep", json!({"pattern": "OUTA", "output_mode": "content"}));
    let script = Script::new(turns)
        .with_standing(SUMMARY_MARKER, Turn::text("SUMMARY: reading the big files."))
        .with_standing("\"g1\"", Turn::text("child found OUTA in notes.txt"))
        .with_standing("\\\"A1\\\"", Turn::tool_calls([grep]));
    let config = config(dir.path(), "[limits]\noutput_cap = 100000\n");
    let args = ["--config", &config, "--context-window", "32768", "exec", "--json", "fix it"];
    let (output, requests) = run(dir.path(), script, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_events(&output);
    let summaries =
        events.iter().filter(|e| e["type"] == "compaction" && e["summarized"] == true).count();
    assert!(summaries >= 3, "only {summaries} summarized compactions");
    let child = answered(&requests, "t1");
    assert!(child.starts_with("child found OUTA in notes.txt\n\n[agent explore · "), "{child}");

    // Every request after the first summary carries the plan, exactly as the book holds it.
    let escaped = serde_json::to_string(CHECKLIST).unwrap();
    let escaped = escaped.trim_matches('"');
    let after: Vec<_> = parents(&requests)
        .into_iter()
        .skip_while(|r| !r.body.contains("Ledger of the compacted turns"))
        .collect();
    assert!(after.len() > 3, "{} requests after the first compaction", after.len());
    for request in &after {
        assert!(
            request.body.contains("The plan (1 of 3 done; kept verbatim"),
            "{:.2000}",
            request.body
        );
        assert!(request.body.contains(escaped), "the checklist changed: {:.2000}", request.body);
    }
    let folder = session_dir(dir.path(), &events);
    let (recorded_plan, changes) = last_plan(&folder);
    assert_eq!(changes, 1);

    // The replay: no server. The parent's calls run again, and the child plays its own recording
    // (its grep runs again too), so the plan and the child's answer come back the same.
    let recording = folder.join("transcript.jsonl");
    let replay_args =
        ["--config", &config, "exec", "--json", "--replay", recording.to_str().unwrap(), "fix it"];
    let replayed = agent(dir.path(), &replay_args);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let replay_events = json_events(&replayed);
    assert_eq!(replay_events.last().unwrap()["answer"], "done", "{}", stdout(&replayed));
    let replay_folder = session_dir(dir.path(), &replay_events);
    assert_ne!(replay_folder, folder);
    assert_eq!(last_plan(&replay_folder), (recorded_plan.clone(), 1), "the replayed plan differs");
    let replayed_child = task_output(&replay_folder.join("transcript.jsonl"), "t1");
    assert!(
        replayed_child.starts_with("child found OUTA in notes.txt\n\n[agent explore · "),
        "{replayed_child}"
    );
    let child_transcript = std::fs::read_to_string(
        replay_folder
            .join("children")
            .join(format!("{}.c1.jsonl", replay_events[0]["session_id"].as_str().unwrap())),
    )
    .unwrap();
    assert!(child_transcript.contains("OUTA"), "the child's grep did not run again");

    // The resume: the first request carries the plan, and an added step gets the next id.
    let id = events[0]["session_id"].as_str().unwrap().to_owned();
    let add = ScriptedCall::new(
        "p2",
        "update_plan",
        json!({"explanation": null, "plan": null, "ops": [{"op": "add", "id": null, "text": "ship it", "status": null}]}),
    );
    let script = Script::new([
        Turn::tool_calls([add, task("t2", "explore", "again \"B1\"")]),
        Turn::text("going on"),
    ])
    .with_standing("\\\"B1\\\"", Turn::text("child two"));
    let children = folder.join("children");
    let first_child = std::fs::read_to_string(children.join(format!("{id}.c1.jsonl"))).unwrap();
    let args = ["--config", &config, "--context-window", "32768", "exec", "--resume", &id, "go on"];
    let (output, requests) = run(dir.path(), script, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(requests[0].body.contains(escaped), "the resumed request lost the plan");
    let (plan, changes) = last_plan(&folder);
    assert_eq!(changes, 2);
    assert_eq!(
        plan["items"].as_array().unwrap()[..3],
        recorded_plan["items"].as_array().unwrap()[..]
    );
    assert_eq!(plan["items"][3], json!({"id": "4", "text": "ship it", "status": "pending"}));
    // The resumed session's child is numbered after the first, which it leaves alone.
    assert!(answered(&requests, "t2").starts_with("child two"));
    let again = std::fs::read_to_string(children.join(format!("{id}.c1.jsonl"))).unwrap();
    assert_eq!(again, first_child, "the resumed child wrote into the first child's transcript");
    assert!(children.join(format!("{id}.c2.jsonl")).exists());
}

/// The output of `call_id` in a transcript file.
fn task_output(path: &Path, call_id: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["item"]["type"] == "tool_output" && line["item"]["call_id"] == call_id)
        .and_then(|line| line["item"]["output"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no output of {call_id} in {}", path.display()))
}

#[test]
fn a_replayed_task_without_a_recorded_child_is_refused_clearly() {
    // A recording whose parent called `task` but whose folder holds no child: the replayed call
    // says so instead of asking a model that is not there.
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("rec.jsonl");
    let lines = [
        json!({"item": {"type": "message", "role": "user", "content": "go"}}),
        json!({"item": {"type": "tool_call", "call_id": "t9", "name": "task",
            "arguments": "{\"description\":\"d\",\"prompt\":\"p\",\"agent\":\"explore\"}"}}),
        json!({"item": {"type": "tool_output", "call_id": "t9", "output": "x", "ok": true}}),
        json!({"item": {"type": "message", "role": "assistant", "content": "done"}}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&recording, text).unwrap();
    let config = config(dir.path(), "");
    let args = ["--config", &config, "exec", "--replay", recording.to_str().unwrap(), "go"];
    let output = agent(dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = crate::suite::session_id(&output);
    let path = data_dir(dir.path()).join("sessions").join(id).join("transcript.jsonl");
    let refusal = task_output(&path, "t9");
    assert!(
        refusal.contains("the replayed recording holds no child of the call `t9`"),
        "{refusal}"
    );
}
