//! One task's agent: `agent exec --json -` of this same binary, in its own process group, in
//! the task's copy, read event by event until its last event, its wall limit, its token limit
//! or Ctrl-C of the batch.
//!
//! The agent is never assembled a second time here: the child is the `exec` a person would run,
//! so `agent batch` and the Ray driver read the same stream. Killing the child's process group
//! is enough to end a task: every command a tool started sits below a supervisor that kills it
//! when the agent dies (docs/sandbox.md).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::Value;
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
    sync::watch,
};

use super::{record::Status, task::Task};

/// The longest event line kept; a longer one (a huge tool output in `item.added`) is skipped,
/// since the batch reads only the short events.
const MAX_EVENT: usize = 16 * 1024 * 1024;

/// How every task's agent is started.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    /// This binary.
    pub(crate) exe: PathBuf,
    /// The batch's own options, forwarded to each child before the task's.
    pub(crate) forwarded: Vec<OsString>,
    /// `AGENT_DATA_DIR` of the children: the batch's `data` directory.
    pub(crate) data_dir: PathBuf,
    /// Where each child's stderr goes: `<dir>/<id>.log`.
    pub(crate) logs: PathBuf,
    /// The wall limit of tasks that name none.
    pub(crate) wall: Duration,
    /// The turn limit of tasks that name none (the batch's `--max-turns`, forwarded already).
    pub(crate) tokens: Option<u64>,
}

/// What the agent's stream and exit said.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) status: Option<Status>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) reason: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) answer: Option<String>,
    pub(crate) tokens_in: u64,
    pub(crate) tokens_out: u64,
    pub(crate) session_id: Option<String>,
    pub(crate) duration: Duration,
    /// Ctrl-C of the batch ended it: no result is written, the next run starts it again.
    pub(crate) interrupted: bool,
}

impl Launcher {
    /// The command line of `task`'s agent in `dir`.
    fn command(&self, task: &Task, dir: &Path) -> Command {
        #[expect(
            clippy::disallowed_methods,
            reason = "the child is this agent itself, which sandboxes every command its tools run"
        )]
        let mut command = Command::new(&self.exe);
        command.args(&self.forwarded);
        if let Some(profile) = &task.profile {
            command.arg("--profile").arg(profile);
        }
        if let Some(model) = &task.model {
            command.arg("--model").arg(model);
        }
        if let Some(mode) = task.permission_mode {
            command.arg("--permission-mode").arg(mode.to_string());
        }
        for rule in &task.allow {
            command.arg("--allow").arg(rule);
        }
        if let Some(turns) = task.limits.turns {
            command.arg("--max-turns").arg(turns.to_string());
        }
        // The workspace is named on the command line too, so a later run finds a leftover agent
        // of this batch by its arguments (see journal.rs).
        command.arg("--workspace").arg(dir).args(["exec", "--json", "-"]);
        command
            .current_dir(dir)
            .env("AGENT_DATA_DIR", &self.data_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        command
    }

    /// Runs `task` in `dir`; `started` gets the process group id as soon as it exists.
    pub(crate) async fn run(
        &self,
        task: &Task,
        dir: &Path,
        mut cancel: watch::Receiver<bool>,
        started: impl FnOnce(u32),
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let log = std::fs::File::create(self.logs.join(format!("{}.log", task.id)));
        let mut command = self.command(task, dir);
        command.stderr(log.map_or_else(|_| Stdio::null(), Stdio::from));
        let start = Instant::now();
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(err) => {
                outcome.status = Some(Status::Error);
                outcome.message = Some(format!("starting {}: {err}", self.exe.display()));
                return outcome;
            }
        };
        let pgid = child.id().unwrap_or_default();
        started(pgid);
        if let Some(mut stdin) = child.stdin.take() {
            // The prompt goes through stdin (`exec -`), so no length limit of argv applies.
            let prompt = task.prompt.clone();
            tokio::spawn(async move {
                let _ = stdin.write_all(prompt.as_bytes()).await;
            });
        }
        let Some(stdout) = child.stdout.take() else {
            kill(pgid);
            let _ = child.wait().await;
            outcome.status = Some(Status::Error);
            return outcome;
        };
        let mut reader = BufReader::new(stdout);
        let deadline = tokio::time::sleep(task.wall(self.wall));
        tokio::pin!(deadline);
        let tokens = task.limits.tokens.or(self.tokens);
        let stopped = loop {
            tokio::select! {
                line = next_line(&mut reader) => match line {
                    Some(line) => {
                        read_event(&line, &mut outcome);
                        if tokens.is_some_and(|limit| outcome.tokens_in + outcome.tokens_out > limit) {
                            break Some(Status::TokenLimit);
                        }
                    }
                    None => break None,
                },
                () = &mut deadline => break Some(Status::WallLimit),
                _ = cancel.wait_for(|cancelled| *cancelled) => {
                    outcome.interrupted = true;
                    break Some(Status::Error);
                }
            }
        };
        if stopped.is_some() {
            kill(pgid);
        }
        let status = child.wait().await;
        outcome.duration = start.elapsed();
        outcome.exit_code = status.ok().and_then(|status| status.code());
        if let Some(status) = stopped {
            outcome.status = Some(status);
            outcome.answer = None;
            outcome.message = Some(match status {
                Status::WallLimit => {
                    format!("killed at its wall limit of {} s", task.wall(self.wall).as_secs())
                }
                Status::TokenLimit => {
                    format!("killed past its limit of {} tokens", tokens.unwrap_or(0))
                }
                _ => "interrupted".to_owned(),
            });
        } else if outcome.status.is_none() {
            outcome.status = Some(Status::Error);
            let exit = outcome.exit_code.map_or("killed".to_owned(), |code| format!("exit {code}"));
            outcome.message = Some(format!("the agent ended without a last event ({exit})"));
        }
        outcome
    }
}

/// Kills a task's process group. A group that is already gone is not an error.
pub(crate) fn kill(pgid: u32) {
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else { return };
    let _ = kill_process_group(pid, Signal::KILL);
}

/// Notes what one event says about the run.
fn read_event(line: &[u8], outcome: &mut Outcome) {
    let Ok(event) = serde_json::from_slice::<Value>(line) else { return };
    let usage = |outcome: &mut Outcome, tokens: &Value| {
        outcome.tokens_in = tokens["input_tokens"].as_u64().unwrap_or(outcome.tokens_in);
        outcome.tokens_out = tokens["output_tokens"].as_u64().unwrap_or(outcome.tokens_out);
    };
    match event["type"].as_str() {
        Some("run.started") => outcome.session_id = event["session_id"].as_str().map(str::to_owned),
        Some("usage") => usage(outcome, &event["cumulative_usage"]),
        Some("run.completed") => {
            usage(outcome, &event["cumulative_usage"]);
            outcome.status = Some(Status::Completed);
            outcome.answer = event["answer"].as_str().map(str::to_owned);
        }
        Some("run.failed") => {
            usage(outcome, &event["cumulative_usage"]);
            outcome.status = Some(Status::Failed);
            outcome.reason = event["reason"].as_str().map(str::to_owned);
            outcome.message = event["message"].as_str().map(str::to_owned);
        }
        _ => {}
    }
}

/// The next line of the stream, without its newline; a line over [`MAX_EVENT`] comes back
/// empty. `None` at the end of the stream.
async fn next_line(reader: &mut (impl AsyncBufRead + Unpin)) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let buffer = reader.fill_buf().await.ok()?;
        if buffer.is_empty() {
            return (!line.is_empty() || oversized).then_some(line);
        }
        let (chunk, found) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&buffer[..end], Some(end + 1)),
            None => (buffer, None),
        };
        if !oversized && line.len() + chunk.len() <= MAX_EVENT {
            line.extend_from_slice(chunk);
        } else {
            oversized = true;
            line.clear();
        }
        let used = found.unwrap_or(buffer.len());
        reader.consume(used);
        if found.is_some() {
            return Some(line);
        }
    }
}
