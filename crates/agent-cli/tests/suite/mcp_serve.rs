//! `agent mcp serve` driven by a real MCP client, the Python `mcp` SDK's
//! (`agent-mcp/tests/peers/py_client.py`), over stdio and over streamable HTTP on 127.0.0.1: a whole
//! session (list, call, progress, cancellation), elicitation for `ask` verdicts, and the HTTP
//! gate (foreign Origin and Host, bearer token) tried the way an attacker would, each checked by
//! its effect in the workspace or in /proc. Each runs in the client's three modes: `auto` (it
//! probes `server/discover` and so speaks 2026-07-28 to us), `legacy` (the 2025-11-25
//! `initialize` handshake) and `2026-07-28` (no handshake at all), and checks which revision was
//! spoken. Without the peers these tests say SKIPPED (see `mcp.rs`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::suite::{Running, command, mcp::python, stderr};

/// The environment variable the served token is read from in these tests.
const TOKEN_VAR: &str = "AGENT_TEST_MCP_TOKEN";
const TOKEN: &str = "correct-horse-battery-staple";

/// How the client reaches the server.
enum Transport<'a> {
    /// The client starts `agent ARGS mcp serve` itself.
    Stdio(&'a [&'a str]),
    /// The client connects to a running `agent mcp serve --http`, with the token if one is set.
    Http(&'a Served),
}

/// An `agent mcp serve --http 127.0.0.1:0` serving a workspace; killed when dropped, also when
/// a test fails.
struct Served {
    running: Option<Running>,
    url: String,
    token: Option<&'static str>,
}

impl Served {
    /// Starts the server in `workspace` with `args` before `mcp serve`, and `serve_args` after.
    fn start(workspace: &Path, args: &[&str], serve_args: &[&str]) -> Self {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["mcp", "serve", "--http", "127.0.0.1:0"]);
        all.extend(serve_args);
        let mut command = command(workspace, &all);
        command.env(TOKEN_VAR, TOKEN);
        let mut running = Running::spawn(&mut command);
        // The server says where it listens once it does: no guessing with a sleep.
        // The whole line: its start may be read before its end.
        running.wait_until("the serving line on stderr", |running| {
            running
                .stderr_so_far()
                .split("serving MCP at ")
                .nth(1)
                .is_some_and(|rest| rest.contains('\n'))
        });
        let url = running
            .stderr_so_far()
            .split("serving MCP at ")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap_or_default()
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
        let token = serve_args.contains(&"--bearer-token-env").then_some(TOKEN);
        Self { running: Some(running), url, token }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.kill();
        }
    }
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-mcp/tests/peers/py_client.py")
}

/// The client's modes (`MCP_MODE`) and the revision each must end up speaking with us.
const MODES: [(&str, &str); 3] =
    [("auto", "2026-07-28"), ("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")];

/// Runs the client's `scenario` in `mode` against the server in `workspace` and returns its
/// report. `sleep` is the seconds of the long call the session scenario cancels: unique per test,
/// so the client finds that call's process and no other test's.
fn check(
    python: &Path,
    (scenario, mode): (&str, &str),
    transport: &Transport<'_>,
    workspace: &Path,
    sleep: &str,
) -> Value {
    let mut client = std::process::Command::new(python);
    client.arg(client_script()).arg(scenario).env("SLEEP", sleep).env("MCP_MODE", mode);
    match transport {
        Transport::Stdio(args) => {
            client.args(["stdio", env!("CARGO_BIN_EXE_agent")]).arg(workspace).args(*args);
        }
        Transport::Http(served) => {
            client.args(["http", &served.url]).arg(workspace);
            if let Some(token) = served.token {
                client.env("MCP_TOKEN", token);
            }
        }
    }
    let output = Running::spawn(&mut client).finish(&format!("py_client.py {scenario}"));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|err| panic!("{err}: {text}"))
}

/// The server named itself to the client: in `initialize`'s answer or `server/discover`'s. A
/// client pinned to 2026-07-28 sends neither (it adopts the version without asking), so it knows
/// no name.
fn assert_server_name(report: &Value, mode: &str) {
    let name = if mode == "2026-07-28" { Value::Null } else { json!("agent") };
    assert_eq!(report["server"], name, "{mode}: {report}");
}

/// What a whole session must show, whatever the transport.
fn assert_session(report: &Value, workspace: &Path) {
    // Annotations come from each tool's effects.
    assert_eq!(report["tools"]["read_file"], json!({"read_only": true, "destructive": false}));
    assert_eq!(report["tools"]["bash"], json!({"read_only": false, "destructive": true}));
    assert_eq!(report["uppercase"], json!(["HI", false]));
    // A 2.5 s call reported progress to a client that asked for it.
    assert!(report["progress"][0].as_str().unwrap().ends_with("slept"), "{report}");
    assert!(!report["progress"][1].as_array().unwrap().is_empty(), "{report}");
    // The cancelled call's process ran, and is gone from /proc.
    assert_eq!(report["cancelled_process_seen"], true, "{report}");
    assert_eq!(report["cancelled_process_left"], false, "{report}");
    // dont-ask by default: the edit is refused, naming the rule, and nothing was written.
    assert_eq!(report["refused"][1], true);
    assert!(report["refused"][0].as_str().unwrap().contains("Edit(./x.txt)"), "{report}");
    assert!(!workspace.join("x.txt").exists());
}

/// What elicitation must do, whatever the transport: accepted runs, declined, cancelled and
/// unaskable calls write nothing.
fn assert_elicitation(report: &Value, workspace: &Path) {
    assert_eq!(report["yes.txt"][1], false, "{report}");
    assert_eq!(std::fs::read_to_string(workspace.join("yes.txt")).unwrap(), "written");
    let question = report["questions"][0].as_str().unwrap();
    assert!(question.contains("write_file") && question.contains("Edit(./yes.txt)"), "{question}");
    for (name, says) in [("no.txt", "declined"), ("cancel.txt", "dismissed")] {
        assert_eq!(report[name][1], true, "{report}");
        let observation: Value = serde_json::from_str(report[name][0].as_str().unwrap()).unwrap();
        assert_eq!(observation["error"], "rejected", "{report}");
        assert!(observation["message"].as_str().unwrap().contains(says), "{report}");
        assert!(!workspace.join(name).exists(), "{name} was written");
    }
    // A client without elicitation is refused as in dont-ask, with the rule that would allow it.
    assert_eq!(report["other.txt"][1], true, "{report}");
    let observation: Value =
        serde_json::from_str(report["other.txt"][0].as_str().unwrap()).unwrap();
    assert_eq!(observation["error"], "permission_denied", "{report}");
    assert!(observation["message"].as_str().unwrap().contains("Edit(./other.txt)"), "{report}");
    assert!(!workspace.join("other.txt").exists());
}

#[test]
fn a_python_sdk_client_session_over_stdio() {
    let Some(python) = python() else { return };
    let transport = Transport::Stdio(&["--allow", "Bash(sleep *)"]);
    for (index, (mode, spoken)) in MODES.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let sleep = format!("31.2{index}");
        let report = check(&python, ("session", mode), &transport, dir.path(), &sleep);
        assert_eq!(report["protocol"], spoken, "{mode}: {report}");
        assert_server_name(&report, mode);
        assert_session(&report, dir.path());
    }
}

#[test]
fn a_python_sdk_client_session_over_http_with_a_bearer_token() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(
        dir.path(),
        &["--allow", "Bash(sleep *)"],
        &["--bearer-token-env", TOKEN_VAR],
    );
    for (index, (mode, spoken)) in MODES.into_iter().enumerate() {
        let sleep = format!("31.5{index}");
        let report =
            check(&python, ("session", mode), &Transport::Http(&served), dir.path(), &sleep);
        assert_eq!(report["protocol"], spoken, "{mode}: {report}");
        assert_server_name(&report, mode);
        assert_session(&report, dir.path());
    }
    // The token never reaches the server's output.
    let running = served.running.as_ref().unwrap();
    assert!(!running.stderr_so_far().contains(TOKEN));
}

#[test]
fn a_bearer_token_variable_that_is_not_set_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["mcp", "serve", "--http", "127.0.0.1:0", "--bearer-token-env", "AGENT_TEST_UNSET"];
    let output = crate::suite::agent(dir.path(), &args);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("AGENT_TEST_UNSET: the variable is not set"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("serving MCP"), "{}", stderr(&output));
}

#[test]
fn an_ask_verdict_is_elicited_over_stdio() {
    let Some(python) = python() else { return };
    let transport = Transport::Stdio(&["--permission-mode", "default"]);
    for (mode, spoken) in MODES {
        let dir = tempfile::tempdir().unwrap();
        let report = check(&python, ("elicit", mode), &transport, dir.path(), "0");
        assert_eq!(report["protocol"], spoken, "{mode}: {report}");
        assert_elicitation(&report, dir.path());
    }
}

#[test]
fn an_ask_verdict_is_elicited_over_http() {
    let Some(python) = python() else { return };
    for (mode, spoken) in MODES {
        let dir = tempfile::tempdir().unwrap();
        let served = Served::start(dir.path(), &["--permission-mode", "default"], &[]);
        let report = check(&python, ("elicit", mode), &Transport::Http(&served), dir.path(), "0");
        assert_eq!(report["protocol"], spoken, "{mode}: {report}");
        assert_elicitation(&report, dir.path());
    }
}

#[test]
fn http_requests_with_a_foreign_origin_or_host_are_refused_and_run_nothing() {
    let Some(python) = python() else { return };
    // Both eras: a 2025 session opened with `initialize`, and 2026 requests that stand alone.
    for mode in ["legacy", "2026-07-28"] {
        let dir = tempfile::tempdir().unwrap();
        let served = Served::start(dir.path(), &["--allow", "Bash(touch *)"], &[]);
        let report = check(&python, ("attack", mode), &Transport::Http(&served), dir.path(), "0");
        for name in ["origin", "host"] {
            assert_eq!(report[format!("initialize_{name}")], 403, "{mode}: {report}");
            assert_eq!(report[format!("call_{name}")], 403, "{mode}: {report}");
            assert!(!dir.path().join(name).exists(), "{mode}: the {name} attack ran a command");
        }
        // The same call, made properly, runs: the refusals were the gate's.
        assert_eq!(report["initialize"], 200, "{mode}: {report}");
        assert_eq!(report["call_control"], 200, "{mode}: {report}");
        assert!(dir.path().join("control").exists(), "{mode}: {report}");
    }
}

#[test]
fn http_requests_without_the_bearer_token_are_refused_and_run_nothing() {
    let Some(python) = python() else { return };
    for mode in ["legacy", "2026-07-28"] {
        let dir = tempfile::tempdir().unwrap();
        let served = Served::start(
            dir.path(),
            &["--allow", "Bash(touch *)"],
            &["--bearer-token-env", TOKEN_VAR],
        );
        let report = check(&python, ("attack", mode), &Transport::Http(&served), dir.path(), "0");
        for name in ["no_token", "wrong_token"] {
            assert_eq!(report[format!("initialize_{name}")], 401, "{mode}: {report}");
            assert_eq!(report[format!("call_{name}")], 401, "{mode}: {report}");
            assert!(!dir.path().join(name).exists(), "{mode}: the {name} request ran a command");
        }
        assert_eq!(report["call_control"], 200, "{mode}: {report}");
        assert!(dir.path().join("control").exists(), "{mode}: {report}");
    }
}

/// The MCP conformance suite's server mode (its active scenarios) against `agent mcp serve
/// --http`, judged against the committed baseline (`scripts/mcp/conformance-baseline.yml`): a
/// new failure and a baseline entry that now passes both fail the test.
#[test]
fn every_applicable_conformance_server_scenario_passes() {
    let Some(modules) = agent_test_support::mcp_peer(
        "node/node_modules/@modelcontextprotocol/conformance",
        "the MCP conformance suite",
    ) else {
        return;
    };
    let modules = modules.parent().unwrap().parent().unwrap().to_path_buf();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &["--allow", "Bash(*)"], &[]);
    let results = tempfile::tempdir().unwrap();
    let mut suite = std::process::Command::new("node");
    suite
        .arg(repo.join("scripts/mcp/conformance.mjs"))
        .arg(modules)
        .args(["server", "--url", &served.url, "--expected-failures"])
        .arg(repo.join("scripts/mcp/conformance-baseline.yml"))
        .arg("-o")
        .arg(results.path())
        .current_dir(results.path());
    let output = Running::spawn(&mut suite).finish("the conformance suite");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", stderr(&output));
    for scenario in ["server-initialize", "tools-list", "dns-rebinding-protection"] {
        assert!(stdout.contains(&format!("✓ {scenario}:")), "{scenario}: {stdout}");
    }
    assert!(stdout.contains("Baseline check passed"), "{stdout}");
}
