//! Measures an MCP tool call's round trip through our client: `echo` on server-everything over
//! stdio, called through `Executor::execute` exactly as a model's call runs (look-up, validation
//! against the server's schema, permission, time limit, the rmcp request with its progress token,
//! the result turned into an observation), beside the same calls made by the Python `mcp` SDK's
//! client (`scripts/mcp/bench_client.py`) in turns with ours.
//!
//! Run with `cargo run --release -p agent-mcp --example mcp_call [-- --json] [--quick]`. The
//! peers are the ones `scripts/mcp/setup.sh` installs (`$AGENT_MCP_PEERS`, else
//! `~/.cache/agent/mcp-peers`); without them it prints a note and no figure. With `--json` it
//! prints one `{"name","unit","median","min","max","runs"}` object per line, which
//! `cargo xtask bench` collects as `mcp.call_overhead` (µs per call, ours),
//! `mcp.call_overhead.python_sdk` and `mcp.call_overhead.ratio` (ours ÷ theirs, per round); each
//! run is one round of calls.
//!
//! Both protocol eras: `mcp.call_overhead.py_2025` and `mcp.call_overhead.py_2026` are the same
//! rounds of `echo` calls to the Python SDK's test server (`tests/peers/py_server.py`) forced to
//! 2025-11-25 and to 2026-07-28 (where every request carries its `_meta`), so the two figures
//! differ only by the era.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::disallowed_methods)]

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader, Write as _},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use agent_core::{CancellationToken, ToolCall};
use agent_exec::{AgentBuilder, Executor, PermissionMode};
use agent_mcp::{McpSession, McpTools, ServerConfig, ServerEnv};

fn peers() -> PathBuf {
    match std::env::var_os("AGENT_MCP_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::home_dir().unwrap_or_default().join(".cache/agent/mcp-peers"),
    }
}

/// Our executor with server-everything's tools, every server ready.
async fn executor(everything: &Path, workspace: &Path) -> Executor {
    let config: ServerConfig =
        serde_json::from_value(serde_json::json!({"command": everything, "args": ["stdio"]}))
            .unwrap();
    executor_of("everything", config, workspace).await
}

/// Our executor with the tools of the one server `name`, ready.
async fn executor_of(name: &str, config: ServerConfig, workspace: &Path) -> Executor {
    let configs = BTreeMap::from([(name.to_owned(), config)]);
    let env = ServerEnv { workspace: workspace.to_path_buf(), session_dir: None };
    let tools = McpTools::start(McpSession::new(&configs, env).unwrap(), |problem| {
        panic!("the server did not start: {problem}")
    });
    tools.wait_all().await;
    let executor = AgentBuilder::new(workspace)
        .late_tools(tools)
        .permission_mode(PermissionMode::Bypass)
        .build_executor()
        .unwrap();
    executor.refresh_late_tools().await;
    executor
}

/// Microseconds per call of `calls` `echo` calls, one after the other.
async fn round(executor: &Executor, calls: usize) -> f64 {
    round_of(executor, calls, "mcp__everything__echo", r#"{"message":"hi"}"#, "Echo: hi").await
}

/// Microseconds per call of `calls` calls of `tool` with `arguments`, each answering `expect`.
async fn round_of(
    executor: &Executor,
    calls: usize,
    tool: &str,
    arguments: &str,
    expect: &str,
) -> f64 {
    let call = ToolCall {
        call_id: "c1".to_owned(),
        name: tool.to_owned(),
        arguments: arguments.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    };
    let token = CancellationToken::new();
    let started = Instant::now();
    for _ in 0..calls {
        let outcome = executor.execute(&call, &token).await;
        assert!(outcome.ok && outcome.text == expect, "{}", outcome.text);
    }
    started.elapsed().as_secs_f64() * 1e6 / calls as f64
}

fn figure(json: bool, name: &str, unit: &str, mut values: Vec<f64>, what: &str) {
    values.sort_by(f64::total_cmp);
    let (median, min, max) = (values[values.len() / 2], values[0], values[values.len() - 1]);
    if json {
        let line = serde_json::json!({"name": name, "unit": unit, "median": median, "min": min, "max": max, "runs": values.len()});
        println!("{line}");
    } else {
        println!("{name} median {median:.2} {unit} (min {min:.2}, max {max:.2}): {what}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let (rounds, calls) =
        if args.iter().any(|arg| arg == "--quick") { (5, 100) } else { (15, 200) };
    let peers = peers();
    let everything = peers.join("node/node_modules/.bin/mcp-server-everything");
    let python = peers.join("venv/bin/python");
    if !everything.exists() || !python.exists() {
        println!(
            "MCP peers not installed in {} (scripts/mcp/setup.sh): mcp.call_overhead skipped",
            peers.display()
        );
        return;
    }
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mcp/bench_client.py");
    let workspace = tempfile::tempdir().unwrap();

    // The Python client starts its own server-everything, warms up and waits for our word.
    let mut theirs = Command::new(&python)
        .arg(&client)
        .arg(&everything)
        .arg(calls.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut to_theirs = theirs.stdin.take().unwrap();
    let mut from_theirs = BufReader::new(theirs.stdout.take().unwrap()).lines();
    let mut line = || from_theirs.next().unwrap().unwrap();
    assert_eq!(line(), "ready");

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (mut ours, mut python_sdk, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        let executor = executor(&everything, workspace.path()).await;
        round(&executor, 20).await;
        // Rounds in turns, so both clients see the same load on the machine.
        for _ in 0..rounds {
            let us = round(&executor, calls).await;
            writeln!(to_theirs, "go").unwrap();
            let them: f64 = line().trim().parse().unwrap();
            ours.push(us);
            python_sdk.push(them);
            ratio.push(us / them);
        }
    });
    writeln!(to_theirs).unwrap();
    theirs.wait().unwrap();

    // The same calls to one server in each era, rounds in turns.
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_server.py");
    let (mut py_2025, mut py_2026) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        let forced = |era: &str| {
            let args = vec![server.display().to_string(), "--era".to_owned(), era.to_owned()];
            let mut config = ServerConfig::stdio(python.display().to_string(), args);
            config.startup_timeout_sec = 120.0;
            config
        };
        let legacy = executor_of("py", forced("legacy"), workspace.path()).await;
        let modern = executor_of("py", forced("modern"), workspace.path()).await;
        let echo =
            |executor, calls| round_of(executor, calls, "mcp__py__echo", r#"{"text":"hi"}"#, "hi");
        echo(&legacy, 20).await;
        echo(&modern, 20).await;
        for _ in 0..rounds {
            py_2025.push(echo(&legacy, calls).await);
            py_2026.push(echo(&modern, calls).await);
        }
    });

    let what = format!("{calls} echo calls to server-everything over stdio, per round");
    figure(json, "mcp.call_overhead", "µs", ours, &format!("ours (Executor::execute); {what}"));
    figure(json, "mcp.call_overhead.python_sdk", "µs", python_sdk, &format!("Python SDK; {what}"));
    figure(json, "mcp.call_overhead.ratio", "×", ratio, "ours ÷ Python SDK, per round");
    let what = format!("{calls} echo calls to the Python SDK's server over stdio, per round");
    figure(json, "mcp.call_overhead.py_2025", "µs", py_2025, &format!("ours, 2025-11-25; {what}"));
    figure(json, "mcp.call_overhead.py_2026", "µs", py_2026, &format!("ours, 2026-07-28; {what}"));
}
