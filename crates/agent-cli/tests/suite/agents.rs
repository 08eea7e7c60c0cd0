//! The plan and child agents end to end: `agent exec` against the scripted server, with the real
//! tools and sandbox. Children are told apart in the server's log by markers in their prompts
//! (`\"A1\"`: a quoted word, which a parent's request holds only escaped twice, inside the
//! `task` call's arguments), and answered by standing answers keyed on them.

use std::path::Path;

use agent_model::scripted::{RecordedRequest, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, data_dir, json_events, stderr};

/// Runs `agent exec` with `script`; the POST requests the server saw, in arrival order.
pub(crate) async fn run(
    dir: &Path,
    script: Script,
    args: &[&str],
) -> (std::process::Output, Vec<RecordedRequest>) {
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let mut full: Vec<String> =
        ["--base-url", &url, "--model", "m", "--api", "chat"].map(String::from).to_vec();
    if !args.contains(&"--config") {
        full.extend(["--config".to_owned(), config(dir, "")]);
    }
    full.extend(args.iter().map(|arg| (*arg).to_owned()));
    let dir = dir.to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = full.iter().map(String::as_str).collect();
        agent(&dir, &args)
    })
    .await
    .unwrap();
    let posts = server.requests().into_iter().filter(|r| r.method == "POST").collect();
    (output, posts)
}

pub(crate) fn task(id: &str, agent: &str, prompt: &str) -> ScriptedCall {
    ScriptedCall::new(id, "task", json!({"description": "look", "prompt": prompt, "agent": agent}))
}

pub(crate) fn plan_call(id: &str, plan: Value) -> ScriptedCall {
    ScriptedCall::new(id, "update_plan", json!({"explanation": null, "plan": plan, "ops": null}))
}

/// The text of the tool output for `call_id` in a chat request.
pub(crate) fn output_of(request: &RecordedRequest, call_id: &str) -> String {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no output for {call_id} in {body}"))
}

/// The first request that carries the output of `call_id`.
pub(crate) fn answered(requests: &[RecordedRequest], call_id: &str) -> String {
    let key = format!("\"tool_call_id\":\"{call_id}\"");
    let request = requests.iter().find(|r| r.body.contains(&key));
    output_of(request.unwrap_or_else(|| panic!("no request answers {call_id}")), call_id)
}

/// The index of the first request whose body contains `text`.
pub(crate) fn first(requests: &[RecordedRequest], text: &str) -> usize {
    requests
        .iter()
        .position(|r| r.body.contains(text))
        .unwrap_or_else(|| panic!("no request holds {text}"))
}

pub(crate) fn session_dir(dir: &Path, events: &[Value]) -> std::path::PathBuf {
    let id = events[0]["session_id"].as_str().unwrap();
    data_dir(dir).join("sessions").join(id)
}

/// Writes the config file (with the two tools enabled, then `toml`) and returns its path.
pub(crate) fn config(dir: &Path, toml: &str) -> String {
    let path = dir.join("config.toml");
    let toml = match toml.strip_prefix("[agents]\n") {
        Some(rest) => format!("[agents]\nenabled = true\n{rest}"),
        None => format!("[agents]\nenabled = true\n\n{toml}"),
    };
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

/// A `task` observation with what changes from run to run (ids, seconds, paths) replaced, for
/// its snapshot.
fn stable(text: &str) -> String {
    let line = |line: &str| {
        let Some(inner) = line.strip_prefix("[agent ") else { return line.to_owned() };
        let parts: Vec<String> = inner
            .trim_end_matches(']')
            .split(" · ")
            .enumerate()
            .map(|(at, part)| match part {
                _ if at == 1 => "<agent id>".to_owned(),
                _ if part.starts_with("transcript ") => "transcript <path>".to_owned(),
                _ if part.trim_end_matches('s').parse::<f64>().is_ok() => "<secs>".to_owned(),
                _ => part.to_owned(),
            })
            .collect();
        format!("[agent {}]", parts.join(" · "))
    };
    // A refusal is the JSON error the model reads, with the usage line inside its message.
    if let Ok(mut error) = serde_json::from_str::<Value>(text) {
        let message = error["message"].as_str().map(stable).unwrap_or_default();
        error["message"] = Value::String(message);
        return error.to_string();
    }
    text.lines().map(line).collect::<Vec<_>>().join("\n")
}

pub(crate) fn define(dir: &Path, name: &str, front: &str) {
    std::fs::create_dir_all(dir.join(".agent/agents")).unwrap();
    let text = format!("---\nname: {name}\ndescription: test agent\n{front}---\nDo it.\n");
    std::fs::write(dir.join(format!(".agent/agents/{name}.md")), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_is_kept_refuses_a_silent_drop_and_survives_resume() {
    let dir = tempfile::tempdir().unwrap();
    let first_plan = json!([{"id": null, "step": "read", "status": "in_progress"}, {"id": null, "step": "fix", "status": "pending"}]);
    let dropping = json!([{"id": "1", "step": "read", "status": "completed"}]);
    let turns = vec![
        Turn::tool_calls([plan_call("p1", first_plan)]),
        Turn::tool_calls([plan_call("p2", dropping)]),
        Turn::text("planned"),
    ];
    let (output, requests) =
        run(dir.path(), Script::new(turns), &["exec", "--json", "plan it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let refused = output_of(&requests[2], "p2");
    assert!(refused.contains("leaves out unfinished items: `2` (fix)"), "{refused}");
    insta::assert_snapshot!("update_plan_accepted", output_of(&requests[1], "p1"));
    insta::assert_snapshot!("update_plan_refuses_a_silent_drop", refused);
    let events = json_events(&output);
    let plans: Vec<&Value> = events.iter().filter(|e| e["type"] == "plan.updated").collect();
    assert_eq!(plans.len(), 1, "only the accepted change is an event: {plans:?}");
    assert_eq!(plans[0]["plan_schema_version"], 1);
    assert_eq!(
        plans[0]["plan"]["items"][1],
        json!({"id": "2", "text": "fix", "status": "pending"})
    );
    let folder = session_dir(dir.path(), &events);
    let log = std::fs::read_to_string(folder.join("plan.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");

    // Resumed, the same plan goes on: an operation on item 2 finds it.
    let id = events[0]["session_id"].as_str().unwrap().to_owned();
    let op = ScriptedCall::new(
        "p3",
        "update_plan",
        json!({"explanation": null, "plan": null, "ops": [{"op": "set_status", "id": "2", "text": null, "status": "completed"}]}),
    );
    let turns = vec![Turn::tool_calls([op]), Turn::text("going on")];
    let (output, requests) =
        run(dir.path(), Script::new(turns), &["exec", "--json", "--resume", &id, "go on"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = output_of(&requests[1], "p3");
    assert!(text.contains("[>] 1. read\n[x] 2. fix"), "{text}");
    assert_eq!(std::fs::read_to_string(folder.join("plan.jsonl")).unwrap().lines().count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_writes_the_plan_and_refuses_an_edit() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!([{"id": null, "step": "change a.txt", "status": "pending"}]);
    let write = ScriptedCall::new("w", "write_file", json!({"path": "a.txt", "content": "x"}));
    let turns = vec![Turn::tool_calls([plan_call("p", plan), write]), Turn::text("planned")];
    let args = ["--permission-mode", "plan", "exec", "plan only"];
    let (output, requests) = run(dir.path(), Script::new(turns), &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(output_of(&requests[1], "p").contains("[ ] 1. change a.txt"));
    assert!(!output_of(&requests[1], "w").contains("wrote"));
    assert!(!dir.path().join("a.txt").exists(), "plan mode wrote a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_explore_children_overlap_and_their_usage_rolls_up() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha \"OUTA\"\nbeta \"OUTB\"\n").unwrap();
    let grep = |id: &str, pattern: &str| {
        ScriptedCall::new(id, "grep", json!({"pattern": pattern, "output_mode": "content"}))
    };
    let script = Script::new([
        Turn::tool_calls([
            task("ta", "explore", "inspect \"A1\""),
            task("tb", "explore", "inspect \"B1\""),
        ]),
        Turn::text("both done"),
    ])
    .with_standing("\\\"OUTA\\\"", Turn::text("A found alpha"))
    .with_standing("\\\"OUTB\\\"", Turn::text("B found beta"))
    .with_standing("\\\"A1\\\"", Turn::tool_calls([grep("ga", "OUTA")]))
    .with_standing("\\\"B1\\\"", Turn::tool_calls([grep("gb", "OUTB")]));
    let (output, requests) = run(dir.path(), script, &["exec", "--json", "explore"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Both children sent their first request before either sent its second: they ran at once.
    let (a1, b1) = (first(&requests, "\\\"A1\\\""), first(&requests, "\\\"B1\\\""));
    let (a2, b2) = (first(&requests, "\\\"OUTA\\\""), first(&requests, "\\\"OUTB\\\""));
    assert!(a1.max(b1) < a2.min(b2), "no overlap: A {a1},{a2} B {b1},{b2}");
    // The explore child is offered read-only tools only, and neither the plan nor `task`.
    let offered: Vec<String> = requests[a1].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for wanted in ["read_file", "grep", "list_dir"] {
        assert!(offered.iter().any(|name| name == wanted), "{wanted} missing: {offered:?}");
    }
    for unwanted in ["bash", "write_file", "edit_file", "apply_patch", "update_plan", "task"] {
        assert!(!offered.iter().any(|name| name == unwanted), "{unwanted} offered: {offered:?}");
    }
    let last = requests.last().unwrap();
    let answer = output_of(last, "ta");
    assert!(answer.starts_with("A found alpha\n\n[agent explore · "), "{answer}");
    insta::assert_snapshot!("task_answered", stable(&answer));
    let events = json_events(&output);
    let end = events.last().unwrap();
    let children = &end["child_usage"];
    assert!(children["input_tokens"].as_u64().unwrap() >= 4 * 42, "{end}");
    let parent_input = 2 * 42;
    assert_eq!(
        end["cumulative_usage"]["input_tokens"].as_u64().unwrap(),
        parent_input + children["input_tokens"].as_u64().unwrap(),
        "{end}"
    );
    let session = events[0]["session_id"].as_str().unwrap();
    let child_events: Vec<&Value> = events.iter().filter(|e| e["type"] == "agent.event").collect();
    assert!(!child_events.is_empty());
    for event in &child_events {
        assert_eq!(event["parent_id"], session, "{event}");
        assert_eq!(event["agent"], "explore", "{event}");
        let id = event["agent_id"].as_str().unwrap();
        assert!(
            [".c1", ".c2"].map(|n| format!("{session}{n}")).contains(&id.to_owned()),
            "{event}"
        );
    }
    let folder = session_dir(dir.path(), &events).join("children");
    let transcripts = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl") && name != "index.jsonl");
    assert_eq!(transcripts.count(), 2, "{}", folder.display());
    // The index links each child to the call that started it.
    let index = std::fs::read_to_string(folder.join("index.jsonl")).unwrap();
    let mut calls: Vec<String> = index
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["call_id"].to_string())
        .collect();
    calls.sort();
    assert_eq!(calls, ["\"ta\"", "\"tb\""], "{index}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_capable_child_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let list = |id: &str| ScriptedCall::new(id, "list_dir", json!({"path": "."}));
    let script = Script::new([
        Turn::tool_calls([
            task("ta", "general", "work \"A1\""),
            task("tb", "general", "work \"B1\""),
        ]),
        Turn::text("both done"),
    ])
    .with_standing("\"la\"", Turn::text("A done"))
    .with_standing("\"lb\"", Turn::text("B done"))
    .with_standing("\\\"A1\\\"", Turn::tool_calls([list("la")]))
    .with_standing("\\\"B1\\\"", Turn::tool_calls([list("lb")]));
    let (output, requests) = run(dir.path(), script, &["exec", "work"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (a1, b1) = (first(&requests, "\\\"A1\\\""), first(&requests, "\\\"B1\\\""));
    let (a2, b2) = (first(&requests, "\"la\""), first(&requests, "\"lb\""));
    assert!(a2 < b1 || b2 < a1, "write-capable children overlapped: A {a1},{a2} B {b1},{b2}");
}

/// A child runs `rm victim.txt` under a parent in bypass mode; `hooks` is the config file.
async fn child_removes(hooks: &str) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("victim.txt"), "keep me").unwrap();
    let config = config(dir.path(), hooks);
    let rm = ScriptedCall::new("rm", "bash", json!({"command": "rm victim.txt"}));
    let script =
        Script::new([Turn::tool_calls([task("t", "general", "clean \"A1\"")]), Turn::text("done")])
            .with_standing("\"rm\"", Turn::text("tried"))
            .with_standing("\\\"A1\\\"", Turn::tool_calls([rm]));
    let args = ["--config", &config, "--permission-mode", "bypass", "exec", "--json", "clean"];
    let (output, _) = run(dir.path(), script, &args).await;
    (dir, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_tool_use_hook_blocks_rm_inside_a_child() {
    let hook = "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"cat > hook-input.json; grep -q 'rm ' hook-input.json && exit 2; exit 0\"\n";
    let (dir, output) = child_removes(hook).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.path().join("victim.txt").exists(), "the hook did not block rm in the child");
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("hook-input.json")).unwrap())
            .unwrap();
    let events = json_events(&output);
    let session = events[0]["session_id"].as_str().unwrap();
    assert_eq!(input["session_id"], session, "{input}");
    assert_eq!(input["agent_id"], format!("{session}.c1"), "{input}");
    assert_eq!(input["agent_type"], "general");
    // The control: without the hook the same child removes the file.
    let (dir, output) = child_removes("").await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!dir.path().join("victim.txt").exists(), "the control did not remove the file");
}

/// A project agent that lists `bash` runs `touch made.txt`; whether the file exists after.
async fn child_touches(front: &str, args: &[&str]) -> bool {
    let dir = tempfile::tempdir().unwrap();
    define(dir.path(), "sh", front);
    let touch = ScriptedCall::new("touch", "bash", json!({"command": "touch made.txt"}));
    let script =
        Script::new([Turn::tool_calls([task("t", "sh", "make \"A1\"")]), Turn::text("done")])
            .with_standing("\"touch\"", Turn::text("tried"))
            .with_standing("\\\"A1\\\"", Turn::tool_calls([touch]));
    let mut full = args.to_vec();
    full.extend(["exec", "make it"]);
    let (output, _) = run(dir.path(), script, &full).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    dir.path().join("made.txt").exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_never_widens_the_parent() {
    let bypass = "tools: bash\npermission_mode: bypass\n";
    assert!(!child_touches(bypass, &["--permission-mode", "default"]).await, "bypass was granted");
    assert!(child_touches(bypass, &["--permission-mode", "bypass"]).await, "the control failed");
    let deny = ["--permission-mode", "bypass", "--deny", "Bash(touch *)"];
    assert!(!child_touches("tools: bash\n", &deny).await, "the parent's deny rule did not hold");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_turns_depth_and_the_session_ceiling_stop_children() {
    let dir = tempfile::tempdir().unwrap();
    define(dir.path(), "loop", "max_turns: 2\n");
    let list = ScriptedCall::new("l", "list_dir", json!({"path": "."}));
    let nested = task("nested", "explore", "deeper");
    let script = Script::new([
        Turn::tool_calls([task("t1", "loop", "spin \"L1\"")]),
        Turn::tool_calls([task("t2", "general", "nest \"N1\"")]),
        Turn::text("done"),
    ])
    .with_standing("depth limit is 1", Turn::text("refused, fine"))
    .with_standing("\\\"L1\\\"", Turn::tool_calls([list]))
    .with_standing("\\\"N1\\\"", Turn::tool_calls([nested]));
    let (output, requests) = run(dir.path(), script, &["exec", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let stopped = answered(&requests, "t1");
    assert!(
        stopped.contains("stopped at its max_turns limit (2)") && stopped.contains("list_dir ×2"),
        "{stopped}"
    );
    insta::assert_snapshot!("task_stopped_at_max_turns", stable(&stopped));
    let loops = requests.iter().filter(|r| r.body.contains("\\\"L1\\\"")).count();
    assert_eq!(loops, 2, "the child took more than two turns");
    let refusal = answered(&requests, "nested");
    assert!(refusal.contains("depth limit is 1 (max_depth)"), "{refusal}");
    insta::assert_snapshot!("task_refused_at_the_depth_limit", refusal);
    // The child at the depth limit is not even offered `task`: its call is refused all the same.
    let child = &requests[first(&requests, "\\\"N1\\\"")];
    let offered: Vec<Value> = child.json()["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = offered.iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(!names.contains(&"task") && names.contains(&"list_dir"), "{names:?}");

    // The ceiling: each child answers in one turn of 43 tokens; 86 lets two run, not a third.
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "[agents]\nsession_tokens = 86\n");
    let calls = [
        task("c1", "explore", "x \"A1\""),
        task("c2", "explore", "x \"B1\""),
        task("c3", "explore", "x \"C1\""),
    ];
    let script = Script::new([
        Turn::tool_calls(calls[..2].to_vec()),
        Turn::tool_calls(calls[2..].to_vec()),
        Turn::text("done"),
    ])
    .with_standing("\\\"A1\\\"", Turn::text("ok"))
    .with_standing("\\\"B1\\\"", Turn::text("ok"))
    .with_standing("\\\"C1\\\"", Turn::text("ok"));
    let (output, requests) =
        run(dir.path(), script, &["--config", &config, "exec", "--json", "three"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!requests.iter().any(|r| r.body.contains("\\\"C1\\\"")), "the third child ran");
    let third = answered(&requests, "c3");
    assert!(third.contains("session_tokens limit (86 tokens)"), "{third}");
    insta::assert_snapshot!("task_stopped_by_the_session_ceiling", stable(&third));
    let end = json_events(&output).pop().unwrap();
    assert_eq!(end["child_usage"]["input_tokens"], 84, "{end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_child_leaves_no_process_of_it() {
    use crate::suite::{Running, all_gone, command, processes_with};
    let dir = tempfile::tempdir().unwrap();
    // A duration no other process on the machine uses, so the check sees only ours.
    let marker = format!("31.{}", std::process::id());
    let sleep = ScriptedCall::new("s", "bash", json!({"command": format!("sleep {marker}")}));
    let script = Script::new([Turn::tool_calls([task("t", "general", "wait \"A1\"")])])
        .with_standing("\\\"A1\\\"", Turn::tool_calls([sleep]));
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let config = config(dir.path(), "");
    let args = [
        "--config",
        &config,
        "--base-url",
        &url,
        "--model",
        "m",
        "--api",
        "chat",
        "--permission-mode",
        "bypass",
        "exec",
        "wait",
    ];
    let mut running = Running::spawn(command(dir.path(), &args).stdin(std::process::Stdio::null()));
    running.wait_until("the child's sleep", |_| !processes_with(&marker).is_empty());
    let pid = running.id().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let output = tokio::task::spawn_blocking(move || running.finish("agent exec after Ctrl-C"))
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    all_gone(&marker);
}

/// A child's write belongs to its parent's turn: the turn's checkpoint holds it, and `agent undo`
/// takes it back with the rest (the child's executor is told to the parent's checkpoints).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_write_is_undone_with_its_parents_turn() {
    let dir = tempfile::tempdir().unwrap();
    let write =
        ScriptedCall::new("w", "write_file", json!({"path": "made.txt", "content": "child\n"}));
    let script =
        Script::new([Turn::tool_calls([task("t", "general", "make \"A1\"")]), Turn::text("done")])
            .with_standing("\"w\"", Turn::text("wrote"))
            .with_standing("\\\"A1\\\"", Turn::tool_calls([write]));
    let args = ["--permission-mode", "accept-edits", "exec", "make it"];
    let (output, _) = run(dir.path(), script, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.path().join("made.txt").exists(), "the child did not write");
    let undo = agent(dir.path(), &["undo"]);
    assert_eq!(undo.status.code(), Some(0), "{}", stderr(&undo));
    assert!(!dir.path().join("made.txt").exists(), "undo left the child's write in place");
}
