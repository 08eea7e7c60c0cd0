//! The real model servers of the tier: set up through `scripts/realmodel/realmodel.sh`, started on
//! free loopback ports, waited for, and killed by pid when dropped.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};

/// The servers and modes the tier runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// llama-cpp-python's server with `--chat_format chatml-function-calling`: `tool_choice`
    /// "auto" works whole (not streamed); the template never shows tool results to the model.
    Chatml,
    /// llama-cpp-python's server with the model's own GGUF template: only a forced tool is
    /// called, and tool results are shown to the model (the semantic round trip).
    Gguf,
    /// llama.cpp's own `llama-server --jinja`.
    LlamaServer,
    /// LiteLLM's proxy: a real `/v1/responses`, bridged to Chat Completions on the `Chatml`
    /// server (model `smollm2`) and on `LlamaServer` (model `smollm2-llama-server`).
    Litellm,
}

impl Kind {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Chatml => "llama-cpp-python (chatml-function-calling)",
            Self::Gguf => "llama-cpp-python (gguf template)",
            Self::LlamaServer => "llama-server --jinja",
            Self::Litellm => "LiteLLM /v1/responses",
        }
    }

    /// The model name the server knows.
    pub(crate) fn model(self) -> &'static str {
        if self == Self::Litellm { "smollm2" } else { "smollm2-135m" }
    }
}

/// The key LiteLLM's proxy requires (`realmodel.sh` starts it with this master key). It guards a
/// loopback proxy in front of a test model and is no secret.
pub(crate) const LITELLM_KEY: &str = "sk-litellm-local-1234567890abcdef";

/// One running server; dropping it kills the process by its pid.
pub(crate) struct Server {
    pub(crate) kind: Kind,
    pub(crate) port: u16,
    child: Child,
    log: PathBuf,
}

impl Server {
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The last lines of the server's log, for a failure report.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // `realmodel.sh serve` execs the server, so the child's pid is the server's pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The setup script, run to build or check the cache. Returns the seconds it took.
pub(crate) fn setup(root: &Path) -> anyhow::Result<f64> {
    let started = Instant::now();
    let status = Command::new("bash")
        .arg(script(root))
        .arg("setup")
        .stdout(Stdio::null())
        .status()
        .context("running scripts/realmodel/realmodel.sh setup")?;
    if !status.success() {
        bail!("scripts/realmodel/realmodel.sh setup failed ({status})");
    }
    Ok(started.elapsed().as_secs_f64())
}

fn script(root: &Path) -> PathBuf {
    root.join("scripts/realmodel/realmodel.sh")
}

/// A port that was free a moment ago (the kernel picks it; the race with other programs is
/// accepted for a test tier).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts a server of `kind` (`upstream` are the llama-cpp-python and llama-server ports LiteLLM
/// forwards to) and waits until it answers.
pub(crate) fn start(
    root: &Path,
    kind: Kind,
    upstream: &[u16],
    logs: &Path,
) -> anyhow::Result<Server> {
    let port = free_port()?;
    let mut args = vec!["serve".to_owned()];
    let (name, ready_path) = match kind {
        Kind::Chatml => ("llama-cpp-python", "/v1/models"),
        Kind::Gguf => ("llama-cpp-python", "/v1/models"),
        Kind::LlamaServer => ("llama-server", "/health"),
        Kind::Litellm => ("litellm", "/health/liveliness"),
    };
    args.push(name.to_owned());
    args.push(port.to_string());
    match kind {
        Kind::Chatml => args.push("chatml".to_owned()),
        Kind::Gguf => args.push("gguf".to_owned()),
        Kind::LlamaServer => {}
        Kind::Litellm => args.extend(upstream.iter().map(u16::to_string)),
    }
    std::fs::create_dir_all(logs)?;
    let log = logs.join(format!("{name}-{port}.log"));
    let out = std::fs::File::create(&log)?;
    let child = Command::new("bash")
        .arg(script(root))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", kind.label()))?;
    let mut server = Server { kind, port, child, log };
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if get_status(port, ready_path) == Some(200) {
            return Ok(server);
        }
        if let Some(status) = server.child.try_wait()? {
            bail!("{} exited with {status} before answering:\n{}", kind.label(), server.log_tail());
        }
        if Instant::now() > deadline {
            bail!("{} did not answer within 180 s:\n{}", kind.label(), server.log_tail());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The status of `GET path` on the loopback port, or `None` when nothing answers yet.
fn get_status(port: u16, path: &str) -> Option<u16> {
    let mut stream =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0_u8; 64];
    let read = stream.read(&mut head).ok()?;
    let line = String::from_utf8_lossy(&head[..read]);
    line.split_whitespace().nth(1)?.parse().ok()
}
