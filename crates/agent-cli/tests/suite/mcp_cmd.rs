//! `agent mcp add/remove/list/get` against real servers: server-everything (over stdio and
//! streamable HTTP) and the Python SDK server, plus servers that fail, time out or are disabled;
//! and a project's `.mcp.json`, whose servers run only once approved (`agent mcp approve`).

use std::{
    io::{BufRead as _, BufReader},
    path::Path,
    process::{Child, Output},
    time::{Duration, Instant},
};

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{
    agent,
    exec::exec,
    mcp::{STARTUP, config, everything, py_server, python},
    stderr, stdout,
};

/// A value that must never appear in any output.
const SECRET: &str = "sk-never-shown-4242";

/// Runs `agent ARGS --config CONFIG` in `dir`, checks the exit code, and that no output holds
/// [`SECRET`].
#[track_caller]
fn check(dir: &Path, config: &str, args: &[&str], code: i32) -> Output {
    // Before the command: after `add`'s `--` it would be the server's argument.
    let mut all = vec!["--config", config];
    all.extend(args);
    let output = agent(dir, &all);
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(code), "agent {all:?}\nstdout: {out}\nstderr: {err}");
    assert!(!out.contains(SECRET) && !err.contains(SECRET), "a secret was shown: {out}\n{err}");
    output
}

/// server-everything over streamable HTTP on a free loopback port; killed by the caller.
pub(crate) fn everything_http(bin: &Path) -> (Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = std::process::Command::new(bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ready when it says so on stderr.
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let ready = lines.by_ref().map_while(Result::ok).any(|line| line.contains("listening"));
    assert!(ready, "server-everything did not start listening");
    std::thread::spawn(move || lines.for_each(drop));
    (server, port)
}

fn by_name<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter().find(|server| server["name"] == name).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn add_list_get_remove_against_real_servers() {
    let Some(bin) = everything() else { return };
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (mut http, port) = everything_http(&bin);
    let before = format!(
        "# my settings\n[limits]\noutput_cap = 9000  # keep this comment\n\n\
         # off for now\n[mcp_servers.off]\ncommand = \"true\"\nenabled = false\n\n\
         [mcp_servers.slow]\ncommand = {:?}\nargs = [{:?}, \"--slow-start\", \"60\"]\n\
         startup_timeout_sec = 2\n",
        python.display(),
        py_server().display()
    );
    let config = config(dir.path(), &before);
    let d = dir.path();
    let bin = bin.display().to_string();
    let env = format!("SECRET_TOKEN={SECRET}");
    let out =
        check(d, &config, &["mcp", "add", "everything", "--env", &env, "--", &bin, "stdio"], 0);
    assert!(stdout(&out).contains("SECRET_TOKEN set (values not shown)"), "{}", stdout(&out));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let header = format!("X-Api-Key={SECRET}");
    check(d, &config, &["mcp", "add", "remote", "--url", &url, "--header", &header], 0);
    let crash = "echo boom-on-stderr >&2; exit 3";
    check(d, &config, &["mcp", "add", "broken", "--", "sh", "-c", crash], 0);
    let written = std::fs::read_to_string(&config).unwrap();
    // The user's file is kept byte for byte; the new tables follow.
    assert!(written.starts_with(&before), "{written}");
    // The timeouts: generous for the servers that must start on a loaded machine.
    std::fs::write(
        &config,
        written.replace("args = [\"stdio\"]\n", &format!("args = [\"stdio\"]\n{STARTUP}")),
    )
    .unwrap();

    // A duplicate name and an invalid one are refused, and the file is left alone.
    let unchanged = std::fs::read_to_string(&config).unwrap();
    let out = check(d, &config, &["mcp", "add", "everything", "--", "x"], 2);
    assert!(stderr(&out).contains("`everything` is already configured"), "{}", stderr(&out));
    let out = check(d, &config, &["mcp", "add", "my.server", "--", "x"], 2);
    assert!(stderr(&out).contains("name `my.server` may use only"), "{}", stderr(&out));
    let out = check(d, &config, &["mcp", "add", "nothing"], 2);
    assert!(stderr(&out).contains("-- COMMAND ARGS"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), unchanged);

    let out = check(d, &config, &["mcp", "list", "--json"], 0);
    let list: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = list.iter().filter_map(|server| server["name"].as_str()).collect();
    assert_eq!(names, ["broken", "everything", "off", "remote", "slow"]);
    let state = |name: &str| by_name(&list, name)["state"].as_str().unwrap().to_owned();
    assert_eq!(
        names.iter().map(|name| state(name)).collect::<Vec<_>>(),
        ["failed", "connected", "disabled", "connected", "timeout"]
    );
    let everything = by_name(&list, "everything");
    let tools = everything["tools"].as_array().unwrap();
    assert!(tools.iter().any(|tool| tool["name"] == "mcp__everything__echo"), "{everything}");
    let sum: u64 = tools.iter().map(|tool| tool["tokens"].as_u64().unwrap()).sum();
    assert_eq!(everything["schema_tokens"].as_u64(), Some(sum));
    assert_eq!(by_name(&list, "remote")["transport"], "http");
    // server-everything speaks 2025-11-25 over both transports: the probe fell back.
    for name in ["everything", "remote"] {
        assert_eq!(by_name(&list, name)["protocol"], "2025-11-25", "{name}");
    }
    assert!(by_name(&list, "broken").get("protocol").is_none());
    assert_eq!(by_name(&list, "remote")["tools"].as_array().unwrap().len(), tools.len());
    let broken = by_name(&list, "broken");
    assert!(broken["stderr_tail"].as_str().unwrap().contains("boom-on-stderr"), "{broken}");
    assert!(by_name(&list, "slow")["error"].as_str().unwrap().contains("startup_timeout_sec"));

    // The schema sizes are the ones `agent tools list --tokens` counts for the same tools.
    let out = check(d, &config, &["tools", "list", "--tokens", "--json"], 0);
    let counted: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for tool in tools {
        let same = counted["tools"].as_array().unwrap().iter().find(|t| t["name"] == tool["name"]);
        assert_eq!(same.map(|t| &t["tokens"]), Some(&tool["tokens"]), "{tool}");
    }

    let out = check(d, &config, &["mcp", "list"], 0);
    let table = stdout(&out);
    assert!(table.lines().any(|line| line.starts_with("everything")
        && line.contains("connected")
        && line.contains("2025-11-25")));
    assert!(table.lines().next().unwrap().contains("PROTOCOL"), "{table}");
    assert!(table.contains("| boom-on-stderr"), "{table}");

    let out = check(d, &config, &["mcp", "get", "everything"], 0);
    let text = stdout(&out);
    assert!(
        text.contains("SECRET_TOKEN=*****")
            && text.contains("mcp__everything__echo")
            && text.contains("  protocol: 2025-11-25\n"),
        "{text}"
    );
    let out = check(d, &config, &["mcp", "get", "remote", "--json"], 0);
    let remote: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(remote["config"]["http_headers"]["X-Api-Key"], "*****");
    assert_eq!(remote["state"], "connected");
    let out = check(d, &config, &["mcp", "get", "nope"], 2);
    assert!(stderr(&out).contains("no MCP server named `nope`"), "{}", stderr(&out));

    // Removing keeps the rest, comments included.
    check(d, &config, &["mcp", "remove", "broken"], 0);
    check(d, &config, &["mcp", "remove", "off"], 0);
    let out = check(d, &config, &["mcp", "remove", "broken"], 2);
    assert!(stderr(&out).contains("no MCP server named `broken`"), "{}", stderr(&out));
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(after.starts_with("# my settings\n[limits]\noutput_cap = 9000  # keep this comment\n"));
    assert!(!after.contains("broken") && !after.contains("off for now"), "{after}");
    assert!(after.contains("[mcp_servers.slow]") && after.contains("[mcp_servers.remote]"));
    http.kill().unwrap();
    http.wait().unwrap();
}

#[test]
fn add_without_config_writes_the_default_config_file() {
    let dir = tempfile::tempdir().unwrap();
    // The tests' environment points the platform config directory into the workspace.
    let output = agent(dir.path(), &["mcp", "add", "local", "--", "my-server", "--flag"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let path = dir.path().join(".no-config/agent/config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, "[mcp_servers.local]\ncommand = \"my-server\"\nargs = [\"--flag\"]\n");
    let output = agent(dir.path(), &["mcp", "remove", "local"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}

#[test]
fn list_starts_servers_together_and_leaves_none_running() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    // A unique argument, to find the servers' processes by.
    let tag = dir.path().join("slow-tag").display().to_string();
    let table = |name: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = {:?}\nargs = [{:?}, \"--slow-start\", \"60\", \
             \"--marker-dir\", {tag:?}]\nstartup_timeout_sec = 3\n",
            python.display(),
            py_server().display()
        )
    };
    let config = config(dir.path(), &format!("{}{}{}", table("a"), table("b"), table("c")));
    let start = Instant::now();
    let out = check(dir.path(), &config, &["mcp", "list", "--json"], 0);
    let elapsed = start.elapsed();
    let list: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(list.iter().all(|server| server["state"] == "timeout"), "{list:?}");
    // One after another would take 9 s.
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    // The effect: no server is left behind. SIGKILL takes effect once a process leaves the
    // kernel, which on a loaded machine may take a moment: the test waits for the event, with a
    // deadline.
    let running = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
            .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
            .filter(|cmdline| cmdline.contains(&tag))
            .collect()
    };
    let start = Instant::now();
    while !running().is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(running().is_empty(), "{:?}", running());
}

/// Writes the workspace's `.mcp.json` with one server, `evil`, whose command creates `marker`
/// in the workspace (its working directory).
fn mcp_json(workspace: &Path, marker: &str) {
    let file = json!({"mcpServers": {"evil": {"command": "sh", "args": ["-c", format!("touch {marker}")]}}});
    std::fs::write(workspace.join(".mcp.json"), file.to_string()).unwrap();
}

/// Runs `exec` with one turn that waits (up to the bash tool's time limit) for `marker` to appear, so an approved
/// server has surely started before the session ends; returns stderr.
async fn exec_waiting_for(workspace: &Path, marker: &str) -> String {
    // No command substitution: no rule can allow that, and the call would be refused unrun.
    let wait = format!("until [ -e {marker} ]; do sleep 0.05; done; echo found");
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("c1", "bash", json!({"command": wait}))]),
        Turn::text("done"),
    ];
    let (output, bodies) =
        exec(workspace, turns, &["--api", "chat", "--allow", "Bash", "exec", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // What the wait saw, so a failure says whether the server never started or the wait failed.
    let observation = bodies
        .get(1)
        .and_then(|body| body["messages"].as_array()?.iter().find(|m| m["role"] == "tool").cloned())
        .map(|message| message["content"].to_string())
        .unwrap_or_default();
    assert!(observation.ends_with("\\nfound\""), "{observation}\nstderr: {}", stderr(&output));
    stderr(&output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloned_repos_mcp_json_runs_nothing_until_approved() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    mcp_json(ws, "pwned");
    // exec and tools leave the unapproved server out, and say how to approve it.
    let (output, _) = exec(ws, vec![Turn::text("ok")], &["--api", "chat", "exec", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("`evil` not approved") && err.contains("agent mcp approve"), "{err}");
    let output = agent(ws, &["tools", "list"]);
    assert!(output.status.success() && stderr(&output).contains("`evil` not approved"));
    let output = agent(ws, &["mcp", "list", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!((&list[0]["name"], &list[0]["state"]), (&json!("evil"), &json!("unapproved")));
    // The effect: the command never ran (`tools list` waits for every server it starts).
    assert!(!ws.join("pwned").exists());

    // Approved, it runs.
    let output = agent(ws, &["mcp", "approve"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("approved MCP server `evil`"), "{}", stdout(&output));
    assert!(stdout(&output).contains("sh -c touch pwned"), "{}", stdout(&output));
    let err = exec_waiting_for(ws, "pwned").await;
    assert!(!err.contains("not approved"), "{err}");
    assert!(ws.join("pwned").exists());

    // A changed definition is not approved: it does not run until approved again.
    mcp_json(ws, "pwned-again");
    let (output, _) = exec(ws, vec![Turn::text("ok")], &["--api", "chat", "exec", "go"]).await;
    assert!(stderr(&output).contains("`evil` not approved"), "{}", stderr(&output));
    let output = agent(ws, &["tools", "list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!ws.join("pwned-again").exists());
    let output = agent(ws, &["mcp", "approve", "evil"]);
    assert!(output.status.success(), "{}", stderr(&output));
    exec_waiting_for(ws, "pwned-again").await;
    assert!(ws.join("pwned-again").exists());

    // Approval is per project: the same file in another workspace is not approved.
    let other = tempfile::tempdir().unwrap();
    mcp_json(other.path(), "pwned");
    let output = agent(other.path(), &["tools", "list"]);
    assert!(stderr(&output).contains("`evil` not approved"), "{}", stderr(&output));
    assert!(!other.path().join("pwned").exists());
}

#[test]
fn a_configured_server_wins_over_the_projects_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    mcp_json(ws, "from-project");
    let config = config(
        ws,
        "[mcp_servers.evil]\ncommand = \"sh\"\nargs = [\"-c\", \"touch from-config\"]\n",
    );
    let output = agent(ws, &["--config", &config, "tools", "list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    // No approval was asked for: the project's `evil` is replaced, not merged.
    assert!(!stderr(&output).contains("not approved"), "{}", stderr(&output));
    assert!(ws.join("from-config").exists());
    assert!(!ws.join("from-project").exists());
    let output = agent(ws, &["--config", &config, "mcp", "approve"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("defines no MCP servers to approve"), "{}", stderr(&output));
}

#[test]
fn a_broken_mcp_json_never_stops_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let file = json!({"mcpServers": {"bad.name": {"command": "x"}, "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}});
    std::fs::write(ws.join(".mcp.json"), file.to_string()).unwrap();
    let output = agent(ws, &["tools", "list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("server `bad.name` is left out: mcp server name"), "{err}");
    assert!(err.contains("server `old` is left out: `sse` servers are not supported"), "{err}");
    std::fs::write(ws.join(".mcp.json"), "{not json").unwrap();
    let output = agent(ws, &["tools", "list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the project's MCP servers are left out"),
        "{}",
        stderr(&output)
    );
}
