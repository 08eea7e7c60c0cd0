//! Our client speaking MCP 2026-07-28 over streamable HTTP, through the binary: the
//! Python SDK server (`agent-mcp/tests/peers/py_server.py --http`) on a loopback port, configured
//! as an HTTP server. Its tool is listed and called, `mcp get` shows the revision chosen, and the
//! server's own log shows every request it got carried the 2026-07-28 header, with no
//! `initialize` handshake at all.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::suite::{
    DEADLINE, agent,
    mcp::{STARTUP, config, py_server, python},
    stderr, stdout,
};

/// The Python server over streamable HTTP, killed when dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server with its markers and log in `markers`; waits for the port it writes.
fn start(python: &Path, markers: &Path) -> HttpServer {
    let port_file = markers.join("port");
    let child = Command::new(python)
        .arg(py_server())
        .args(["--marker-dir".as_ref(), markers.as_os_str(), "--http".as_ref()])
        .arg(&port_file)
        // Its own lines go to a file beside its log, for a failing run to show.
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(markers.join("server.stderr")).unwrap())
        .spawn()
        .unwrap();
    let mut server = HttpServer { child, port: 0 };
    let start = Instant::now();
    while !port_file.exists() {
        assert!(start.elapsed() < DEADLINE, "the Python server wrote no port");
        assert!(server.child.try_wait().unwrap().is_none(), "the Python server exited");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.port = std::fs::read_to_string(&port_file).unwrap().trim().parse().unwrap();
    server
}

#[test]
fn a_2026_server_over_streamable_http_is_listed_called_and_spoken_to_in_2026() {
    let Some(python) = python() else { return };
    let markers = tempfile::tempdir().unwrap();
    let server = start(&python, markers.path());
    let dir = tempfile::tempdir().unwrap();
    let table =
        format!("[mcp_servers.py]\nurl = \"http://127.0.0.1:{}/mcp\"\n{STARTUP}", server.port);
    let config = config(dir.path(), &table);
    let run = |args: &[&str]| {
        let args: Vec<&str> = args.iter().copied().chain(["--config", config.as_str()]).collect();
        let output = agent(dir.path(), &args);
        assert!(output.status.success(), "{args:?}: {}\n{}", stdout(&output), stderr(&output));
        stdout(&output)
    };

    let listed: Vec<Value> = serde_json::from_str(&run(&["tools", "list", "--json"])).unwrap();
    assert!(listed.iter().any(|tool| tool["name"] == "mcp__py__echo"), "{listed:?}");
    let called = run(&["tools", "call", "mcp__py__echo", r#"{"text":"over http in 2026"}"#]);
    assert_eq!(called.trim(), "over http in 2026");
    let got: Value = serde_json::from_str(&run(&["mcp", "get", "py", "--json"])).unwrap();
    assert_eq!((&got["transport"], &got["protocol"]), (&"http".into(), &"2026-07-28".into()));

    // What the server saw: every request in the 2026 revision, the call among them, and no
    // handshake of the 2025 era.
    let log = std::fs::read_to_string(markers.path().join("http.log")).unwrap();
    let requests: Vec<(&str, &str)> = log.lines().filter_map(|line| line.split_once(' ')).collect();
    assert!(requests.contains(&("tools/call", "2026-07-28")), "{log}");
    assert!(requests.iter().all(|(_, version)| *version == "2026-07-28"), "{log}");
    assert!(!requests.iter().any(|(method, _)| *method == "initialize"), "{log}");
}
