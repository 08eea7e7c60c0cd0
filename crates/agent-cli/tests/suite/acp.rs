//! `agent acp` driven by a real ACP client (the official TypeScript SDK's, pinned in
//! scripts/peers/acp/) against the scripted model, with every frame the agent writes validated
//! against the protocol's published JSON Schema, and stdout holding nothing else.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, all_gone, command, data_dir, session_id};

/// The SDK's directory, or `None` after saying the test is skipped.
pub(crate) fn sdk() -> Option<PathBuf> {
    agent_test_support::peer(
        "acp",
        "node/node_modules/@agentclientprotocol/sdk",
        "the ACP TypeScript SDK",
    )
}

/// Runs the SDK client's `scenario` against `agent acp` with `args`; returns its summary after
/// checking every frame the agent wrote.
pub(crate) fn client(
    sdk: &Path,
    workspace: &Path,
    scenario: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Value {
    let frames = workspace.parent().unwrap().join(format!("frames-{scenario}.jsonl"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/client.mjs");
    let agent = command(workspace, &[]).get_program().to_owned();
    let mut node = Command::new("node");
    node.arg(script)
        .arg(sdk)
        .arg(&agent)
        .arg(scenario)
        .arg(workspace)
        .arg(&frames)
        .args(args)
        .current_dir(workspace);
    for (key, value) in env {
        node.env(key, value);
    }
    let output = run_peer(node, workspace);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "client failed: {stderr}");
    check_frames(&std::fs::read_to_string(&frames).unwrap());
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {stderr}"))
}

/// Runs a client program `peer` in `workspace`'s isolation: the agent it starts keeps its data
/// beside the workspace and reads no user config.
pub(super) fn run_peer(mut peer: Command, workspace: &Path) -> std::process::Output {
    peer.env("AGENT_DATA_DIR", data_dir(workspace))
        .env("HOME", workspace)
        .env("XDG_CONFIG_HOME", workspace.join(".no-config"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Every line is one JSON-RPC message an agent may send, by the published schema (the SDK
/// package ships it: `schema/v1/schema.json`).
pub(super) fn check_frames(text: &str) {
    let sdk = sdk().unwrap();
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(sdk.join("schema/v1/schema.json")).unwrap())
            .unwrap();
    // The root admits the client's messages too; an agent may write only the first branch's.
    let agent_branch = schema["anyOf"][0].clone();
    assert_eq!(agent_branch["title"], "Agent");
    schema["anyOf"] = json!([agent_branch]);
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!text.is_empty(), "the agent wrote nothing");
    for line in text.lines() {
        let frame: Value =
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not a frame ({err}): {line}"));
        if let Err(err) = validator.validate(&frame) {
            panic!("frame does not fit the ACP schema: {err}\n{line}");
        }
    }
}

pub(super) async fn server(turns: Vec<Turn>) -> (ScriptedServer, Vec<String>) {
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let args =
        vec!["--base-url".to_owned(), server.url(), "--model".to_owned(), "test-model".to_owned()];
    (server, args)
}

pub(super) fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Reads `a.txt` (reads never ask) and then edits it (which asks in default mode).
pub(super) fn edit_turns() -> Vec<Turn> {
    vec![
        Turn::tool_calls([ScriptedCall::new("r1", "read_file", json!({"path": "a.txt"}))]),
        Turn::tool_calls([ScriptedCall::new(
            "e1",
            "edit_file",
            json!({"path": "a.txt", "old_string": "hello", "new_string": "goodbye"}),
        )]),
        Turn::text("Done.").with_reasoning("The edit is in."),
    ]
}

pub(super) fn updates_of<'a>(summary: &'a Value, call: &str) -> Vec<&'a Value> {
    summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|update| update["toolCallId"] == call)
        .collect()
}

async fn edit(scenario: &'static str) -> Option<(tempfile::TempDir, Value)> {
    let sdk = sdk()?;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "hello\n").unwrap();
    let (_server, args) = server(edit_turns()).await;
    let ws = workspace.clone();
    let summary =
        tokio::task::spawn_blocking(move || client(&sdk, &ws, scenario, &strs(&args), &[]))
            .await
            .unwrap();
    Some((dir, summary))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_allowed_once_asks_then_completes_with_its_diff() {
    let Some((dir, summary)) = edit("edit-allow").await else { return };
    assert_eq!(summary["prompt"]["stopReason"], "end_turn", "{summary}");
    let updates = updates_of(&summary, "e1");
    let announced = updates[0];
    assert_eq!(announced["sessionUpdate"], "tool_call");
    assert_eq!(announced["kind"], "edit");
    assert_eq!(announced["title"], "Edit a.txt");
    let path = dir.path().join("ws/a.txt");
    assert_eq!(announced["locations"][0]["path"], path.to_str().unwrap());
    let asked = &summary["permissions"][0];
    assert_eq!(asked["toolCall"]["toolCallId"], "e1");
    let kinds: Vec<&Value> =
        asked["options"].as_array().unwrap().iter().map(|o| &o["kind"]).collect();
    assert_eq!(kinds, [&json!("allow_once"), &json!("allow_always"), &json!("reject_once")]);
    let completed =
        updates.iter().find(|u| u["status"] == "completed").expect("no completed update");
    let diff = &completed["content"][0];
    assert_eq!(diff["type"], "diff", "{completed}");
    assert_eq!(diff["oldText"], "hello\n");
    assert_eq!(diff["newText"], "goodbye\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "goodbye\n");
    // The answer streamed as a message chunk, and the read was announced as a read.
    let chunks: Vec<&Value> = summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .collect();
    assert_eq!(chunks[0]["content"]["text"], "Done.");
    assert_eq!(updates_of(&summary, "r1")[0]["kind"], "read");
    // The reasoning streamed as a thought chunk, and the context's fill as usage updates.
    let of_kind = |kind: &str| -> Vec<&Value> {
        summary["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    };
    let thought: String = of_kind("agent_thought_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(thought, "The edit is in.", "{summary}");
    let usage = of_kind("usage_update");
    assert_eq!(usage.len(), 3, "one before each model request: {summary}");
    assert!(usage.iter().all(|u| u["size"].as_u64() > Some(0) && u["used"].as_u64() > Some(0)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_edit_leaves_the_file_unchanged() {
    let Some((dir, summary)) = edit("edit-reject").await else { return };
    assert_eq!(summary["permissions"].as_array().unwrap().len(), 1, "{summary}");
    let updates = updates_of(&summary, "e1");
    assert!(updates.iter().any(|u| u["status"] == "failed"), "{summary}");
    assert!(!updates.iter().any(|u| u["status"] == "completed"), "{summary}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(), "hello\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_answers_the_pending_permission_request_and_ends_the_prompt() {
    let Some((dir, summary)) = edit("cancel-permission").await else { return };
    assert_eq!(summary["prompt"]["stopReason"], "cancelled", "{summary}");
    assert_eq!(std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(), "hello\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_during_bash_ends_the_prompt_and_its_processes() {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let marker = format!("acp-cancel-{}", std::process::id());
    // `exec -a` names the sleep itself with the marker, so the check finds the very process.
    let command = format!("touch started; exec -a {marker} sleep 600");
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("b1", "bash", json!({"command": command}))]),
        Turn::text("never reached"),
    ];
    let (_server, mut args) = server(turns).await;
    args.extend(["--permission-mode".to_owned(), "bypass".to_owned()]);
    let ws = workspace.clone();
    let env_marker = marker.clone();
    let summary = tokio::task::spawn_blocking(move || {
        client(&sdk, &ws, "cancel-bash", &strs(&args), &[("ACP_TEST_MARKER", &env_marker)])
    })
    .await
    .unwrap();
    assert_eq!(summary["prompt"]["stopReason"], "cancelled", "{summary}");
    assert_eq!(updates_of(&summary, "b1")[0]["kind"], "execute");
    // The control: the command ran (the client cancelled only once its process was there) …
    assert!(workspace.join("started").exists());
    assert!(!summary["before"].as_array().unwrap().is_empty(), "{summary}");
    // … and the cancel ended it while the agent still ran, not the agent's exit.
    assert_eq!(summary["after"]["pids"], json!([]), "{summary}");
    assert_eq!(summary["after"]["agentRunning"], true, "{summary}");
    all_gone(&marker);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exec_session_is_listed_and_loads_with_its_history_replayed() {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("u1", "uppercase", json!({"text": "hi"}))]),
        Turn::text("It says HI."),
    ];
    let (_server, args) = server(turns).await;
    let mut exec = vec!["exec".to_owned()];
    exec.extend(args.iter().cloned());
    exec.push("shout hi".to_owned());
    let ws = workspace.clone();
    let output = tokio::task::spawn_blocking(move || agent(&ws, &strs(&exec))).await.unwrap();
    assert!(output.status.success(), "{output:?}");
    let id = session_id(&output);
    let ws = workspace.clone();
    let env_id = id.clone();
    let summary = tokio::task::spawn_blocking(move || {
        client(&sdk, &ws, "load", &strs(&args), &[("ACP_TEST_SESSION", &env_id)])
    })
    .await
    .unwrap();
    let listed = &summary["list"]["sessions"][0];
    assert_eq!(listed["sessionId"], id.as_str(), "{summary}");
    assert_eq!(listed["title"], "shout hi");
    let kinds: Vec<&str> = summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"],
        "{summary}"
    );
    assert_eq!(summary["updates"][3]["content"]["text"], "It says HI.");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_model_server_down_the_prompt_fails_as_an_error_and_stdout_holds_only_frames() {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let args = ["--base-url", url.as_str(), "--model", "test-model"].map(str::to_owned);
    let ws = workspace.clone();
    let summary =
        tokio::task::spawn_blocking(move || client(&sdk, &ws, "model-down", &strs(&args), &[]))
            .await
            .unwrap();
    assert_eq!(summary["promptError"]["code"], -32603, "{summary}");
}

/// The official Python SDK's client (PyPI `agent-client-protocol`) sees the same edit: the
/// permission request with the three options, then the completed call with its diff.
#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_client_allows_an_edit_and_sees_its_diff() {
    let Some(python) = agent_test_support::peer_python("acp") else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "hello\n").unwrap();
    let (_server, args) = server(edit_turns()).await;
    let steps = json!([{"initialize": {}}, {"new": {}}, {"prompt": "do the task"}]);
    let plan = json!({"answer": "allow-once", "steps": steps});
    let summary = crate::suite::acp_methods::play(python, &workspace, plan, args).await;
    assert_eq!(summary["results"][2]["stopReason"], "end_turn", "{summary}");
    assert_eq!(
        summary["permissions"][0]["options"],
        json!(["allow_once", "allow_always", "reject_once"])
    );
    let done = updates_of(&summary, "e1").into_iter().find(|u| u["status"] == "completed").unwrap();
    assert_eq!(done["content"][0]["type"], "diff", "{done}");
    assert_eq!(std::fs::read_to_string(workspace.join("a.txt")).unwrap(), "goodbye\n");
}

/// With the client's file-system capability, the model reads the editor's unsaved buffer and
/// its edit lands in the editor: the client records the write, the disk is unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn with_the_client_file_system_the_edit_reaches_the_client_not_the_disk() {
    let Some((dir, summary)) = edit("edit-fs").await else { return };
    let path = dir.path().join("ws/a.txt");
    assert_eq!(summary["prompt"]["stopReason"], "end_turn", "{summary}");
    // The read went to the client, and the model saw its buffer, not the disk.
    let reads = summary["reads"].as_array().unwrap();
    assert!(reads.iter().all(|read| read["path"] == path.to_str().unwrap()), "{summary}");
    assert!(!reads.is_empty(), "{summary}");
    let read = updates_of(&summary, "r1").into_iter().find(|u| u["status"] == "completed").unwrap();
    assert!(read["rawOutput"].as_str().unwrap().contains("hello from the buffer"), "{read}");
    // The write reached the client with the edited buffer …
    let writes = summary["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 1, "{summary}");
    assert_eq!(writes[0]["path"], path.to_str().unwrap());
    assert_eq!(writes[0]["content"], "goodbye from the buffer\n");
    // … and not the disk.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
    // The diff is the buffer's.
    let done = updates_of(&summary, "e1").into_iter().find(|u| u["status"] == "completed").unwrap();
    assert_eq!(done["content"][0]["type"], "diff", "{done}");
    assert_eq!(done["content"][0]["oldText"], "hello from the buffer\n");
    assert_eq!(done["content"][0]["newText"], "goodbye from the buffer\n");
}

/// A tool that prints to stdout and then panics: the call fails, the prompt goes on, and stdout
/// still holds nothing but frames that fit the schema (`client` checks every line).
#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_tool_leaves_stdout_holding_only_frames() {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("p1", "panic_now", json!({}))]),
        Turn::text("It broke."),
    ];
    let (_server, args) = server(turns).await;
    let ws = workspace.clone();
    let summary = tokio::task::spawn_blocking(move || {
        client(&sdk, &ws, "plain", &strs(&args), &[("AGENT_TEST_ACP_PANIC_TOOL", "1")])
    })
    .await
    .unwrap();
    assert_eq!(summary["prompt"]["stopReason"], "end_turn", "{summary}");
    let updates = updates_of(&summary, "p1");
    assert!(updates.iter().any(|u| u["status"] == "failed"), "{summary}");
}

/// The plan tool's list reaches the client as `plan` updates, whole after each change.
#[tokio::test(flavor = "multi_thread")]
async fn the_plan_reaches_the_client_as_plan_updates() {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[agents]\nenabled = true\n").unwrap();
    let plan = |first: &str, second: &str| {
        json!({"explanation": null, "ops": null, "plan": [
            {"id": null, "step": "read the code", "status": first},
            {"id": null, "step": "fix the bug", "status": second},
        ]})
    };
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("p1", "update_plan", plan("in_progress", "pending"))]),
        Turn::tool_calls([ScriptedCall::new(
            "p2",
            "update_plan",
            plan("completed", "in_progress"),
        )]),
        Turn::text("Planned."),
    ];
    let (_server, mut args) = server(turns).await;
    args.extend(["--config".to_owned(), config.display().to_string()]);
    let ws = workspace.clone();
    let summary =
        tokio::task::spawn_blocking(move || client(&sdk, &ws, "plain", &strs(&args), &[]))
            .await
            .unwrap();
    assert_eq!(summary["prompt"]["stopReason"], "end_turn", "{summary}");
    let plans: Vec<&Value> = summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans.len(), 2, "{summary}");
    let entries = |plan: &Value| -> Vec<(String, String)> {
        plan["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["content"].as_str().unwrap().into(), e["status"].as_str().unwrap().into()))
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        entries(plans[0]),
        [pair("read the code", "in_progress"), pair("fix the bug", "pending")]
    );
    assert_eq!(
        entries(plans[1]),
        [pair("read the code", "completed"), pair("fix the bug", "in_progress")]
    );
}

/// The headless client acpx (npm, pinned in scripts/peers/acp/) runs a one-shot prompt that
/// edits a file: it approves the edit, its own file system writes it, and every frame the agent
/// wrote fits the schema.
#[tokio::test(flavor = "multi_thread")]
async fn acpx_runs_a_prompt_that_edits_a_file() {
    let Some(acpx) =
        agent_test_support::peer("acp", "node/node_modules/acpx/dist/cli.js", "the acpx client")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "hello\n").unwrap();
    let (_server, args) = server(edit_turns()).await;
    let frames = dir.path().join("frames-acpx.jsonl");
    let tee = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/tee.sh");
    let agent_bin = command(&workspace, &[]).get_program().to_owned();
    let agent_command = format!(
        "sh {tee} {} {} acp {}",
        frames.display(),
        agent_bin.to_string_lossy(),
        args.join(" ")
    );
    let ws = workspace.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut client = Command::new("node");
        client.arg(acpx).args(["--agent", &agent_command, "--cwd"]).arg(&ws);
        client.args(["--format", "json", "--approve-all", "--ttl", "0", "exec", "do the task"]);
        client.current_dir(&ws);
        run_peer(client, &ws)
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(workspace.join("a.txt")).unwrap(), "goodbye\n");
    check_frames(&std::fs::read_to_string(&frames).unwrap());
    // acpx saw the edit's diff and the answer.
    assert!(stdout.contains("\"type\":\"diff\""), "{stdout}");
    assert!(stdout.contains("Done."), "{stdout}");
}

/// A command running as a background job while the next call waits for the editor's answer:
/// the cancel answers the permission request, the prompt ends cancelled, the file is
/// unchanged, and once the client leaves no process of the session is left.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_with_a_job_running_and_a_permission_pending_leaves_nothing_behind() {
    let Some(sdk) = sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "hello\n").unwrap();
    let marker = format!("acp-job-{}", std::process::id());
    // A copy of `sleep` named with the marker, so the check finds the very process.
    let sleep = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("sleep"))
        .find(|path| path.is_file())
        .unwrap();
    let command = format!("touch started; cp {} ./{marker}; ./{marker} 600", sleep.display());
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new(
            "b1",
            "bash",
            json!({"command": command, "background": true}),
        )]),
        Turn::tool_calls([ScriptedCall::new("r1", "read_file", json!({"path": "a.txt"}))]),
        Turn::tool_calls([ScriptedCall::new(
            "e1",
            "edit_file",
            json!({"path": "a.txt", "old_string": "hello", "new_string": "goodbye"}),
        )]),
        Turn::text("never reached"),
    ];
    let (_server, mut args) = server(turns).await;
    args.extend(["--allow".to_owned(), "Bash".to_owned()]);
    let ws = workspace.clone();
    let summary = tokio::task::spawn_blocking(move || {
        client(&sdk, &ws, "cancel-permission", &strs(&args), &[])
    })
    .await
    .unwrap();
    assert_eq!(summary["prompt"]["stopReason"], "cancelled", "{summary}");
    assert_eq!(summary["permissions"].as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(summary["permissions"][0]["toolCall"]["toolCallId"], "e1", "{summary}");
    assert_eq!(std::fs::read_to_string(workspace.join("a.txt")).unwrap(), "hello\n");
    // The control: the job did start.
    assert!(workspace.join("started").exists(), "{summary}");
    all_gone(&marker);
}
