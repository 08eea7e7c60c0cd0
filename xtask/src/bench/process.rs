//! Whole-process benchmarks: the release `agent` binary, started as a user starts it, against
//! the release scripted server (or, for the first request, a socket this module listens on).

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{Bins, Figure, Options, progress};

/// Runs the start-up, end-to-end and long-session benchmarks.
pub(crate) fn run_in(
    bins: &Bins,
    options: &Options,
    figures: &mut Vec<Figure>,
    scratch: &Path,
) -> anyhow::Result<()> {
    let runs = if options.quick { 8 } else { 30 };
    if options.wants("startup") {
        figures.push(Figure::of("startup.version", "ms", startup_version(bins, runs)?));
        super::mcp::first_requests(bins, runs, scratch, figures)?;
    }
    let runs = if options.quick { 5 } else { 15 };
    if options.wants("e2e") {
        figures.push(Figure::of("e2e.two_turn", "ms", two_turn(bins, runs, scratch)?));
        figures.push(Figure::of(
            "acp.first_update_ms",
            "ms",
            super::acp::first_update(bins, runs, scratch)?,
        ));
    }
    if !options.wants("session") {
        return Ok(());
    }
    let runs = if options.quick { 1 } else { 3 };
    for api in ["chat", "responses_prev", "responses_stateless"] {
        progress(&format!(
            "long session ({api}): 200 turns with 1 MB tool outputs, {runs} run(s)…"
        ));
        let mut rss = Vec::new();
        let mut bytes: [Vec<f64>; 3] = Default::default();
        let (mut max_tokens, mut compactions) = (Vec::new(), Vec::new());
        for run in 0..runs {
            let session = long_session(bins, api, &scratch.join(format!("session-{api}-{run}")))?;
            rss.push(session.peak_rss_mb);
            max_tokens.push(session.max_request_tokens as f64);
            compactions.push(session.compactions as f64);
            for (slot, turn) in bytes.iter_mut().zip([1, 2, 200]) {
                slot.push(session.request_bytes[turn - 1] as f64);
            }
        }
        figures.push(Figure::of(&format!("session.rss.{api}"), "MiB", rss));
        figures.push(Figure::of(
            &format!("session.max_request_tokens.{api}"),
            "tokens",
            max_tokens,
        ));
        figures.push(Figure::of(&format!("session.compactions.{api}"), "count", compactions));
        for (values, turn) in bytes.into_iter().zip([1, 2, 200]) {
            let name = format!("session.request_bytes.{api}.turn{turn}");
            figures.push(Figure::of(&name, "bytes", values));
        }
    }
    Ok(())
}

pub(super) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `agent --version`, from spawn to exit.
fn startup_version(bins: &Bins, runs: usize) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    for round in 0..runs + 3 {
        let started = Instant::now();
        let status = Command::new(&bins.agent)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .context("running agent --version")?;
        let took = ms(started);
        if !status.success() {
            bail!("agent --version exited with {status}");
        }
        // The first runs bring the binary into the page cache.
        if round >= 3 {
            times.push(took);
        }
    }
    Ok(times)
}

/// A command line for `agent exec` against `url` in `dir`'s workspace.
fn agent_exec(bins: &Bins, url: &str, api: &str, dir: &Path, prompt: &str) -> Command {
    let mut command = Command::new(&bins.agent);
    command
        .args(["--base-url", url, "--model", "scripted", "--api", api])
        .args(["exec", prompt])
        .current_dir(dir.join("workspace"))
        .env("AGENT_DATA_DIR", dir.join("data"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENT_LOG")
        .env_remove("RUST_LOG");
    command
}

pub(super) fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("workspace"))?;
    std::fs::create_dir_all(dir.join("data"))?;
    Ok(())
}

/// Time from spawning `agent exec` (with the config file `config`, if any) until its first
/// request's headers arrive at a socket we listen on; the agent is then killed, with the process
/// groups of the MCP servers it started, so no model answer is part of the figure.
pub(super) fn first_request(bins: &Bins, dir: &Path, config: Option<&Path>) -> anyhow::Result<f64> {
    fresh_dir(dir)?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let mut command = agent_exec(bins, &url, "chat", dir, "hello");
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting agent exec")?;
    let took = wait_for_request(&listener, &mut child, started);
    // MCP servers lead process groups of their own, which outlive a killed agent.
    let groups = children(child.id());
    let _ = child.kill();
    let _ = child.wait();
    for group in groups {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).status();
    }
    took
}

/// The child processes of `pid`, from `/proc` (every thread's list).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace().filter_map(|pid| pid.parse().ok()).collect::<Vec<_>>()
        })
        .collect()
}

/// Polls the listener (every 50 µs) until a connection delivers the whole head of a model request
/// (a `POST`). Other requests (the agent asking a local server for its context window) get a 404
/// at once, as from a server that reports nothing, and the wait goes on: their cost is part of
/// the figure.
fn wait_for_request(
    listener: &TcpListener,
    child: &mut Child,
    started: Instant,
) -> anyhow::Result<f64> {
    let deadline = started + Duration::from_secs(10);
    loop {
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Some(status) = child.try_wait()? {
                        bail!("agent exec exited with {status} before sending a request");
                    }
                    if Instant::now() > deadline {
                        bail!("no request within 10 s");
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(err) => return Err(err.into()),
            }
        };
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                bail!("the connection closed before a request head arrived");
            }
            head.extend_from_slice(&buf[..n]);
        }
        if head.starts_with(b"POST ") {
            return Ok(ms(started));
        }
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    }
}

/// A running scripted server and the URL it serves.
pub(super) struct Server {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    pub(super) url: String,
}

impl Server {
    pub(super) fn start(bins: &Bins, dir: &Path, turns: &Value) -> anyhow::Result<Self> {
        Self::start_with(bins, dir, turns, &json!([]))
    }

    /// Starts a server with standing answers as well (see the scripted server's `standing`).
    pub(super) fn start_with(
        bins: &Bins,
        dir: &Path,
        turns: &Value,
        standing: &Value,
    ) -> anyhow::Result<Self> {
        let script = dir.join("script.json");
        std::fs::write(&script, json!({"turns": turns, "standing": standing}).to_string())?;
        let mut child = Command::new(&bins.server)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bins.server.display()))?;
        let mut out = BufReader::new(child.stdout.take().context("server stdout")?);
        let mut url = String::new();
        out.read_line(&mut url)?;
        Ok(Self { child, out, url: url.trim().to_owned() })
    }

    /// Stops the server and returns the bodies of the requests it recorded, in order.
    pub(super) fn finish(mut self) -> anyhow::Result<Vec<Value>> {
        drop(self.child.stdin.take());
        let mut bodies = Vec::new();
        let mut line = String::new();
        while self.out.read_line(&mut line)? > 0 {
            let mut request: Value = serde_json::from_str(&line).context("a recorded request")?;
            bodies.push(request["body"].take());
            line.clear();
        }
        let _ = self.child.wait();
        Ok(bodies)
    }
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"call_id": id, "name": name, "arguments": arguments})
}

/// A two-turn run (one sandboxed `echo hi`, then an answer), from spawn to exit; the server
/// starts before the clock does.
fn two_turn(bins: &Bins, runs: usize, scratch: &Path) -> anyhow::Result<Vec<f64>> {
    let dir = scratch.join("two-turn");
    let turns = json!([
        {"tool_calls": [call("call_echo", "bash", json!({"command": "echo hi"}))]},
        {"text": "The command printed hi."}
    ]);
    let mut times = Vec::new();
    for round in 0..runs + 2 {
        fresh_dir(&dir)?;
        let server = Server::start(bins, &dir, &turns)?;
        let started = Instant::now();
        let output = agent_exec(bins, &server.url, "chat", &dir, "Say hi with echo.")
            .args(["--allow", "Bash(echo *)"])
            .output()
            .context("running agent exec")?;
        let took = ms(started);
        let bodies = server.finish()?;
        if !output.status.success() {
            bail!("agent exec failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        // The second request must carry the command's real output, or the run measured a refusal.
        let second = bodies.get(1).map(Value::to_string).unwrap_or_default();
        if bodies.len() != 2 || !second.contains("exit 0") {
            bail!("the echo call did not run: {} requests, second: {second:.400}", bodies.len());
        }
        if round >= 2 {
            times.push(took);
        }
    }
    Ok(times)
}

/// What one long session measured.
struct Session {
    peak_rss_mb: f64,
    /// The size of each model turn's request body (the rejected continuation and the compaction
    /// summaries excluded).
    request_bytes: Vec<usize>,
    /// The largest request by the agent's own count (its `request` events): the whole
    /// conversation, also when `previous_response_id` sends only the new items.
    max_request_tokens: usize,
    /// How many compactions the session made.
    compactions: usize,
}

/// The context window the long sessions run with.
pub(crate) const WINDOW: u64 = 32_768;
/// The words every compaction summary request starts with (`agent_exec::compaction::SUMMARY_MARKER`);
/// the scripted server answers those requests without consuming a turn.
const SUMMARY_MARKER: &str = "You are compacting a conversation";

const TURNS: usize = 200;
/// A command that prints 1 MiB of text lines.
const ONE_MB: &str =
    "yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c 1048576";

/// 200 turns that each run a command printing 1 MB, then an answer. `responses_stateless` makes
/// the server reject the first continuation the way OpenAI rejects an unknown
/// `previous_response_id`, which switches the client to stateless requests for the session:
/// the CLI has no flag to ask for stateless mode directly.
fn long_session(bins: &Bins, api: &str, dir: &Path) -> anyhow::Result<Session> {
    fresh_dir(dir)?;
    let mut turns: Vec<Value> = (0..TURNS)
        .map(|i| json!({"tool_calls": [call(&format!("call_{i}"), "bash", json!({"command": ONE_MB}))]}))
        .collect();
    turns.push(json!({"text": "done"}));
    if api == "responses_stateless" {
        let error = json!({"error": {
            "message": "Previous response with id 'resp_1' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found"
        }});
        let fault = json!({"fault": {"kind": "status", "status": 400, "body": error.to_string()}});
        turns.insert(1, fault);
    }
    let standing = json!([{"when_body_contains": SUMMARY_MARKER, "turn": {"text": "Printing a megabyte, 200 times."}}]);
    let server = Server::start_with(bins, dir, &Value::Array(turns), &standing)?;
    let wire_api = if api == "chat" { "chat" } else { "responses" };
    let stderr = std::fs::File::create(dir.join("agent.stderr"))?;
    let stdout = std::fs::File::create(dir.join("agent.jsonl"))?;
    let mut child = agent_exec(bins, &server.url, wire_api, dir, "Print a megabyte, 200 times.")
        .args(["--permission-mode", "bypass", "--max-turns", "1000", "--json"])
        .args(["--context-window", &WINDOW.to_string()])
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .context("starting agent exec")?;
    // VmHWM is the kernel's own high-water mark of the resident set, so polling it loses nothing
    // but the last few milliseconds before exit.
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0u64;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_path).ok().as_deref().and_then(vm_hwm_kb)
        {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let bodies = server.finish()?;
    if !status.success() {
        let log = std::fs::read_to_string(dir.join("agent.stderr")).unwrap_or_default();
        bail!("agent exec ({api}) exited with {status}: {}", tail(&log));
    }
    let (mut max_request_tokens, mut compactions) = (0, 0);
    for line in std::fs::read_to_string(dir.join("agent.jsonl"))?.lines() {
        let event: Value = serde_json::from_str(line).context("an agent --json event")?;
        match event["type"].as_str() {
            Some("request.started") => {
                let tokens = event["estimated_input_tokens"].as_u64().unwrap_or(u64::MAX);
                max_request_tokens = max_request_tokens.max(tokens as usize);
            }
            Some("compaction") => compactions += 1,
            _ => {}
        }
    }
    let bodies: Vec<Value> =
        bodies.into_iter().filter(|body| !body.to_string().contains(SUMMARY_MARKER)).collect();
    let request_bytes: Vec<usize> = bodies
        .iter()
        .filter(|body| api != "responses_stateless" || body["previous_response_id"].is_null())
        .map(|body| body.to_string().len())
        .collect();
    if request_bytes.len() != TURNS + 1 {
        bail!(
            "{api}: expected {} model requests, the server saw {}",
            TURNS + 1,
            request_bytes.len()
        );
    }
    // A compaction restarts the stored chain, so only most requests continue one.
    if api == "responses_prev"
        && bodies.iter().skip(1).filter(|b| b["previous_response_id"].is_null()).count()
            > compactions
    {
        bail!("responses_prev: requests that started a new chain without a compaction");
    }
    Ok(Session {
        peak_rss_mb: peak_kb as f64 / 1024.0,
        request_bytes,
        max_request_tokens,
        compactions,
    })
}

fn vm_hwm_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(2000);
    let start = (start..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(status: &str, expected: Option<u64>) {
        assert_eq!(vm_hwm_kb(status), expected);
    }

    #[test]
    fn reads_the_high_water_mark() {
        check("Name:\tagent\nVmPeak:\t  9000 kB\nVmHWM:\t    4242 kB\n", Some(4242));
        check("Name:\tagent\n", None);
    }
}
