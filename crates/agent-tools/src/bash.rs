//! `bash`: one command line in a fresh non-interactive bash, under the OS sandbox; in the
//! foreground, or as a background job of the session (`background`, `yield_ms`).

use std::{fmt::Write as _, time::Duration};

use agent_core::{Access, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use agent_sandbox::{
    jobs::{JobError, Jobs},
    process::{self, ProcessSpec, SpawnError},
    sandbox::{SandboxConfig, SandboxError},
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::paths;

/// Output kept per call: the first and last halves of this many bytes.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// How much of the output a timeout error repeats.
const TIMEOUT_TAIL_CHARS: usize = 2000;

/// The user's settings for the bash tool.
#[derive(Debug, Clone)]
pub struct BashConfig {
    /// The timeout when the call gives none. Default 120 s.
    pub default_timeout: Duration,
    /// The largest timeout a call may ask for. Default 600 s.
    pub max_timeout: Duration,
    /// The sandbox every command runs under; its `workspace` is replaced by the call's workspace,
    /// and the secrets it hides by the ones the call's workspace boundary names (the session's
    /// permission policy, `Read(…)` allow rules included) when the boundary keeps a secret list.
    pub sandbox: SandboxConfig,
    /// The session's job table, shared with the `job` tool.
    pub jobs: Jobs,
}

impl Default for BashConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            sandbox: SandboxConfig::new(std::path::PathBuf::new()),
            jobs: Jobs::default(),
        }
    }
}

/// Input of the `bash` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct BashInput {
    // Field comments are plain `//`: schemars turns `///` into schema descriptions, and every
    // request carries them, so a field gets one only where its name and type do not say it
    // (docs/tools.md, "What the model is told"). Counts are sent as plain integers
    // (`with = "Option<i64>"`: no `minimum`, a few tokens each); serde still refuses a negative one.
    pub command: String,
    #[schemars(with = "Option<i64>")]
    pub timeout_ms: Option<u32>,
    // Relative to the workspace root; the root when null.
    pub workdir: Option<String>,
    // A few words for the user, shown when approval is asked.
    pub description: Option<String>,
    // Explained in the tool's description.
    pub background: Option<bool>,
    #[schemars(with = "Option<i64>")]
    pub yield_ms: Option<u32>,
    pub tty: Option<bool>,
}

/// Runs shell commands.
#[derive(Debug, Clone)]
pub struct Bash {
    config: BashConfig,
}

impl Bash {
    /// A bash tool with `config`.
    pub fn new(config: BashConfig) -> Self {
        Self { config }
    }
}

impl TypedTool for Bash {
    type Input = BashInput;
    const NAME: &'static str = "bash";

    fn description(&self) -> String {
        format!(
            "Runs a command with `bash -c` in the sandbox; each call is a fresh shell in `workdir` \
             (default: the workspace root) with empty stdin. Time limit {} s (timeout_ms, at most \
             {} s). For servers and long builds set `background` (or `yield_ms`: wait, then \
             background) to get a job_id; `tty` gives a job a terminal.",
            self.config.default_timeout.as_secs(),
            self.config.max_timeout.as_secs()
        )
    }

    fn effects(&self) -> Effects {
        Effects::RUNS_PROCESSES
    }

    fn access(&self, input: &BashInput) -> Vec<Access> {
        vec![Access::Command { line: input.command.clone(), workdir: input.workdir.clone() }]
    }

    async fn run(&self, input: BashInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let ws = &*ctx.workspace;
        let dir = ws.resolve(input.workdir.as_deref().unwrap_or("."))?;
        let shown = paths::display(ws.root(), &dir);
        if !dir.is_dir() {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("workdir {shown} is not an existing directory"),
            ));
        }
        if input.command.trim().is_empty() {
            return Err(ToolError::new(ToolErrorKind::InvalidArguments, "command is empty"));
        }
        let timeout = input
            .timeout_ms
            .map_or(self.config.default_timeout, |ms| Duration::from_millis(u64::from(ms)))
            .clamp(Duration::from_millis(1), self.config.max_timeout);
        let mut sandbox = self.config.sandbox.clone();
        sandbox.workspace = ws.root().to_path_buf();
        // The session's policy says which secrets a command must not see, the same list the
        // file tools get from the boundary.
        sandbox.hide = paths::hidden(ws);
        // Approved only as read-only: the command may execute only the programs it names.
        sandbox.exec_allowlist = ctx.exec_allowlist.as_deref().map(<[String]>::to_vec);
        let mut spec = ProcessSpec::bash(&input.command).cwd(&dir);
        spec.max_output_bytes = MAX_OUTPUT_BYTES;
        if input.background == Some(true) || input.yield_ms.is_some() {
            let yield_for = match input.background {
                Some(true) => None,
                _ => input
                    .yield_ms
                    .map(|ms| Duration::from_millis(u64::from(ms)).min(self.config.max_timeout)),
            };
            return self.start_job(&input, &spec, &sandbox, &shown, yield_for, &ctx).await;
        }
        if input.tty == Some(true) {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "tty needs background: true or yield_ms; a foreground command has no terminal",
            ));
        }
        let out = process::run(spec, &sandbox, ctx.cancel.clone(), Some(timeout))
            .await
            .map_err(spawn_error)?;
        if out.cancelled {
            return Err(ToolError::new(
                ToolErrorKind::Cancelled,
                "the command was cancelled and its process group killed",
            ));
        }
        if out.timed_out {
            let chars = out.output.chars().count();
            let tail: String =
                out.output.chars().skip(chars.saturating_sub(TIMEOUT_TAIL_CHARS)).collect();
            let tail = if tail.trim().is_empty() { "(no output)".to_owned() } else { tail };
            return Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "killed after {} (the whole process group; workdir {shown}). Servers and watchers cannot run in the background here: run them bounded (for example `timeout 10 <cmd>`). Prompts for input: add --yes / --non-interactive. If the command is just slow, raise timeout_ms (at most {} s). Last output:\n{tail}",
                    seconds(timeout),
                    self.config.max_timeout.as_secs()
                ),
            ));
        }
        let status = match (out.exit_code, out.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "exit unknown".to_owned(),
        };
        let mut text = format!("{status} · {} · workdir {shown}", seconds(out.duration));
        if out.dropped_bytes > 0 {
            let _ =
                write!(text, " · output cut: {} bytes dropped from the middle", out.dropped_bytes);
        }
        text.push('\n');
        if out.output.is_empty() {
            text.push_str("(no output)");
        } else {
            text.push_str(out.output.trim_end_matches('\n'));
        }
        for note in out.hidden_notes(&input.command) {
            let _ = write!(text, "\nnote: {note}");
        }
        if let Some(programs) = &ctx.exec_allowlist
            && out.output.contains("Permission denied")
        {
            let _ = write!(
                text,
                "\n[this command ran without approval because it only reads, so it could start only bash and {}; a program it started was blocked (\"Permission denied\" above). If that program must run, the user can approve the command]",
                if programs.is_empty() { "nothing else".to_owned() } else { programs.join(", ") }
            );
        }
        Ok(ToolOutput::text(text))
    }
}

impl Bash {
    /// Starts the command as a job; with `yield_for`, waits that long for it to finish first.
    async fn start_job(
        &self,
        input: &BashInput,
        spec: &ProcessSpec,
        sandbox: &SandboxConfig,
        shown: &str,
        yield_for: Option<Duration>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let jobs = &self.config.jobs;
        let tty = input.tty == Some(true);
        let info = jobs.start(&input.command, spec, sandbox, tty).map_err(job_error)?;
        let id = info.id;
        if let Some(wait) = yield_for {
            // Until it becomes a job, the command is a foreground call: cancelling the call
            // stops it.
            let cancelled = tokio::select! {
                _ = jobs.wait(id, wait) => false,
                () = ctx.cancel.cancelled() => true,
            };
            if cancelled {
                let _ = jobs.kill(id).await;
                return Err(ToolError::new(
                    ToolErrorKind::Cancelled,
                    "the command was cancelled and its process group killed",
                ));
            }
        }
        let read = jobs.read(id, Duration::ZERO).await.map_err(job_error)?;
        let mut text = match read.info.state {
            agent_sandbox::jobs::JobState::Finished(exit) => {
                format!("{exit} · {} · workdir {shown}\n", seconds(read.info.runtime))
            }
            agent_sandbox::jobs::JobState::Running => format!(
                "job_id: {id} · running in the background · {} · workdir {shown}\n",
                seconds(read.info.runtime)
            ),
        };
        let output = crate::job::tail(&read.text, MAX_OUTPUT_BYTES / 2, read.skipped);
        text.push_str(if output.trim().is_empty() { "(no output yet)" } else { output.trim_end() });
        if read.info.state == agent_sandbox::jobs::JobState::Running {
            let _ = write!(
                text,
                "\n[job {id} keeps running: read new output with job {{\"action\":\"output\",\"job_id\":{id}}}, stop it with action kill; you are told when it finishes]"
            );
        }
        Ok(ToolOutput::text(text))
    }
}

/// A job error as the model reads it.
pub(crate) fn job_error(err: JobError) -> ToolError {
    match err {
        JobError::Spawn(err) => spawn_error(err),
        JobError::NotFound(_) => ToolError::new(ToolErrorKind::NotFound, err.to_string()),
        other => ToolError::new(ToolErrorKind::ToolError, other.to_string()),
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn spawn_error(err: SpawnError) -> ToolError {
    match err {
        SpawnError::Sandbox(err @ SandboxError::Unavailable { .. }) => {
            ToolError::new(ToolErrorKind::SandboxUnavailable, err.to_string())
        }
        other => ToolError::new(ToolErrorKind::ToolError, other.to_string()),
    }
}
