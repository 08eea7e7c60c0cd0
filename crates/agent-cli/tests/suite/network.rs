//! The allow-list from every door of the `agent` binary: `agent tools call` (flag and config),
//! `agent exec` with `agent sandbox net-log`, the REPL with `/network allow`, two `agent acp`
//! sessions at once, `agent mcp serve` and a `task` child. Each runs curl in its sandbox against
//! one loopback server that logs the path and `Host` of every request: the allowed name
//! (`ok.test`) reaches it, and the unlisted one (`unlisted.test`, pinned to the same server, so
//! only the proxy keeps it out) never does. No test asks a resolver: both names are pinned.

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, agents, command, exec::exec_recorded, screen::Screen, stderr, stdout};

/// A loopback HTTP server that logs `PATH host=HOST` for every request it gets.
struct Site {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Site {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let host = head
                    .lines()
                    .filter_map(|line| line.split_once(':'))
                    .find(|(name, _)| name.eq_ignore_ascii_case("host"))
                    .map_or("", |(_, value)| value.trim())
                    .to_owned();
                log.lock().unwrap().push(format!("{path} host={host}"));
                let body = format!("served {host}\n");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Self { port, seen }
    }

    /// The command every door runs: the allowed name, then the unlisted one (`tag` tells
    /// sessions apart).
    fn fetch(&self, tag: &str) -> String {
        let p = self.port;
        format!(
            "curl -sS http://ok.test:{p}/allowed-{tag}; curl -sS http://unlisted.test:{p}/unlisted-{tag}"
        )
    }

    /// `tag`'s allowed request, as the server logs it.
    fn allowed(&self, tag: &str) -> String {
        format!("/allowed-{tag} host=ok.test:{}", self.port)
    }
}

/// The config file: `ok.test` allowed, both names pinned to the loopback server; `mode` sets
/// `[network] mode` (otherwise the flag does), `extra` adds tables.
fn config(dir: &Path, mode: bool, extra: &str) -> String {
    let mode = if mode { "mode = \"allow-list\"\n" } else { "" };
    let network = format!(
        "[network]\n{mode}allow = [\"ok.test\"]\nresolve = {{ \"ok.test\" = \"127.0.0.1\", \"unlisted.test\" = \"127.0.0.1\" }}\n{extra}"
    );
    let path = dir.join("network.toml");
    std::fs::write(&path, network).unwrap();
    path.display().to_string()
}

/// The effect: exactly `reached` got to the server (the allowed requests, never an unlisted
/// one), and what the command printed shows both the answer and the refusal.
#[track_caller]
fn check(site: &Site, reached: &[String], printed: &str) {
    assert_eq!(*site.seen.lock().unwrap(), reached, "what reached the server; printed:\n{printed}");
    assert!(printed.contains("served ok.test"), "no answer in:\n{printed}");
    assert!(printed.contains("`unlisted.test` is not on the network allow-list"), "{printed}");
}

fn bash(id: &str, command: &str) -> ScriptedCall {
    ScriptedCall::new(id, "bash", json!({"command": command}))
}

#[test]
fn tools_call_goes_through_the_proxy_with_the_flag_and_with_the_config() {
    for (in_config, flags) in [(false, &["--network=allow-list"][..]), (true, &[][..])] {
        let dir = tempfile::tempdir().unwrap();
        let site = Site::start();
        let config = config(dir.path(), in_config, "");
        let arguments = json!({"command": site.fetch("t")}).to_string();
        let mut args = vec!["--config", &config];
        args.extend(flags);
        args.extend(["tools", "call", "bash", &arguments]);
        let output = agent(dir.path(), &args);
        // It used to panic for want of a runtime (exit 101).
        assert!(output.status.success(), "{}", stderr(&output));
        check(&site, &[site.allowed("t")], &stdout(&output));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_goes_through_the_proxy_and_net_log_names_the_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let site = Site::start();
    let config = config(dir.path(), false, "");
    let turns = vec![Turn::tool_calls([bash("f", &site.fetch("e"))]), Turn::text("fetched")];
    let args = ["--config", &config, "--permission-mode", "bypass", "--network=allow-list"];
    let (output, requests) =
        exec_recorded(dir.path(), turns, &[&args[..], &["exec", "go"]].concat()).await;
    assert!(output.status.success(), "{}", stderr(&output));
    check(&site, &[site.allowed("e")], &agents::answered(&requests, "f"));
    let log = agent(dir.path(), &["sandbox", "net-log"]);
    let log = stdout(&log);
    let line = |verdict: &str, host: &str| {
        log.lines().any(|line| line.starts_with(verdict) && line.contains(&format!(" {host}:")))
    };
    assert!(line("allowed", "ok.test"), "{log}");
    assert!(line("refused", "unlisted.test"), "{log}");
    assert!(log.contains("`unlisted.test` is not on the network allow-list"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_refuses_until_network_allow_names_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let site = Site::start();
    let again = format!("curl -sS http://unlisted.test:{}/unlisted-again", site.port);
    let script = Script::new([
        Turn::tool_calls([bash("f", &site.fetch("r"))]),
        Turn::text("first done"),
        Turn::tool_calls([bash("g", &again)]),
        Turn::text("second done"),
    ]);
    let server = ScriptedServer::start(script).await.unwrap();
    let config = config(dir.path(), false, "");
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let (before, listed) = tokio::task::spawn_blocking(move || {
        let args = [
            "--base-url",
            &url,
            "--model",
            "m",
            "--api",
            "chat",
            "--config",
            &config,
            "--permission-mode",
            "bypass",
            "--network=allow-list",
            "chat",
        ];
        let mut screen = Screen::agent(&workspace, &args, &[]);
        screen.wait_for("›");
        screen.type_text("fetch\r");
        screen.wait_for("first done");
        let before = site.seen.lock().unwrap().clone();
        screen.type_text("/network\r");
        screen.wait_for("allow it: /network allow unlisted.test");
        let listed = screen.contents();
        screen.type_text("/network allow unlisted.test\r");
        screen.wait_for("allowed `unlisted.test` for this session");
        screen.type_text("again\r");
        screen.wait_for("second done");
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        let after = site.seen.lock().unwrap().clone();
        assert_eq!(
            after,
            [site.allowed("r"), format!("/unlisted-again host=unlisted.test:{}", site.port)]
        );
        (before, listed)
    })
    .await
    .unwrap();
    assert_eq!(before.len(), 1, "only the allowed request before `/network allow`: {before:?}");
    assert!(listed.contains("not on the network allow-list"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_acp_sessions_at_once_each_reach_their_own_proxy() {
    let Some(sdk) = crate::suite::acp::sdk() else { return };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let site = Arc::new(Site::start());
    let script = Script::new([
        Turn::tool_calls([bash("a", &site.fetch("a"))]),
        Turn::text("a done"),
        Turn::tool_calls([bash("b", &site.fetch("b"))]),
        Turn::text("b done"),
    ]);
    let server = ScriptedServer::start(script).await.unwrap();
    let config = config(dir.path(), false, "");
    let args = vec![
        "--base-url".to_owned(),
        server.url(),
        "--model".to_owned(),
        "m".to_owned(),
        "--config".to_owned(),
        config,
        "--permission-mode".to_owned(),
        "bypass".to_owned(),
        "--network=allow-list".to_owned(),
    ];
    let ws = workspace.clone();
    let summary = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::suite::acp::client(&sdk, &ws, "two-sessions", &args, &[])
    })
    .await
    .unwrap();
    let ids: Vec<&Value> =
        summary["sessions"].as_array().unwrap().iter().map(|s| &s["sessionId"]).collect();
    assert_ne!(ids[0], ids[1], "{summary}");
    let printed: String = summary["updates"].to_string();
    check(&site, &[site.allowed("a"), site.allowed("b")], &printed.replace("\\u0060", "`"));
}

#[test]
fn mcp_serve_runs_bash_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let site = Site::start();
    let config = config(dir.path(), false, "");
    let args = [
        "--config",
        &config,
        "--permission-mode",
        "bypass",
        "--network=allow-list",
        "mcp",
        "serve",
    ];
    let mut command = command(dir.path(), &args);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| writeln!(input, "{message}").unwrap();
    let mut answer_to = |id: u64| -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert_ne!(output.read_line(&mut line).unwrap(), 0, "the server ended");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "network-test", "version": "1"}}}));
    answer_to(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": site.fetch("m")}}}));
    let result = answer_to(2);
    let _ = child.kill();
    let _ = child.wait();
    check(&site, &[site.allowed("m")], &result["result"].to_string().replace("\\u0060", "`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_child_runs_bash_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let site = Site::start();
    let network = std::fs::read_to_string(config(dir.path(), false, "")).unwrap();
    let config = agents::config(dir.path(), &network);
    let script = Script::new([
        Turn::tool_calls([agents::task("t", "general", "fetch \"A1\"")]),
        Turn::text("done"),
    ])
    .with_standing("\"f\"", Turn::text("fetched"))
    .with_standing("\\\"A1\\\"", Turn::tool_calls([bash("f", &site.fetch("c"))]));
    let args =
        ["--config", &config, "--permission-mode", "bypass", "--network=allow-list", "exec", "go"];
    let (output, requests) = agents::run(dir.path(), script, &args).await;
    assert!(output.status.success(), "{}", stderr(&output));
    check(&site, &[site.allowed("c")], &agents::answered(&requests, "f"));
}
