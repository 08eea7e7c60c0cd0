//! One API's half of the soak: one `agent acp` process, its sessions one after another, the
//! checks between them.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::json;

use super::{
    Bins,
    checks::{Checks, SETTLE, list, mib, processes_with, settle},
    client::{Acp, Answer},
    probe::Proc,
    scenario::{Outcome, Plan, Step, Stop},
};

/// Sessions of each API before the baseline of descriptors and memory is taken.
const WARMUP: usize = 10;

/// What one driver needs.
pub(crate) struct Setup {
    pub(crate) api: &'static str,
    /// The marker of this API's processes (`soak-PID-chat`).
    pub(crate) base: String,
    pub(crate) dir: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) url: String,
    /// Sessions of this API between two checks.
    pub(crate) every: usize,
}

/// One API's figures.
pub(crate) struct Figure {
    api: &'static str,
    sessions: usize,
    seconds: f64,
    checks: Checks,
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.checks;
        write!(
            f,
            "{}: {} sessions in {:.0} s · peak RSS {:.1} MiB (highest at a check {:.1}) · fds at most {} · \
             threads {} → {} · busiest {} processes below the agent, 0 at every check · largest store {} B · \
             MCP starts over the limit (retried) {}",
            self.api,
            self.sessions,
            self.seconds,
            mib(c.peak_kib),
            mib(c.max_rss_kib),
            c.max_fds,
            c.threads.0,
            c.threads.1,
            c.busiest,
            c.max_store,
            c.slow_starts
        )
    }
}

pub(crate) fn drive(bins: &Bins, setup: &Setup, plans: &[Plan]) -> anyhow::Result<Figure> {
    let dir = &setup.dir;
    let [data, tmp, home, workspaces, mcp] =
        ["data", "tmp", "home", "ws", "mcp"].map(|name| dir.join(name));
    for folder in [&data, &tmp, &home, &workspaces, &mcp] {
        std::fs::create_dir_all(folder)?;
    }
    let started = Instant::now();
    let mut command = Command::new(&bins.agent);
    command
        .args(["--base-url", &setup.url, "--model", "scripted", "--api", setup.api])
        .args(["--permission-mode", "bypass", "--config"])
        .arg(&setup.config)
        .arg("acp")
        .current_dir(&workspaces)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("AGENT_DATA_DIR", &data)
        .env("AGENT_LSP_PATH", "")
        .env("TMPDIR", &tmp)
        .stderr(std::fs::File::create(dir.join("acp.stderr"))?);
    let mut acp = Acp::start(&format!("acp ({})", setup.api), command)?;
    let mut checks = Checks::new(setup.api, acp.pid(), &setup.base, &tmp, &data);
    // The sessions that are closed; the last plan is left open for the end of the connection.
    let closed = plans.iter().filter(|plan| plan.close).count();
    let warmup = WARMUP.min(closed / 2).max(1);
    for (n, plan) in plans.iter().enumerate() {
        session(&mut acp, bins, setup, plan, n, &mut checks)
            .with_context(|| format!("session {n} ({:?}, marker {})", plan.kind, plan.marker))?;
        let done = n + 1;
        if !plan.close {
            continue;
        }
        if done == warmup {
            checks.baseline(done)?;
        }
        if done > warmup && (done % setup.every == 0 || done == closed) {
            checks.check(done, closed)?;
        }
    }
    let status = acp.finish()?;
    if !status.success() {
        bail!("agent acp ({}) exited with {status} when its stdin closed", setup.api);
    }
    let left = settle(SETTLE, || processes_with(&setup.base));
    if !left.is_empty() {
        bail!("processes outlived agent acp ({}):{}", setup.api, list(&left));
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Figure { api: setup.api, sessions: closed, seconds, checks })
}

fn session(
    acp: &mut Acp,
    bins: &Bins,
    setup: &Setup,
    plan: &Plan,
    n: usize,
    checks: &mut Checks,
) -> anyhow::Result<()> {
    let workspace = setup.dir.join("ws").join(format!("s{n}"));
    std::fs::create_dir_all(&workspace)?;
    let mut servers = Vec::new();
    if plan.mcp {
        let markers = setup.dir.join("mcp").join(format!("{}mcp", plan.marker));
        std::fs::create_dir_all(&markers)?;
        servers.push(json!({"name": "py", "command": bins.python, "env": [],
            "args": [bins.py_server, "--marker-dir", markers]}));
    }
    let mut tries = 0;
    let new = loop {
        let answer = acp.call("session/new", json!({"cwd": workspace, "mcpServers": servers}))?;
        // The Python server may miss the agent's 10 s start-up limit for a client's server on a
        // loaded machine; the session then fails, named, as it should. That is no leak, but the
        // failed start must leave nothing behind, and the session is opened again.
        match answer.result {
            Err(error) if plan.mcp && tries < 2 => {
                tries += 1;
                checks.slow_starts += 1;
                let left = settle(SETTLE, || processes_with(&plan.marker));
                if !left.is_empty() {
                    bail!("a failed session/new ({error}) left processes:{}", list(&left));
                }
                eprintln!(
                    "[{}] session {n}: session/new failed ({error}); opening it again",
                    setup.api
                );
            }
            result => {
                break result.map_err(|error| anyhow::anyhow!("session/new failed: {error}"))?;
            }
        }
    };
    let id = new["sessionId"].as_str().context("session/new gave no sessionId")?.to_owned();
    // Whether the session asks before a command (set by `Step::SetMode`).
    let mut asks = false;
    for step in &plan.steps {
        match step {
            Step::Prompt { text, stop, cancel_when, calls } => {
                let params = json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]});
                let request = acp.request("session/prompt", params)?;
                let answer = acp.wait(request, "session/prompt", |update| {
                    let Some(marker) = cancel_when else { return false };
                    // Once the call is announced, cancel as soon as the command really runs, so
                    // the cancel has a process to end.
                    update["update"]["sessionUpdate"] == "tool_call" && wait_for(marker).is_ok()
                })?;
                expect(&answer, stop).with_context(|| format!("prompt {text:?}"))?;
                for outcome in calls {
                    called(&answer, outcome).with_context(|| format!("prompt {text:?}"))?;
                }
                if asks && answer.asked == 0 {
                    bail!("prompt {text:?} ran its calls in default mode without asking");
                }
            }
            Step::SetMode(mode) => {
                asks = *mode == "default";
                acp.call("session/set_mode", json!({"sessionId": id, "modeId": mode}))?
                    .ok("session/set_mode")?;
            }
            Step::Reopen { load } => {
                close(acp, &id, &plan.marker)?;
                let method = if *load { "session/load" } else { "session/resume" };
                let params = json!({"sessionId": id, "cwd": workspace, "mcpServers": []});
                if let Err(error) = acp.call(method, params)?.result {
                    bail!("{method} failed: {error}; {}", lock_holders(&setup.dir));
                }
            }
            Step::Kill(marker) => {
                let target = wait_for(marker)?;
                let status =
                    Command::new("kill").args(["-KILL", &target.pid.to_string()]).status()?;
                if !status.success() {
                    bail!("kill -KILL {} failed", target.pid);
                }
            }
        }
    }
    checks.sample();
    if !plan.close {
        return Ok(());
    }
    close(acp, &id, &plan.marker)?;
    if plan.undo {
        undo(bins, setup, &workspace, &id)?;
    }
    std::fs::remove_dir_all(&workspace)?;
    Ok(())
}

/// Which processes hold a session's lock file open (for a message about a session that could
/// not be opened again).
fn lock_holders(dir: &Path) -> String {
    let data = dir.join("data");
    let mut holders = Vec::new();
    for proc in super::probe::all() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", proc.pid)) else { continue };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else { continue };
            if target.starts_with(&data) && target.extension().is_some_and(|e| e == "lock") {
                holders.push(format!("\n    {proc} holds {}", target.display()));
            }
        }
    }
    format!("lock files held now:{}", holders.concat())
}

/// `session/close`, after which no process of the session may run.
fn close(acp: &mut Acp, id: &str, marker: &str) -> anyhow::Result<()> {
    acp.call("session/close", json!({"sessionId": id}))?.ok("session/close")?;
    let left = settle(SETTLE, || processes_with(marker));
    if !left.is_empty() {
        bail!("processes of the session outlived session/close:{}", list(&left));
    }
    Ok(())
}

/// The process whose command line holds `marker` (the one it starts with, when several do:
/// `exec -a` names the command itself), waiting up to ten seconds for it to run.
fn wait_for(marker: &str) -> anyhow::Result<Proc> {
    let started = Instant::now();
    loop {
        let mut found = processes_with(marker);
        found.sort_by_key(|proc| !proc.cmdline.starts_with(marker));
        if let Some(proc) = found.into_iter().next() {
            return Ok(proc);
        }
        if started.elapsed() > Duration::from_secs(10) {
            bail!("no process with {marker:?} in its command line within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn expect(answer: &Answer, stop: &Stop) -> anyhow::Result<()> {
    let reason = answer.result.as_ref().ok().and_then(|r| r["stopReason"].as_str());
    match (stop, &answer.result) {
        (Stop::Error, Err(_)) => Ok(()),
        (Stop::Cancelled, Ok(_)) if reason == Some("cancelled") => Ok(()),
        (Stop::EndTurn(text), Ok(_)) if reason == Some("end_turn") => {
            let message = answer.message();
            if message != *text {
                bail!("answered {message:?}, expected {text:?}: the script went out of step");
            }
            Ok(())
        }
        (_, result) => bail!("expected {stop:?}, got {result:?}"),
    }
}

/// The call ended as `outcome` says: its last update's status and raw output.
fn called(answer: &Answer, outcome: &Outcome) -> anyhow::Result<()> {
    let updates = answer.call_updates(outcome.call);
    let last = updates.iter().rev().find(|u| u["update"]["status"].is_string());
    let Some(last) = last else { bail!("the call {} was never reported ended", outcome.call) };
    let status = last["update"]["status"].as_str().unwrap_or_default();
    let output = last["update"]["rawOutput"].as_str().unwrap_or_default();
    let want = if outcome.ok { "completed" } else { "failed" };
    if status != want || !output.contains(&outcome.holds) {
        let output: String = output.chars().take(600).collect();
        bail!(
            "the call {} ended {status}, expected {want} with {:?} in its output: {output}",
            outcome.call,
            outcome.holds
        );
    }
    Ok(())
}

/// `agent undo --session ID` in the closed session's workspace (the front end that undoes):
/// the notes file the turn created is removed.
fn undo(bins: &Bins, setup: &Setup, workspace: &Path, id: &str) -> anyhow::Result<()> {
    let home = setup.dir.join("home");
    let output = Command::new(&bins.agent)
        .args(["undo", "--session", id])
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("AGENT_DATA_DIR", setup.dir.join("data"))
        .env("TMPDIR", setup.dir.join("tmp"))
        .output()
        .context("running agent undo")?;
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() || workspace.join("notes.txt").exists() {
        bail!(
            "agent undo --session {id} did not take the write back ({}): {printed}",
            output.status
        );
    }
    Ok(())
}
