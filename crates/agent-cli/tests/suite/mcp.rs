//! MCP servers' tools through the `agent` binary, against real peers: the Node reference server
//! `@modelcontextprotocol/server-everything` and a server written with the Python `mcp` SDK
//! (`agent-mcp/tests/peers/py_server.py`, shared with agent-mcp's own tests).
//! `scripts/mcp/setup.sh` installs both; without them these tests say SKIPPED, and fail where
//! `AGENT_NO_SKIP` is set (CI).

use std::path::{Path, PathBuf};

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, command, exec::exec, session_id, stderr, stdout, transcript};

/// The server-everything executable, or `None` after saying the test is skipped.
pub(crate) fn everything() -> Option<PathBuf> {
    agent_test_support::mcp_peer(
        "node/node_modules/.bin/mcp-server-everything",
        "server-everything",
    )
}

/// The Python of the venv holding the `mcp` SDK, or `None` after saying the test is skipped.
pub(crate) fn python() -> Option<PathBuf> {
    agent_test_support::mcp_python()
}

pub(crate) fn py_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-mcp/tests/peers/py_server.py")
}

/// Writes a config file with `tables` (TOML) into `dir` and returns its path as a string.
pub(crate) fn config(dir: &Path, tables: &str) -> String {
    let path = dir.join("config.toml");
    std::fs::write(&path, tables).unwrap();
    path.display().to_string()
}

/// Start-up timeouts for the peers: generous, since a loaded 2-core CI machine running the
/// whole suite may take many seconds to start a Python interpreter.
pub(crate) const STARTUP: &str = "startup_timeout_sec = 120\n";

pub(crate) fn everything_table(bin: &Path) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n{STARTUP}",
        bin.display()
    )
}

/// The Python server as `[mcp_servers.py]`, writing its markers into `markers`, plus `extra` keys.
pub(crate) fn py_table(python: &Path, markers: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.py]\ncommand = {:?}\nargs = [{:?}, \"--marker-dir\", {:?}]\n{STARTUP}{extra}\n",
        python.display(),
        py_server().display(),
        markers.display()
    )
}

#[test]
fn tools_list_shows_mcp_tools_beside_the_builtins() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &everything_table(&bin));
    let output = agent(dir.path(), &["tools", "list", "--json", "--config", &config]);
    assert!(output.status.success(), "{}", stderr(&output));
    let list: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = list.iter().filter_map(|tool| tool["name"].as_str()).collect();
    assert!(names.contains(&"read_file"), "{names:?}");
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    // Every name is valid for both APIs.
    let valid = |name: &str| {
        (1..=64).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    assert!(names.iter().all(|name| valid(name)), "{names:?}");
}

#[test]
fn tools_call_answers_through_server_everything() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &everything_table(&bin));
    let args =
        ["tools", "call", "mcp__everything__echo", r#"{"message":"hi"}"#, "--config", &config];
    let output = agent(dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "Echo: hi");
}

#[test]
fn an_invalid_argument_is_refused_locally_and_never_reaches_the_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let markers = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &py_table(&python, markers.path(), ""));
    for arguments in [r#"{"name":5}"#, r#"{"name":"m","extra":1}"#, r#"{}"#, "not json"] {
        let args = ["tools", "call", "mcp__py__touch", arguments, "--config", &config];
        let output = agent(dir.path(), &args);
        assert_eq!(output.status.code(), Some(1), "{arguments}: {}", stdout(&output));
        let observation: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
        let code = observation["error"].as_str().unwrap();
        assert!(["invalid_arguments", "invalid_json"].contains(&code), "{observation}");
    }
    // The effect: the server never ran the tool.
    assert_eq!(std::fs::read_dir(markers.path()).unwrap().count(), 0);
    // The same call with valid arguments does reach it, so the check above can fail.
    let args = ["tools", "call", "mcp__py__touch", r#"{"name":"m"}"#, "--config", &config];
    let output = agent(dir.path(), &args);
    assert!(output.status.success(), "{}", stdout(&output));
    assert!(markers.path().join("m").exists());
}

#[test]
fn secrets_in_our_environment_never_reach_a_server() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = format!("{}env = {{ GIVEN_TO_SERVER = \"on purpose\" }}\n", everything_table(&bin));
    let config = config(dir.path(), &table);
    let args = ["tools", "call", "mcp__everything__get-env", "{}", "--config", &config];
    let output = command(dir.path(), &args)
        .env("OPENAI_API_KEY", "sk-test-never-shown")
        .env("GITHUB_TOKEN", "ghp-test-never-shown")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("on purpose"), "{text}");
    assert!(!text.contains("never-shown"), "{text}");
}

/// The tool outputs of a finished `exec` session, in order.
pub(super) fn outputs(workspace: &Path, id: &str) -> Vec<Value> {
    transcript(workspace, id)
        .into_iter()
        .filter(|line| line["item"]["type"] == "tool_output")
        .map(|line| line["item"].clone())
        .collect()
}

/// The `error` of an output, or "ok".
pub(super) fn code(output: &Value) -> String {
    match serde_json::from_str::<Value>(output["output"].as_str().unwrap_or_default()) {
        Ok(value) if value["ok"] == false => value["error"].as_str().unwrap_or("?").to_owned(),
        _ => "ok".to_owned(),
    }
}

/// Runs `exec` with the Python server (waited for: `required = true`) and `extra` config keys,
/// playing `turns`; returns the process output, the request bodies and the tool outputs.
async fn exec_py(
    markers: &Path,
    extra: &str,
    turns: Vec<Turn>,
    flags: &[&str],
) -> (std::process::Output, Vec<Value>, Vec<Value>) {
    let python = python().expect("checked by the caller");
    let dir = tempfile::tempdir().unwrap();
    let table = py_table(&python, markers, &format!("required = true\n{extra}"));
    let config = config(dir.path(), &table);
    let mut args = vec!["--api", "chat", "--config", &config];
    args.extend_from_slice(flags);
    args.extend(["exec", "go"]);
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outputs = outputs(dir.path(), &session_id(&output));
    (output, bodies, outputs)
}

pub(super) fn call(id: &str, tool: &str, args: Value) -> Turn {
    Turn::tool_calls([ScriptedCall::new(id, tool, args)])
}

/// The last request is valid: every call made so far has exactly one output after it.
pub(super) fn assert_valid_next_request(bodies: &[Value], call_ids: &[&str]) {
    let messages = bodies.last().unwrap()["messages"].as_array().unwrap();
    for id in call_ids {
        let answered = messages.iter().filter(|m| m["role"] == "tool" && m["tool_call_id"] == *id);
        assert_eq!(answered.count(), 1, "{id} in {messages:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_allowed_by_a_rule_runs_and_one_without_a_rule_is_denied_unrun() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    let turns = vec![call("c1", "mcp__py__touch", json!({"name": "allowed"})), Turn::text("done")];
    let flags = ["--allow", "mcp__py__touch"];
    let (_, bodies, outputs) = exec_py(markers.path(), "", turns, &flags).await;
    assert_eq!(code(&outputs[0]), "ok", "{outputs:?}");
    assert_eq!(outputs[0]["output"], "created allowed");
    assert!(markers.path().join("allowed").exists());
    assert_valid_next_request(&bodies, &["c1"]);
    // The first request already offered the tool, strict, since its schema converts.
    let tools = bodies[0]["tools"].as_array().unwrap();
    let touch = tools.iter().find(|t| t["function"]["name"] == "mcp__py__touch").unwrap();
    assert_eq!(touch["function"]["strict"], true, "{touch}");

    let turns = vec![call("c1", "mcp__py__touch", json!({"name": "denied"})), Turn::text("done")];
    let (_, bodies, outputs) = exec_py(markers.path(), "", turns, &[]).await;
    assert_eq!(code(&outputs[0]), "permission_denied", "{outputs:?}");
    let message = outputs[0]["output"].as_str().unwrap();
    assert!(message.contains("mcp__py__touch"), "{message}");
    assert!(!markers.path().join("denied").exists());
    assert_valid_next_request(&bodies, &["c1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_wide_rule_and_a_glob_allow_its_tools() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    for (rule, name) in [("mcp__py", "server"), ("mcp__py__to*", "glob")] {
        let turns = vec![call("c1", "mcp__py__touch", json!({"name": name})), Turn::text("ok")];
        let (_, _, outputs) = exec_py(markers.path(), "", turns, &["--allow", rule]).await;
        assert_eq!(code(&outputs[0]), "ok", "{rule}: {outputs:?}");
        assert!(markers.path().join(name).exists(), "{rule}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_keeps_a_call_alive_past_its_idle_timeout() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    // 1 s without news times out; the call takes 3 s but reports progress every 0.2 s.
    let turns =
        vec![call("c1", "mcp__py__slow", json!({"seconds": 3, "step": 0.2})), Turn::text("done")];
    let flags = ["--allow", "mcp__py"];
    let (_, bodies, outputs) = exec_py(markers.path(), "tool_timeout_sec = 1", turns, &flags).await;
    assert_eq!(code(&outputs[0]), "ok", "{outputs:?}");
    assert!(outputs[0]["output"].as_str().unwrap().starts_with("finished after"));
    assert_valid_next_request(&bodies, &["c1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_call_times_out_and_the_server_is_told_to_cancel() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    let turns = vec![
        call("c1", "mcp__py__hang", json!({"name": "hang-cancelled"})),
        // The same server answers the next call: the timeout did not break the connection.
        call("c2", "mcp__py__echo", json!({"text": "still here"})),
        Turn::text("done"),
    ];
    let flags = ["--allow", "mcp__py"];
    let (_, bodies, outputs) = exec_py(markers.path(), "tool_timeout_sec = 1", turns, &flags).await;
    assert_eq!(code(&outputs[0]), "timeout", "{outputs:?}");
    let message = outputs[0]["output"].as_str().unwrap();
    assert!(message.contains("tool_timeout_sec"), "{message}");
    assert_eq!(outputs[1]["output"], "still here");
    // The effect: the server received notifications/cancelled and stopped the handler.
    assert!(markers.path().join("hang-cancelled").exists());
    assert_valid_next_request(&bodies, &["c1", "c2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_does_not_outlast_the_absolute_cap() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    let turns =
        vec![call("c1", "mcp__py__slow", json!({"seconds": 30, "step": 0.2})), Turn::text("done")];
    let extra = "tool_timeout_sec = 1\ntool_max_sec = 2";
    let (_, bodies, outputs) = exec_py(markers.path(), extra, turns, &["--allow", "mcp__py"]).await;
    assert_eq!(code(&outputs[0]), "timeout", "{outputs:?}");
    assert_valid_next_request(&bodies, &["c1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_reported_and_restarted_on_the_next_call() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    let turns = vec![
        call("c1", "mcp__py__crash", json!({})),
        call("c2", "mcp__py__echo", json!({"text": "back"})),
        Turn::text("done"),
    ];
    let (_, bodies, outputs) = exec_py(markers.path(), "", turns, &["--allow", "mcp__py"]).await;
    assert_eq!(code(&outputs[0]), "mcp_server_unavailable", "{outputs:?}");
    assert_eq!(outputs[1]["output"], "back", "{outputs:?}");
    assert_valid_next_request(&bodies, &["c1", "c2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_offered_from_the_next_request() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    let turns = vec![
        call("c1", "mcp__py__grow", json!({})),
        call("c2", "mcp__py__late", json!({})),
        Turn::text("done"),
    ];
    let (_, bodies, outputs) = exec_py(markers.path(), "", turns, &["--allow", "mcp__py"]).await;
    let names = |body: &Value| -> Vec<String> {
        let tools = body["tools"].as_array().unwrap();
        tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
    };
    assert!(!names(&bodies[0]).contains(&"mcp__py__late".to_owned()));
    assert!(names(&bodies[1]).contains(&"mcp__py__late".to_owned()), "{:?}", names(&bodies[1]));
    assert_eq!(outputs[1]["output"], "late tool here", "{outputs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_waits_for_no_server_and_a_failed_one_is_reported_once() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let markers = tempfile::tempdir().unwrap();
    // One server that takes a minute to start, one that cannot start at all.
    let table = format!(
        "{}\n[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
        py_table(&python, markers.path(), "")
            .replace("--marker-dir", "--slow-start\", \"60\", \"--marker-dir"),
    );
    let config = config(dir.path(), &table);
    let turns = vec![
        call("c1", "uppercase", json!({"text": "a"})),
        call("c2", "uppercase", json!({"text": "b"})),
        Turn::text("done"),
    ];
    let started = std::time::Instant::now();
    let (output, bodies) =
        exec(dir.path(), turns, &["--api", "chat", "--config", &config, "exec", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(started.elapsed().as_secs() < 30, "the run waited for the slow server");
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        assert!(!body.to_string().contains("mcp__py__"), "{body}");
    }
    let err = stderr(&output);
    assert_eq!(err.matches("mcp server `broken` did not start").count(), 1, "{err}");
}

#[test]
fn a_server_that_fails_to_start_is_reported_with_its_stderr_and_the_rest_go_on() {
    let (Some(python), Some(bin)) = (python(), everything()) else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = format!(
        "{}\n[mcp_servers.broken]\ncommand = {:?}\nargs = [\"-c\", \"import sys; \
         print('no such thing', file=sys.stderr); sys.exit(1)\"]\n",
        everything_table(&bin),
        python.display()
    );
    let config = config(dir.path(), &table);
    let output = agent(dir.path(), &["tools", "list", "--config", &config]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("mcp__everything__echo"));
    let err = stderr(&output);
    assert_eq!(err.matches("mcp server `broken` did not start").count(), 1, "{err}");
    assert!(err.contains("no such thing"), "the stderr tail is shown: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_is_saved_in_the_session_folder_and_named() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table = format!("{}required = true\n", everything_table(&bin));
    let config = config(dir.path(), &table);
    let turns = vec![call("c1", "mcp__everything__get-tiny-image", json!({})), Turn::text("ok")];
    let args = ["--api", "chat", "--config", &config, "--allow", "mcp__everything", "exec", "go"];
    let (output, _) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outputs = outputs(dir.path(), &session_id(&output));
    let text = outputs[0]["output"].as_str().unwrap();
    let path = text.split("[image saved: ").nth(1).and_then(|rest| rest.split(" (").next());
    let bytes = std::fs::read(path.unwrap_or_else(|| panic!("no path in {text}"))).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_result_is_a_tool_error_with_the_servers_text() {
    if python().is_none() {
        return;
    }
    let markers = tempfile::tempdir().unwrap();
    let turns = vec![
        call("c1", "mcp__py__fail", json!({"message": "the disk is on fire"})),
        Turn::text("done"),
    ];
    let (_, bodies, outputs) = exec_py(markers.path(), "", turns, &["--allow", "mcp__py"]).await;
    assert_eq!(code(&outputs[0]), "tool_error", "{outputs:?}");
    assert!(outputs[0]["output"].as_str().unwrap().contains("the disk is on fire"), "{outputs:?}");
    assert_valid_next_request(&bodies, &["c1"]);
}

#[test]
fn tools_call_answers_through_server_everything_over_streamable_http() {
    let Some(bin) = everything() else { return };
    let (mut server, port) = crate::suite::mcp_cmd::everything_http(&bin);
    let dir = tempfile::tempdir().unwrap();
    let table = format!(
        "[mcp_servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\n{STARTUP}\
         http_headers = {{ X-Test = \"1\" }}\n"
    );
    let config = config(dir.path(), &table);
    let args =
        ["tools", "call", "mcp__remote__echo", r#"{"message":"over http"}"#, "--config", &config];
    let output = agent(dir.path(), &args);
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(output.status.success(), "{}\n{}", stdout(&output), stderr(&output));
    assert_eq!(stdout(&output).trim(), "Echo: over http");
}

#[test]
fn a_deny_hook_blocks_an_mcp_call_before_it_reaches_the_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let markers = tempfile::tempdir().unwrap();
    let hook = "[[hooks.PreToolUse]]\nmatcher = \"mcp__py__.*\"\n\
                command = \"echo 'hooks say no' >&2; exit 2\"\n";
    let tables = format!("{}{hook}", py_table(&python, markers.path(), ""));
    let config = config(dir.path(), &tables);
    let args = ["tools", "call", "mcp__py__touch", r#"{"name":"m"}"#, "--config", &config];
    let output = agent(dir.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("hooks say no"), "{}", stdout(&output));
    // The effect: the server never ran the tool (the same call without the hook does; see
    // `an_invalid_argument_is_refused_locally_and_never_reaches_the_server`).
    assert_eq!(std::fs::read_dir(markers.path()).unwrap().count(), 0);
}
