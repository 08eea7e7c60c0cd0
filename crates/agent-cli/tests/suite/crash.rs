//! Crashes of the real binary: `kill -9` while a tool runs, a torn transcript line, two processes
//! on one session, and writes that fail (a full disk, simulated with a file-size limit). Each test
//! checks the effect: processes in `/proc`, the request body the next run sends, the transcript.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{
    Running, all_gone, command, data_dir, exec::exec, processes_with, stderr, transcript,
};

/// A workspace of its own in a temp dir, so its data dir (beside it) holds only its sessions.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    (dir, ws)
}

/// The one session a workspace's runs created so far.
fn only_session(workspace: &Path) -> String {
    let dir = data_dir(workspace).join("sessions");
    let ids: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

fn transcript_path(workspace: &Path, id: &str) -> PathBuf {
    data_dir(workspace).join("sessions").join(id).join("transcript.jsonl")
}

/// A tag no other process on the machine has, for sleep durations (`1000.<tag>`).
fn tag(test: u32) -> String {
    format!("{}{test}", std::process::id())
}

/// The probe's escape attempts (D3): a subshell's child, a `setsid` one, a `nohup` one, and the
/// foreground command itself; `started` is written once they are on their way.
fn escapes(tag: &str) -> String {
    format!(
        "(sleep 1000.{tag} &) ; setsid sleep 1001.{tag} & nohup sleep 1002.{tag} >/dev/null \
         2>&1 & echo started > started; sleep 1003.{tag}"
    )
}

/// Starts `agent exec` against `server` with `args`, waits until the workspace holds `started`
/// and every process in `expect` runs (the control: the attack is live), then kills the agent with
/// SIGKILL and returns what it printed.
fn kill_when_running(workspace: &Path, server: &ScriptedServer, args: &[&str], expect: &[String]) {
    let url = server.url();
    let mut full = vec!["--base-url", &url, "--model", "m", "--api", "chat"];
    full.extend(args);
    let mut running = Running::spawn(command(workspace, &full).stdin(Stdio::null()));
    let started = workspace.join("started");
    running.wait_until("the command's processes", |_| {
        started.exists() && expect.iter().all(|marker| !processes_with(marker).is_empty())
    });
    // The supervisors are processes of the session too, and carry the agent's command line.
    assert!(processes_with(&url).len() >= 2, "no supervisor beside the agent");
    running.kill();
    all_gone(&url);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_agent_during_a_foreground_command_leaves_no_process_of_the_session() {
    // Under workspace-write seccomp refuses `setsid`; with no sandbox it runs, and the supervisor
    // still catches it (it is re-parented to the supervisor, a subreaper).
    for (n, sandbox, escaped) in [(1, "workspace-write", false), (2, "danger-full-access", true)] {
        let (_dir, ws) = workspace();
        let tag = tag(n);
        let call = ScriptedCall::new("call_1", "bash", json!({"command": escapes(&tag)}));
        let server = ScriptedServer::start(Script::new([Turn::tool_calls([call])])).await.unwrap();
        let mut expect: Vec<String> =
            ["1000", "1002", "1003"].iter().map(|d| format!("sleep\0{d}.{tag}")).collect();
        if escaped {
            expect.push(format!("sleep\01001.{tag}"));
        }
        let args = ["--sandbox", sandbox, "--permission-mode", "bypass", "exec", "go"];
        let workspace = ws.clone();
        tokio::task::spawn_blocking(move || kill_when_running(&workspace, &server, &args, &expect))
            .await
            .unwrap();
        all_gone(&tag);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_agent_during_a_background_job_leaves_no_process_of_the_session() {
    let (_dir, ws) = workspace();
    let tag = tag(3);
    let call =
        ScriptedCall::new("call_1", "bash", json!({"command": escapes(&tag), "background": true}));
    // The model takes its time over the next turn, so the agent is alive with the job running.
    let turns = [Turn::tool_calls([call]), Turn::text("Started.").with_delay_ms(600_000)];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let expect: Vec<String> =
        ["1000", "1002", "1003"].iter().map(|d| format!("sleep\0{d}.{tag}")).collect();
    let workspace = ws.clone();
    tokio::task::spawn_blocking(move || {
        kill_when_running(
            &workspace,
            &server,
            &["--permission-mode", "bypass", "exec", "go"],
            &expect,
        )
    })
    .await
    .unwrap();
    all_gone(&tag);
}

/// The call ids of the assistant messages' tool calls, and the ids the tool messages answer.
fn calls_and_answers(body: &Value) -> (Vec<Value>, Vec<Value>) {
    let messages = body["messages"].as_array().unwrap();
    let calls = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|call| call["id"].clone())
        .collect();
    let answered =
        messages.iter().map(|m| m["tool_call_id"].clone()).filter(|id| !id.is_null()).collect();
    (calls, answered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_during_a_tool_call_resumes_with_an_output_for_every_call() {
    let (_dir, ws) = workspace();
    let tag = tag(4);
    // Two calls in one turn: a quick one and one the agent is killed during.
    let turn = Turn::tool_calls([
        ScriptedCall::new("call_quick", "bash", json!({"command": "echo quick"})),
        ScriptedCall::new(
            "call_slow",
            "bash",
            json!({"command": format!("echo started > started; sleep 1004.{tag}")}),
        ),
    ]);
    let server = ScriptedServer::start(Script::new([turn])).await.unwrap();
    let workspace = ws.clone();
    let expect = vec![format!("sleep\01004.{tag}")];
    tokio::task::spawn_blocking(move || {
        kill_when_running(
            &workspace,
            &server,
            &["--permission-mode", "bypass", "exec", "go"],
            &expect,
        )
    })
    .await
    .unwrap();
    let id = only_session(ws.as_path());
    // The control: the crash left the slow call without an output.
    let before = transcript(ws.as_path(), &id);
    let answered = |lines: &[Value], call: &str| {
        lines.iter().any(|l| l["item"]["type"] == "tool_output" && l["item"]["call_id"] == call)
    };
    assert!(!answered(&before, "call_slow"), "{before:?}");

    let (resumed, bodies) = exec(
        ws.as_path(),
        vec![Turn::text("Picking up.")],
        &["--api", "chat", "exec", "--resume", &id, "continue"],
    )
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert!(stderr(&resumed).contains("recorded as interrupted"), "{}", stderr(&resumed));
    let (calls, answers) = calls_and_answers(&bodies[0]);
    assert_eq!(calls, answers, "every call carries an output");
    assert!(calls.contains(&json!("call_slow")), "{calls:?}");
    let messages = bodies[0]["messages"].as_array().unwrap();
    let slow = messages.iter().find(|m| m["tool_call_id"] == "call_slow").unwrap();
    assert!(slow["content"].as_str().unwrap().contains("session ended while this call ran"));
    // Written into the transcript too, so the repair is done once and every later load has it.
    let after = transcript(ws.as_path(), &id);
    let output = after
        .iter()
        .find(|l| l["item"]["call_id"] == "call_slow" && l["item"]["type"] == "tool_output");
    assert_eq!(output.unwrap()["item"]["error"], "interrupted", "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_last_line_is_dropped_with_a_warning_and_the_session_resumes() {
    let (_dir, ws) = workspace();
    let (first, _) =
        exec(ws.as_path(), vec![Turn::text("First answer.")], &["--api", "chat", "exec", "hello"])
            .await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let id = only_session(ws.as_path());
    let path = transcript_path(ws.as_path(), &id);
    // What a full disk leaves: the start of a line and no newline.
    let mut text = std::fs::read_to_string(&path).unwrap();
    let whole_lines = text.lines().count();
    text.push_str(r#"{"item":{"type":"message","role":"user","content":"cut of"#);
    std::fs::write(&path, text).unwrap();

    let (resumed, bodies) = exec(
        ws.as_path(),
        vec![Turn::text("Second answer.")],
        &["--api", "chat", "exec", "--resume", &id, "again"],
    )
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let warning = format!("transcript.jsonl:{} was cut off mid-write", whole_lines + 1);
    assert!(stderr(&resumed).contains(&warning), "{}", stderr(&resumed));
    let contents: Vec<&str> = bodies[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.contains(&"hello") && contents.contains(&"First answer."), "{contents:?}");
    assert!(!contents.iter().any(|c| c.contains("cut of")), "{contents:?}");
    // The resumed run's lines start on a fresh line: every line but the torn one is whole JSON.
    let text = std::fs::read_to_string(&path).unwrap();
    let broken: Vec<&str> =
        text.lines().filter(|line| serde_json::from_str::<Value>(line).is_err()).collect();
    assert_eq!(broken.len(), 1, "{text}");
    assert!(text.contains("Second answer."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_resume_of_an_open_session_is_refused_naming_the_first_process() {
    let (_dir, ws) = workspace();
    let (first, _) =
        exec(ws.as_path(), vec![Turn::text("First answer.")], &["--api", "chat", "exec", "hello"])
            .await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let id = only_session(ws.as_path());
    let path = transcript_path(ws.as_path(), &id);

    // Resume A waits on a model that takes its time, with the session open.
    let slow = ScriptedServer::start(Script::new([Turn::text("A done.").with_delay_ms(600_000)]))
        .await
        .unwrap();
    let url = slow.url();
    let workspace = ws.clone();
    let (id_a, path_a) = (id.clone(), path.clone());
    let a = tokio::task::spawn_blocking(move || {
        let args = [
            "--base-url",
            &url,
            "--model",
            "m",
            "--api",
            "chat",
            "exec",
            "--resume",
            &id_a,
            "from A",
        ];
        let mut running = Running::spawn(command(&workspace, &args).stdin(Stdio::null()));
        running.wait_until("A's prompt in the transcript", |_| {
            std::fs::read_to_string(&path_a).unwrap_or_default().contains("from A")
        });
        running
    })
    .await
    .unwrap();

    let (b, bodies) = exec(
        ws.as_path(),
        vec![Turn::text("B done.")],
        &["--api", "chat", "exec", "--resume", &id, "from B"],
    )
    .await;
    let b_err = stderr(&b);
    assert_eq!(b.status.code(), Some(2), "{b_err}");
    assert!(b_err.contains(&format!("another agent process (pid {})", a.id())), "{b_err}");
    assert!(bodies.is_empty(), "the refused resume asked the model: {bodies:?}");
    let a_output = a.kill();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("from A") && !text.contains("from B"), "{text}\n{}", stderr(&a_output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_failed_writes_the_run_says_the_session_is_incomplete_and_names_no_cut_file() {
    let (_dir, ws) = workspace();
    // Three calls of 30 000 bytes each: more than the transcript and the saved outputs may hold.
    let big = "head -c 30000 /dev/zero | tr '\\0' x";
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("call_1", "bash", json!({"command": big}))]),
        Turn::tool_calls([ScriptedCall::new("call_2", "bash", json!({"command": big}))]),
        Turn::text("Done."),
    ];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let url = server.url();
    let workspace = ws.clone();
    let output = tokio::task::spawn_blocking(move || {
        // A full disk without a mount: files may grow to 16 KiB (`ulimit -S -f` counts KiB; the hard
        // limit stays, so the sandbox may still set its own for commands), and
        // SIGXFSZ is ignored, so a write past that fails with EFBIG as ENOSPC would.
        let reference = command(&workspace, &[]);
        let mut shell = std::process::Command::new("bash");
        shell
            .args(["-c", "trap '' XFSZ; ulimit -S -f 16; exec \"$0\" \"$@\""])
            .arg(reference.get_program())
            .args(["--base-url", &url, "--model", "m", "--api", "chat"])
            .args(["--permission-mode", "bypass", "exec", "go"])
            .current_dir(&workspace)
            .env_clear()
            .envs(reference.get_envs().filter_map(|(key, value)| Some((key, value?))));
        Running::spawn(shell.stdin(Stdio::null())).finish("agent exec on a full disk")
    })
    .await
    .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("is incomplete"), "{err}");
    assert!(!err.contains("(resume with --resume"), "{err}");
    // Every saved output the model was told about is whole.
    let bodies: Vec<Value> = server.requests().iter().map(|request| request.json()).collect();
    let mut named = 0;
    for body in &bodies {
        for message in body["messages"].as_array().unwrap() {
            let Some(text) = message["content"].as_str() else { continue };
            let Some(rest) = text.split("full output saved to ").nth(1) else { continue };
            let path = rest.split(';').next().unwrap();
            assert_eq!(std::fs::metadata(path).map(|m| m.len()).ok(), Some(30_000), "{path}");
            named += 1;
        }
    }
    let refused = bodies.iter().any(|body| body.to_string().contains("could not be saved"));
    assert!(refused || named > 0, "no notice about the full output: {bodies:?}");
    // What was saved resumes, without the torn line.
    let id = only_session(ws.as_path());
    let (resumed, _) = exec(
        ws.as_path(),
        vec![Turn::text("Back.")],
        &["--api", "chat", "exec", "--resume", &id, "again"],
    )
    .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert!(stderr(&resumed).contains("was cut off mid-write"), "{}", stderr(&resumed));
    // The resumed run started on a fresh line: only the torn line is not whole JSON.
    let text = std::fs::read_to_string(transcript_path(&ws, &id)).unwrap();
    let broken = text.lines().filter(|line| serde_json::from_str::<Value>(line).is_err()).count();
    assert_eq!(broken, 1, "{text}");
    assert!(text.contains("Back."), "{text}");
}
