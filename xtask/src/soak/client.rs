//! The soak's ACP client: one long-running `agent acp` process driven over stdio, one JSON-RPC
//! message a line, as an editor drives it.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{Receiver, RecvTimeoutError},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// How long one request may take before the soak fails naming it: a hang is a finding.
const DEADLINE: Duration = Duration::from_secs(120);

/// A running `agent acp` and the lines it writes.
pub(crate) struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next_id: u64,
    /// A name for messages (`acp chat`).
    pub(crate) name: String,
}

/// A request's answer and the notifications that came while it ran.
pub(crate) struct Answer {
    /// The `result`, or `Err` with the JSON-RPC `error`.
    pub(crate) result: Result<Value, Value>,
    /// The `session/update` params received while waiting.
    pub(crate) updates: Vec<Value>,
    /// How many permission requests the agent sent (each allowed once).
    pub(crate) asked: usize,
}

impl Answer {
    /// The result, or an error naming `what` and the JSON-RPC error.
    pub(crate) fn ok(self, what: &str) -> anyhow::Result<Value> {
        self.result.map_err(|error| anyhow::anyhow!("{what} failed: {error}"))
    }

    /// The text of every `agent_message_chunk`, joined.
    pub(crate) fn message(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["update"]["content"]["text"].as_str())
            .collect()
    }

    /// The `tool_call_update`s of the call `id`.
    pub(crate) fn call_updates(&self, id: &str) -> Vec<&Value> {
        self.updates.iter().filter(|u| u["update"]["toolCallId"] == id).collect()
    }
}

impl Acp {
    /// Starts `command` (an `agent … acp` command line) and initializes the connection.
    pub(crate) fn start(name: &str, mut command: Command) -> anyhow::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let stdout = child.stdout.take().context("acp stdout")?;
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|err| json!({"soak_unparsed": line, "error": err.to_string()}));
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut acp = Self { child, stdin, lines, next_id: 0, name: name.to_owned() };
        acp.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))?
            .ok("initialize")?;
        Ok(acp)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("the connection is closed")?;
        writeln!(stdin, "{message}")
            .and_then(|()| stdin.flush())
            .with_context(|| format!("{} no longer reads its stdin (did it exit?)", self.name))
    }

    /// Sends a request and returns its id, without waiting.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> anyhow::Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends a notification.
    pub(crate) fn notify(&mut self, method: &str, params: Value) -> anyhow::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// A request and its answer.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Answer> {
        let id = self.request(method, params)?;
        self.wait(id, method, |_| false)
    }

    /// Waits for the answer to request `id`, answering the agent's own requests on the way
    /// (permissions are allowed once; nothing else is offered). `watch` sees every update; once it
    /// returns true the running prompt of its session is cancelled (once).
    pub(crate) fn wait(
        &mut self,
        id: u64,
        what: &str,
        mut watch: impl FnMut(&Value) -> bool,
    ) -> anyhow::Result<Answer> {
        let started = Instant::now();
        let mut updates = Vec::new();
        let mut cancelled = false;
        let mut asked = 0;
        loop {
            let left = DEADLINE.saturating_sub(started.elapsed());
            let message = match self.lines.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    let last: Vec<String> =
                        updates.iter().rev().take(4).map(Value::to_string).collect();
                    bail!(
                        "{}: no answer to {what} within {DEADLINE:?}; the last updates (newest first):\n{}",
                        self.name,
                        last.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.try_wait().ok().flatten();
                    bail!("{} closed its stdout during {what} (exit: {status:?})", self.name)
                }
            };
            if message.get("soak_unparsed").is_some() {
                bail!("{} wrote a line that is not JSON: {message}", self.name);
            }
            if message["id"] == id && message.get("method").is_none() {
                let result = match message.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(message["result"].clone()),
                };
                return Ok(Answer { result, updates, asked });
            }
            match (message["method"].as_str(), message.get("id")) {
                (Some("session/update"), None) => {
                    if !cancelled && watch(&message["params"]) {
                        cancelled = true;
                        let session = message["params"]["sessionId"].clone();
                        self.notify("session/cancel", json!({"sessionId": session}))?;
                    }
                    updates.push(message["params"].clone());
                }
                (Some("session/request_permission"), Some(request)) => {
                    asked += 1;
                    // The option whose kind is `allow_once`, by its id.
                    let options = message["params"]["options"].as_array().cloned();
                    let allow = options
                        .unwrap_or_default()
                        .into_iter()
                        .find(|option| option["kind"] == "allow_once")
                        .map(|option| option["optionId"].clone());
                    let Some(allow) = allow else {
                        bail!("{}: a permission request without allow_once: {message}", self.name);
                    };
                    let outcome = json!({"outcome": {"outcome": "selected", "optionId": allow}});
                    let request = request.clone();
                    self.send(&json!({"jsonrpc": "2.0", "id": request, "result": outcome}))?;
                }
                (Some(method), Some(request)) => {
                    let error = json!({"code": -32601, "message": format!("the soak client does not serve {method}")});
                    let request = request.clone();
                    self.send(&json!({"jsonrpc": "2.0", "id": request, "error": error}))?;
                }
                _ => bail!("{}: unexpected message during {what}: {message}", self.name),
            }
        }
    }

    /// Closes stdin (the end of the connection, which closes every open session) and waits for
    /// the exit.
    pub(crate) fn finish(mut self) -> anyhow::Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if started.elapsed() > DEADLINE {
                let _ = self.child.kill();
                bail!("{} did not exit within {DEADLINE:?} of its stdin closing", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
