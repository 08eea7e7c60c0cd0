//! `agent acp` fed raw lines a client should not send: a malformed line, an unknown method, bad
//! parameters and a line far over the frame limit. Each gets a JSON-RPC error, the connection
//! goes on to answer the next request, memory stays bounded, and stderr reports no internal
//! error.

use std::{
    io::{BufRead, BufReader, Lines, Write},
    path::Path,
    process::{Child, ChildStdin, ChildStdout, Stdio},
};

use serde_json::Value;

use crate::suite::command;

/// `agent acp` with its pipes, stderr going to a file in `dir`.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    stderr: std::path::PathBuf,
}

impl Acp {
    fn start(dir: &Path) -> Self {
        let stderr = dir.join("stderr.txt");
        let mut child = command(dir, &["acp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, stdin, lines, stderr }
    }

    /// Sends one line and reads the answer.
    fn ask(&mut self, line: &str) -> Value {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
        serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap()
    }

    /// The process's peak resident memory so far, in bytes (`VmHWM`), read while it runs.
    fn peak_rss(&mut self) -> u64 {
        assert!(self.child.try_wait().unwrap().is_none(), "the agent is not running");
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib * 1024
    }

    /// Closes stdin, checks the agent exits cleanly and that stderr reports no internal error.
    fn finish(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
        let stderr = std::fs::read_to_string(&self.stderr).unwrap();
        assert!(!stderr.contains("Responder dropped"), "{stderr}");
        assert!(!stderr.contains("-32603") && !stderr.contains("nternal error"), "{stderr}");
    }
}

fn initialize(id: u64, pad: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":1,"pad":"{}"}}}}"#,
        "x".repeat(pad)
    )
}

/// A malformed line, an unknown method and bad parameters each get their JSON-RPC error, with
/// nothing on stderr about a dropped request, and the connection goes on to answer
/// `initialize`.
#[test]
fn malformed_frames_and_unknown_methods_get_errors_and_the_connection_lives_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(dir.path());
    assert_eq!(acp.ask("this is not json")["error"]["code"], -32700);
    let unknown = acp.ask(r#"{"jsonrpc":"2.0","id":1,"method":"session/frobnicate","params":{}}"#);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["id"], 1);
    let bad = acp.ask(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}"#);
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(bad["id"], 2);
    let init = acp.ask(&initialize(3, 0));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    acp.finish();
}

/// A 100 MB line is refused with an error carrying its id, without being held: the agent's
/// peak memory stays under 64 MiB. A 1 MB frame (the control) is read and answered, and so is
/// the request after the refused one.
#[test]
fn a_frame_over_the_limit_is_refused_unread_and_the_next_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(dir.path());
    let control = acp.ask(&initialize(1, 1_000_000));
    assert_eq!(control["result"]["protocolVersion"], 1, "{control}");
    let huge = initialize(2, 100_000_000);
    let refused = acp.ask(&huge);
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    let expected = format!("the frame is {} bytes, over the limit of 16777216", huge.len());
    assert!(message.starts_with(&expected), "{message}");
    let next = acp.ask(&initialize(3, 0));
    assert_eq!(next["result"]["protocolVersion"], 1, "{next}");
    let peak = acp.peak_rss();
    eprintln!("agent acp peak RSS after a 100 MB frame: {:.1} MiB", peak as f64 / 1048576.0);
    assert!(peak < 64 << 20, "peak RSS {peak} bytes");
    acp.finish();
}
