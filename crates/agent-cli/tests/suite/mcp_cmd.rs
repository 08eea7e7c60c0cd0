//! `agent mcp add/remove/list/get` against real servers: server-everything (over stdio and
//! streamable HTTP) and the Python SDK server, plus servers that fail, time out or are disabled.

use std::{
    io::{BufRead as _, BufReader},
    path::Path,
    process::{Child, Output},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::suite::{
    agent,
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
    assert!(table.lines().any(|line| line.starts_with("everything") && line.contains("connected")));
    assert!(table.contains("| boom-on-stderr"), "{table}");

    let out = check(d, &config, &["mcp", "get", "everything"], 0);
    let text = stdout(&out);
    assert!(
        text.contains("SECRET_TOKEN=*****") && text.contains("mcp__everything__echo"),
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
