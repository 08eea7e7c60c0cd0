//! Hostile model servers (`tests/peers/hostile_model.py`, loopback only) against the real binary:
//! its memory and CPU, measured by the kernel through `tests/peers/measure.py`, stay bounded, and
//! every run ends with the error of the bound that stopped it (docs/limits.md).

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use agent_model::scripted::{Fault, Script, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{DEADLINE, Running, command, exec::exec, stderr};

/// The peak memory the issue allows the agent under any of these servers.
const MAX_RSS_KIB: u64 = 64 * 1024;

fn peer(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

/// A hostile server in `mode`, listening; its report is read once it has answered. Dropping it
/// kills it, so a failed test leaves nothing running.
struct Hostile {
    process: std::process::Child,
    port: u16,
    report: PathBuf,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Hostile {
    fn start(dir: &Path, mode: &str, seconds: u64) -> Self {
        let report = dir.join(format!("{mode}.server.json"));
        let mut command = Command::new("python3");
        command
            .arg(peer("hostile_model.py"))
            .arg(mode)
            .arg(&report)
            .arg(seconds.to_string())
            .stdin(Stdio::null());
        let mut child = command.stdout(Stdio::piped()).spawn().expect("python3 runs");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        BufReader::new(stdout).read_line(&mut line).expect("the server prints its port");
        let port = line.trim().strip_prefix("PORT ").and_then(|port| port.parse().ok());
        let port = port.unwrap_or_else(|| panic!("no port from the server: {line:?}"));
        Self { process: child, port, report }
    }

    /// What the server sent, once it has exited (it exits after its one answer).
    fn report(mut self) -> Value {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.process.try_wait().unwrap() {
                break status;
            }
            assert!(start.elapsed() < DEADLINE, "the hostile server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "the server failed: {status}");
        serde_json::from_str(&std::fs::read_to_string(&self.report).unwrap()).unwrap()
    }
}

/// What the kernel measured of one agent run.
struct Measured {
    output: Output,
    max_rss_kib: u64,
    cpu_s: f64,
    elapsed: Duration,
}

/// Runs `agent --base-url … --model m ARGS` against `server` under `measure.py`, with a config
/// file holding `limits` as its `[limits]` table.
fn measured(dir: &Path, server: &Hostile, limits: &str, args: &[&str]) -> Measured {
    let workspace = dir.join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(&config, format!("[limits]\n{limits}\n")).unwrap();
    let url = format!("http://127.0.0.1:{}/v1", server.port);
    let mut full = vec!["--config", config.to_str().unwrap(), "--base-url", &url, "--model", "m"];
    full.extend(args);
    let agent = command(&workspace, &full);
    let report = dir.join("agent.measure.json");
    let mut wrapped = Command::new("python3");
    wrapped.arg(peer("measure.py")).arg(&report).arg(agent.get_program()).args(agent.get_args());
    wrapped.env_clear().current_dir(&workspace).stdin(Stdio::null());
    for (name, value) in agent.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    let started = Instant::now();
    let output = Running::spawn(&mut wrapped).finish("the measured agent");
    let elapsed = started.elapsed();
    let usage: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    Measured {
        max_rss_kib: usage["max_rss_kib"].as_u64().unwrap(),
        cpu_s: usage["cpu_s"].as_f64().unwrap(),
        output,
        elapsed,
    }
}

/// A flood of empty deltas for 30 s, with the event and byte caps raised so that only the
/// total deadline ends it: memory stays flat however long the server keeps sending faster than
/// the agent reads, and the server was held back (its sends found the window full).
fn flood_for_30_s(mode: &str, api: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = Hostile::start(dir.path(), mode, 40);
    let limits = "model_max_stream_events = 1000000000000\nmodel_max_stream_bytes = 68719476736";
    let run = measured(
        dir.path(),
        &server,
        limits,
        &["--api", api, "--model-total-timeout", "30", "exec", "go"],
    );
    let report = server.report();
    let text = stderr(&run.output);
    assert_eq!(run.output.status.code(), Some(1), "{text}");
    assert!(text.contains("total deadline of 30 s (model_total_timeout_secs)"), "{text}");
    assert!(run.max_rss_kib < MAX_RSS_KIB, "peak RSS {} KiB; {report}", run.max_rss_kib);
    // The fast path: hundreds of thousands of events went through (over five million on an idle
    // 2-core machine; the margin is for a loaded one), and the server had to wait for the agent
    // (backpressure), rather than the agent waiting for the server.
    let events = report["events"].as_u64().unwrap_or(0);
    assert!(events >= 300_000, "only {events} events were sent in 30 s: {report}");
    assert!(report["stalls"].as_u64().unwrap_or(0) > 0, "the server was never held back: {report}");
    assert!(run.elapsed < Duration::from_secs(55), "{:?}", run.elapsed);
}

#[test]
fn fast_empty_delta_stream_for_30_s_stays_under_64_mb_chat() {
    flood_for_30_s("flood-chat", "chat");
}

#[test]
fn fast_empty_delta_stream_for_30_s_stays_under_64_mb_responses() {
    flood_for_30_s("flood-responses", "responses");
}

#[test]
fn fast_empty_delta_stream_ends_at_the_event_cap_under_64_mb() {
    for (mode, api) in [("flood-chat", "chat"), ("flood-responses", "responses")] {
        let dir = tempfile::tempdir().unwrap();
        let server = Hostile::start(dir.path(), mode, 30);
        let run = measured(
            dir.path(),
            &server,
            "model_max_stream_events = 200000",
            &["--api", api, "exec", "go"],
        );
        let report = server.report();
        let text = stderr(&run.output);
        assert_eq!(run.output.status.code(), Some(1), "{api}: {text}");
        assert!(
            text.contains(
                "the response stream sent more than 200000 events (model_max_stream_events)"
            ),
            "{api}: {text}"
        );
        assert!(run.max_rss_kib < MAX_RSS_KIB, "{api}: peak RSS {} KiB", run.max_rss_kib);
        assert_eq!(report["client_closed"], true, "{api}: the agent read on: {report}");
    }
}

#[test]
fn a_1_5_gb_whole_response_is_refused_at_the_body_cap_under_64_mb() {
    let dir = tempfile::tempdir().unwrap();
    let server = Hostile::start(dir.path(), "huge-whole", 30);
    let run = measured(dir.path(), &server, "", &["--no-stream", "exec", "go"]);
    let report = server.report();
    let text = stderr(&run.output);
    assert_eq!(run.output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the response body is larger than 16 MiB (model_max_body_bytes)"),
        "{text}"
    );
    assert!(run.max_rss_kib < MAX_RSS_KIB, "peak RSS {} KiB", run.max_rss_kib);
    // The agent stopped reading at the cap: the server never got its 1.5 GB out.
    let sent = report["bytes"].as_u64().unwrap_or(u64::MAX);
    assert!(sent < 1 << 30, "the agent read {sent} bytes: {report}");
}

#[test]
fn a_20_mb_single_event_is_refused_by_the_event_cap_in_under_2_s_of_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let server = Hostile::start(dir.path(), "big-event", 30);
    let run = measured(dir.path(), &server, "", &["--api", "chat", "exec", "go"]);
    server.report();
    let text = stderr(&run.output);
    assert_eq!(run.output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "one event of the response stream is larger than 16 MiB (model_max_event_bytes)"
        ),
        "{text}"
    );
    assert!(run.cpu_s < 2.0, "{} s of CPU", run.cpu_s);
    assert!(run.max_rss_kib < MAX_RSS_KIB, "peak RSS {} KiB", run.max_rss_kib);
}

#[test]
fn a_dripping_server_fails_at_the_total_deadline_after_waiting_lines() {
    for stream in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let server = Hostile::start(dir.path(), "drip", 30);
        let mut args = vec!["--api", "chat", "--model-total-timeout", "3", "exec", "go"];
        if !stream {
            args.insert(0, "--no-stream");
        }
        let run = measured(dir.path(), &server, "model_waiting_notice_secs = 1", &args);
        server.report();
        let text = stderr(&run.output);
        assert_eq!(run.output.status.code(), Some(1), "stream={stream}: {text}");
        assert!(
            text.contains(
                "the response was not complete within the total deadline of 3 s \
                 (model_total_timeout_secs)"
            ),
            "stream={stream}: {text}"
        );
        assert!(text.contains("agent: still waiting for the model (1 s)"), "{text}");
        assert!(text.contains("agent: still waiting for the model (2 s)"), "{text}");
        assert!(run.elapsed >= Duration::from_secs(3), "{:?}", run.elapsed);
    }
}

#[test]
fn a_silent_server_fails_at_the_first_byte_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let server = Hostile::start(dir.path(), "silent", 20);
    let run = measured(dir.path(), &server, "", &["--model-first-byte-timeout", "2", "exec", "go"]);
    let text = stderr(&run.output);
    assert_eq!(run.output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the server sent no response within 2 s (model_first_byte_timeout_secs)"),
        "{text}"
    );
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
    drop(server);
}

#[test]
fn a_non_json_200_body_is_quoted_short_and_escaped_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Hostile::start(dir.path(), "garbage-whole", 30);
    let run = measured(dir.path(), &server, "", &["--no-stream", "exec", "go"]);
    server.report();
    let text = stderr(&run.output);
    assert_eq!(run.output.status.code(), Some(1), "{text}");
    assert!(text.contains("the server sent invalid json"), "{text}");
    assert_eq!(text.matches("invalid json").count(), 1, "{text}");
    assert!(text.len() < 4096, "{} bytes on stderr", text.len());
    assert!(!run.output.stderr.contains(&0x1b), "an escape byte reached stderr: {text}");
}

#[test]
fn a_model_limit_out_of_range_is_a_usage_error_naming_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[limits]\nmodel_total_timeout_secs = 0\n").unwrap();
    let output =
        crate::suite::agent(dir.path(), &["--config", config.to_str().unwrap(), "exec", "go"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    // Checked when the file is read, like every other limit, so the message names the file.
    let text = stderr(&output).replace(&config.display().to_string(), "CONFIG");
    insta::assert_snapshot!(text.trim(), @"agent: in CONFIG: [limits] model_total_timeout_secs = 0 is out of range: it takes 1 to 86400 seconds");
    let output = crate::suite::agent(dir.path(), &["--model-idle-timeout", "0", "exec", "go"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--model-idle-timeout = 0 is out of range"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_error_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Fault::Status {
        status: 400,
        body: json!({"error": {"message": "refused by the test"}}).to_string(),
        content_type: None,
        headers: std::collections::BTreeMap::new(),
    };
    let (output, _) = exec(dir.path(), vec![Turn::fault(refused)], &["exec", "go"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output).matches("refused by the test").count(), 1, "{}", stderr(&output));
}

/// The REPL's spinner says what exec prints, while a slow model has said nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_spinner_says_it_is_still_waiting_for_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let turns = [Turn::text("the late answer").with_delay_ms(3_000)];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[limits]\nmodel_waiting_notice_secs = 1\n").unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    tokio::task::spawn_blocking(move || {
        let url = server.url();
        let config = config.to_str().unwrap();
        let args =
            ["--config", config, "--base-url", &url, "--model", "m", "--api", "chat", "chat"];
        let mut screen = crate::suite::screen::Screen::agent(&workspace, &args, &[]);
        screen.wait_for("›");
        screen.type_text("hi\r");
        screen.wait_for("still waiting for the model (");
        screen.wait_for("the late answer");
        assert!(screen.raw().contains("still waiting for the model (1 s)"), "{}", screen.raw());
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
    })
    .await
    .unwrap();
}
