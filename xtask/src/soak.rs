//! `cargo xtask soak [--sessions N] [--no-build] [--every N]`: thousands of sessions through two
//! long-running `agent acp` processes (one per API, Chat Completions and Responses, side by side)
//! against the scripted model, asserting after every `--every` sessions that nothing leaks:
//! no process of the sessions left, the agent's open descriptors flat, its temporary folder
//! empty, every checkpoint store within its cap, and its resident set within a stated bound.
//!
//! The sessions rotate through eleven kinds (`scenario.rs`): commands (every other round asked
//! about and allowed), background jobs (one killed from outside, one left for `session/close`),
//! the Python MCP SDK server as a client-supplied server (one killed from outside), a child
//! agent, checkpointed writes undone by `agent undo`, `web_fetch` of a loopback site (answering,
//! slow, dropping the connection), model faults (a reset before the answer, a stream cut
//! mid-answer, a slow answer), a cancelled command, and a session closed and opened again
//! (`session/load`, `session/resume`); each API ends with a session left open for the end of the
//! connection to close.
//! docs/BENCHMARKS.md ("Soak") states the bounds and records a full run.

mod checks;
mod client;
mod driver;
mod probe;
mod scenario;
mod site;

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Instant,
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// The options of one soak.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Sessions in all, split evenly between the two APIs.
    pub(crate) sessions: usize,
    /// Sessions between two checks (counted over both APIs).
    pub(crate) every: usize,
    /// Use the debug binaries as they are.
    pub(crate) no_build: bool,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Self { sessions: 2000, every: 100, no_build: false };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut number = |name: &str| -> anyhow::Result<usize> {
                let value = args.next().with_context(|| format!("{name} needs a number"))?;
                value.parse().with_context(|| format!("{name} {value}: not a number"))
            };
            match arg.as_str() {
                "--sessions" => options.sessions = number("--sessions")?,
                "--every" => options.every = number("--every")?,
                "--no-build" => options.no_build = true,
                other => {
                    bail!("soak: unknown option {other:?} (--sessions N, --every N, --no-build)")
                }
            }
        }
        if options.sessions < 2 || options.every < 2 {
            bail!("soak: --sessions and --every must be at least 2 (one session per API)");
        }
        Ok(options)
    }
}

/// The binaries and peers a soak runs.
pub(crate) struct Bins {
    pub(crate) agent: PathBuf,
    server: PathBuf,
    pub(crate) python: PathBuf,
    pub(crate) py_server: PathBuf,
}

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let options = Options::parse(args)?;
    let bins = bins(root, options.no_build)?;
    let scratch = std::env::temp_dir().join(format!("agent-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let result = soak(&bins, &options, &scratch);
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&scratch);
    } else {
        eprintln!("soak: the scratch folder is kept for a look: {}", scratch.display());
    }
    result
}

fn bins(root: &Path, no_build: bool) -> anyhow::Result<Bins> {
    let debug = if no_build {
        crate::built_debug(root, &["agent", "scripted-server"])?
    } else {
        println!("building the agent binary and the scripted model server (debug)…");
        crate::build_debug(
            root,
            &["-p", "agent-cli", "--bin", "agent", "-p", "agent-model", "--features"]
                .into_iter()
                .chain(["agent-model/scripted-server", "--bin", "scripted-server"])
                .collect::<Vec<_>>(),
        )?
    };
    let peers = std::env::var_os("AGENT_MCP_PEERS").map_or_else(
        || std::env::home_dir().unwrap_or_default().join(".cache/agent/mcp-peers"),
        PathBuf::from,
    );
    let python = peers.join("venv/bin/python");
    if !python.is_file() {
        bail!(
            "the Python MCP SDK is not installed at {} (run scripts/mcp/setup.sh or set AGENT_MCP_PEERS)",
            python.display()
        );
    }
    Ok(Bins {
        agent: debug.join("agent"),
        server: debug.join("scripted-server"),
        python,
        py_server: root.join("crates/agent-mcp/tests/peers/py_server.py"),
    })
}

/// The config every session reads: the loopback site's name pinned (no DNS), and a small
/// checkpoint cap so the checkpoint sessions run into it.
pub(crate) const STORE_CAP: u64 = 262_144;

fn soak(bins: &Bins, options: &Options, scratch: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let site = site::Site::start()?;
    let config = scratch.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[network]\nresolve = {{ \"soak.test\" = \"127.0.0.1\" }}\n\n[checkpoints]\nstore_cap_bytes = {STORE_CAP}\n"
        ),
    )?;
    let marker = format!("soak-{}", std::process::id());
    println!(
        "soak: {} sessions over two `agent acp` processes (chat, responses), checked every {}",
        options.sessions, options.every
    );
    let mut drivers = Vec::new();
    for (index, api) in ["chat", "responses"].into_iter().enumerate() {
        let count = options.sessions / 2 + usize::from(index == 0 && options.sessions % 2 == 1);
        let dir = scratch.join(api);
        std::fs::create_dir_all(&dir)?;
        let base = format!("{marker}-{api}");
        let mut plans: Vec<_> = (0..count).map(|n| scenario::plan(&base, n, site.port)).collect();
        plans.push(scenario::last(&base));
        let turns: Vec<Value> = plans.iter().flat_map(|plan| plan.turns.clone()).collect();
        let server = Server::start(&bins.server, &dir, &json!({"turns": turns}))?;
        let setup = driver::Setup {
            api,
            base,
            dir,
            config: config.clone(),
            url: server.url.clone(),
            every: options.every / 2,
        };
        drivers.push((server, setup, plans));
    }
    let report = std::thread::scope(|scope| {
        let handles: Vec<_> = drivers
            .iter()
            .map(|(_, setup, plans)| scope.spawn(move || driver::drive(bins, setup, plans)))
            .collect();
        handles.into_iter().map(|handle| handle.join()).collect::<Vec<_>>()
    });
    let mut figures = Vec::new();
    for (result, (server, setup, _)) in report.into_iter().zip(drivers) {
        server.stop();
        match result {
            Ok(Ok(figure)) => figures.push(figure),
            Ok(Err(err)) => return Err(err.context(format!("soak ({})", setup.api))),
            Err(_) => bail!("soak ({}): the driver panicked", setup.api),
        }
    }
    let took = started.elapsed();
    println!("\nsoak passed: {} sessions in {:.0} s", options.sessions, took.as_secs_f64());
    for figure in &figures {
        println!("  {figure}");
    }
    Ok(())
}

/// A scripted model server process and the URL it serves.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(program: &Path, dir: &Path, script: &Value) -> anyhow::Result<Self> {
        let path = dir.join("script.json");
        std::fs::write(&path, script.to_string())?;
        let mut child = Command::new(program)
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let mut out = BufReader::new(child.stdout.take().context("server stdout")?);
        let mut url = String::new();
        out.read_line(&mut url)?;
        // What the server prints at its end (every request it recorded) is not needed.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Ok(Self { child, url: url.trim().to_owned() })
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
