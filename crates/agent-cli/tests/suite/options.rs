//! Each documented option, input path and exit code, run end to end against the scripted model
//! server: the check is what happened (a file made or not, a connection made or not, what the
//! model was sent), not only what was printed.

use std::{
    io::Write as _,
    path::Path,
    process::{Output, Stdio},
};

use agent_model::scripted::{Fault, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{Running, command, stderr, stdout};

/// Runs `agent --base-url … --model m --api chat ARGS` in `workspace` (its current directory)
/// against a server playing `turns`, with `env` added and `stdin` fed; returns the output and the
/// request bodies.
async fn run(
    workspace: &Path,
    turns: Vec<Turn>,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: &str,
) -> (Output, Vec<Value>) {
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let mut full = vec!["--base-url".to_owned(), server.url(), "--model".into(), "m".into()];
    full.extend(["--api".to_owned(), "chat".to_owned()]);
    full.extend(args.iter().map(|arg| (*arg).to_owned()));
    let (dir, env, input) = (workspace.to_path_buf(), owned(env), stdin.to_owned());
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = full.iter().map(String::as_str).collect();
        let mut command = command(&dir, &args);
        command.envs(env).stdin(Stdio::piped());
        let mut running = Running::spawn(&mut command);
        running.stdin().write_all(input.as_bytes()).unwrap();
        running.finish(&format!("agent {}", args.join(" ")))
    })
    .await
    .unwrap();
    (output, server.requests().iter().map(|request| request.json()).collect())
}

fn owned(env: &[(&str, &str)]) -> Vec<(String, String)> {
    env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// One call of `tool`, then a closing answer.
fn one_call(tool: &str, arguments: Value) -> Vec<Turn> {
    vec![Turn::tool_calls([ScriptedCall::new("c1", tool, arguments)]), Turn::text("Done.")]
}

/// What the model read for call `c1` (the tool message of the second request).
fn observation(bodies: &[Value]) -> String {
    let messages = bodies.get(1).and_then(|body| body["messages"].as_array());
    let tool = messages.and_then(|m| m.iter().find(|m| m["tool_call_id"] == "c1"));
    tool.and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no output: {bodies:?}"))
        .to_owned()
}

/// Whether the sandbox refused to start the command here; the skip goes through the one helper.
fn sandbox_missing(observation: &str) -> bool {
    let missing = observation.contains(r#""error":"sandbox_unavailable""#);
    if missing {
        agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {observation}"));
    }
    missing
}

/// The model asks to write `new.txt`; with `args`, the file is `made` or not.
async fn check_write(args: &[&str], made: bool) {
    let dir = tempfile::tempdir().unwrap();
    let turns = one_call("write_file", json!({"path": "new.txt", "content": "x\n"}));
    let mut full = args.to_vec();
    full.extend(["exec", "write it"]);
    let (output, bodies) = run(dir.path(), turns, &full, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
    assert_eq!(dir.path().join("new.txt").exists(), made, "{args:?}: {}", observation(&bodies));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_ask_and_deny_flags_decide_the_write() {
    check_write(&[], false).await;
    check_write(&["--allow", "Edit(./new.txt)"], true).await;
    check_write(&["--allow", "Edit(./other.txt)"], false).await;
    check_write(&["--permission-mode", "accept-edits"], true).await;
    check_write(&["--permission-mode", "bypass", "--deny", "Edit(./new.txt)"], false).await;
    // exec cannot ask anyone, so an ask rule refuses even in bypass.
    check_write(&["--permission-mode", "bypass", "--ask", "Edit(./new.txt)"], false).await;
}

/// The model runs `command` with bash in bypass mode plus `args`; `made` says whether the file
/// `made` exists afterwards. Returns what the model read.
async fn check_bash(args: &[&str], command: &str, made: bool) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut full = vec!["--permission-mode", "bypass"];
    full.extend(args);
    full.extend(["exec", "run it"]);
    let turns = one_call("bash", json!({"command": command}));
    let (output, bodies) = run(dir.path(), turns, &full, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
    let seen = observation(&bodies);
    if sandbox_missing(&seen) {
        return None;
    }
    assert_eq!(dir.path().join("made").exists(), made, "{args:?} {command}: {seen}");
    Some(seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_flag_sets_what_commands_may_write() {
    check_bash(&["--sandbox", "read-only"], "touch made", false).await;
    check_bash(&["--sandbox", "workspace-write"], "touch made", true).await;
    check_bash(&[], "touch made", true).await;
    check_bash(&["--sandbox", "danger-full-access"], "touch made", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_flag_lets_commands_connect() {
    for (args, connects) in [(&[][..], false), (&["--network"][..], true)] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // bash opens the socket itself (`/dev/tcp`), so no client program is needed.
        let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && touch made");
        let Some(seen) = check_bash(args, &command, connects).await else { return };
        // A connection made by the command waits in the listener's backlog.
        listener.set_nonblocking(true).unwrap();
        assert_eq!(listener.accept().is_ok(), connects, "{args:?}: {seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_flag_moves_where_tools_work() {
    let dir = tempfile::tempdir().unwrap();
    let (here, there) = (dir.path().join("here"), dir.path().join("there"));
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&there).unwrap();
    let turns = one_call("write_file", json!({"path": "new.txt", "content": "x\n"}));
    let workspace = there.to_str().unwrap();
    let args = ["--workspace", workspace, "--permission-mode", "accept-edits", "exec", "write"];
    let (output, _) = run(&here, turns, &args, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(there.join("new.txt").exists() && !here.join("new.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_and_profile_choose_the_server_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        ScriptedServer::start(Script::new([Turn::text("From the profile.")])).await.unwrap();
    // The default profile points at a port nothing listens on: only `--profile` reaches the server.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = dir.path().join("agent.toml");
    let text = format!(
        "default_profile = \"off\"\n[profiles.off]\nbase_url = \"http://127.0.0.1:{closed}/v1\"\n\
         [profiles.local]\nbase_url = \"{}\"\nmodel = \"profile-model\"\napi = \"chat\"\n",
        server.url()
    );
    std::fs::write(&config, text).unwrap();
    let (workspace, config) = (dir.path().to_path_buf(), config.to_str().unwrap().to_owned());
    let output = tokio::task::spawn_blocking(move || {
        crate::suite::agent(&workspace, &["--config", &config, "--profile", "local", "exec", "hi"])
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "From the profile.");
    let bodies: Vec<Value> = server.requests().iter().map(|request| request.json()).collect();
    assert_eq!(bodies[0]["model"], "profile-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_reads_the_prompt_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![Turn::text("Read it.")];
    let (output, bodies) =
        run(dir.path(), turns, &["exec", "-"], &[], "what is\nin this file?\n").await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let messages = bodies[0]["messages"].as_array().unwrap();
    let user: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(user.len(), 1, "{messages:?}");
    // Sent as read, final newline included.
    assert_eq!(user[0]["content"], "what is\nin this file?\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_for_a_model_error_an_unknown_session_and_a_broken_config() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Fault::Status {
        status: 400,
        body: json!({"error": {"message": "bad request from the test"}}).to_string(),
        content_type: None,
        headers: std::collections::BTreeMap::new(),
    };
    let (output, _) = run(dir.path(), vec![Turn::fault(refused)], &["exec", "hi"], &[], "").await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("bad request from the test"), "{}", stderr(&output));

    let args = ["exec", "--resume", "no-such-session", "hi"];
    let (output, bodies) = run(dir.path(), vec![Turn::text("never")], &args, &[], "").await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("no-such-session"), "{}", stderr(&output));
    assert!(bodies.is_empty(), "the model was called: {bodies:?}");

    let config = dir.path().join("broken.toml");
    std::fs::write(&config, "[profiles.x]\nmodle = \"y\"\n").unwrap();
    let args = ["--config", config.to_str().unwrap(), "exec", "hi"];
    let (output, bodies) = run(dir.path(), vec![Turn::text("never")], &args, &[], "").await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("modle"), "{}", stderr(&output));
    assert!(bodies.is_empty(), "the model was called: {bodies:?}");
}

#[test]
fn sandbox_check_reports_the_kernel_and_a_missing_feature() {
    let dir = tempfile::tempdir().unwrap();
    let output = crate::suite::agent(dir.path(), &["sandbox", "check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    for row in ["landlock", "seccomp filters", "read-only", "workspace-write", "danger-full-access"]
    {
        assert!(text.contains(row), "{row} missing: {text}");
    }
    // The test-only override makes the probe see no Landlock, as an old kernel would.
    let mut command = command(dir.path(), &["sandbox", "check"]);
    command.env("AGENT_TEST_DISABLE_LANDLOCK", "1").stdin(Stdio::null());
    let output = Running::spawn(&mut command).finish("agent sandbox check");
    let text = stdout(&output);
    assert!(text.contains("workspace-write      no: the sandbox cannot be enforced"), "{text}");
    assert!(text.contains("`--sandbox danger-full-access` turns sandboxing off"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_landlock_commands_fail_closed_as_sandbox_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let turns = one_call("bash", json!({"command": "touch made"}));
    let args = ["--permission-mode", "bypass", "exec", "run it"];
    let env = [("AGENT_TEST_DISABLE_LANDLOCK", "1")];
    let (output, bodies) = run(dir.path(), turns, &args, &env, "").await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let seen = observation(&bodies);
    assert!(seen.starts_with(r#"{"ok":false,"error":"sandbox_unavailable""#), "{seen}");
    assert!(seen.contains("Landlock"), "{seen}");
    assert!(!dir.path().join("made").exists(), "the command ran without its sandbox");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_python_the_code_tool_says_runtime_missing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let turns = one_call("execute_code", json!({"language": "python", "code": "print(1)"}));
    let env = [("PATH", empty.path().to_str().unwrap())];
    let (output, bodies) = run(dir.path(), turns, &["exec", "run it"], &env, "").await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let seen = observation(&bodies);
    assert!(seen.starts_with(r#"{"ok":false,"error":"runtime_missing""#), "{seen}");
    assert!(seen.contains("python3 is not installed"), "{seen}");
}
