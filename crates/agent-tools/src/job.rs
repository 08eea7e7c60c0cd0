//! `job`: reads, writes to, stops and lists the session's background jobs (started by `bash`).

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use agent_sandbox::jobs::{JobInfo, JobState, Jobs};
use grep_matcher::Matcher;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::bash::job_error;

/// New output returned per read, in bytes: the latest part when there is more.
const MAX_READ_BYTES: usize = 10_000;
/// The longest `wait_ms`.
const MAX_WAIT_MS: u32 = 30_000;

// What to do with a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub enum JobAction {
    // New output since the last read; send `text` to the job's input; stop the job and
    // everything it started; every job of the session. Plain comments, so the schema is a bare
    // `enum` (the tool's description says what each does).
    Output,
    Write,
    Kill,
    List,
}

/// Input of the `job` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct JobInput {
    // Field comments are plain `//` so that they stay out of the schema (docs/tools.md).
    pub action: JobAction,
    // Every action but `list` needs the job's id as `bash` returned it.
    #[schemars(with = "Option<i64>")]
    pub job_id: Option<u32>,
    // For `output` and `write`: wait up to this long (at most 30000) for output or the end.
    #[schemars(with = "Option<i64>")]
    pub wait_ms: Option<u32>,
    /// A regex: only new lines that match.
    pub filter: Option<String>,
    pub text: Option<String>,
}

/// Controls background jobs.
#[derive(Debug, Clone)]
pub struct Job {
    jobs: Jobs,
}

impl Job {
    /// A job tool over the session's table (the one the bash tool starts jobs in).
    pub fn new(jobs: Jobs) -> Self {
        Self { jobs }
    }
}

impl TypedTool for Job {
    type Input = JobInput;
    const NAME: &'static str = "job";

    fn description(&self) -> String {
        "Works with the jobs `bash` started. `output`: new output since the last read (waiting up \
         to wait_ms); `write`: send `text` to its input (end with \"\\n\" for Enter); `kill`; \
         `list`. You are told when a job ends."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        // Controls processes the user already allowed when they were started; starts nothing.
        Effects::default()
    }

    async fn run(&self, input: JobInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if input.action == JobAction::List {
            let jobs = self.jobs.list();
            if jobs.is_empty() {
                return Ok(ToolOutput::text("(no jobs)"));
            }
            return Ok(ToolOutput::text(
                jobs.iter().map(JobInfo::line).collect::<Vec<_>>().join("\n"),
            ));
        }
        let Some(id) = input.job_id else {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "job_id is required for this action; action list shows the jobs",
            ));
        };
        let wait = Duration::from_millis(u64::from(input.wait_ms.unwrap_or(0).min(MAX_WAIT_MS)));
        match input.action {
            JobAction::Kill => {
                let before = self.jobs.info(id).map_err(job_error)?;
                let info = self.jobs.kill(id).await.map_err(job_error)?;
                let text = match (before.state, info.state) {
                    (JobState::Finished(exit), _) => {
                        format!("job {id} had already finished ({exit})")
                    }
                    (_, JobState::Finished(exit)) => format!(
                        "job {id} killed ({exit}) after {:.1} s; whole output: {}",
                        info.runtime.as_secs_f64(),
                        info.output_path.display()
                    ),
                    (_, JobState::Running) => {
                        format!("job {id} could not be killed; it still runs")
                    }
                };
                Ok(ToolOutput::text(text))
            }
            JobAction::Write => {
                let Some(text) = input.text.as_deref() else {
                    return Err(ToolError::new(
                        ToolErrorKind::InvalidArguments,
                        "action write needs `text`",
                    ));
                };
                self.jobs.write(id, text).await.map_err(job_error)?;
                let read = self.read(id, wait, None).await?;
                Ok(ToolOutput::text(format!("wrote {} bytes to job {id}\n{read}", text.len())))
            }
            JobAction::Output => {
                let filter = match input.filter.as_deref() {
                    Some(pattern) => {
                        Some(grep_regex::RegexMatcher::new(pattern).map_err(|err| {
                            ToolError::new(
                                ToolErrorKind::InvalidArguments,
                                format!("filter is not a valid regex: {err}"),
                            )
                        })?)
                    }
                    None => None,
                };
                Ok(ToolOutput::text(self.read(id, wait, filter.as_ref()).await?))
            }
            JobAction::List => unreachable!("handled above"),
        }
    }
}

impl Job {
    /// The new output of job `id`, waiting up to `wait` for some (with a filter: for a matching
    /// line) to arrive or for the job to end.
    async fn read(
        &self,
        id: u32,
        wait: Duration,
        filter: Option<&grep_regex::RegexMatcher>,
    ) -> Result<String, ToolError> {
        let deadline = Instant::now() + wait;
        let (mut body, mut skipped, mut matched, mut partial) =
            (String::new(), 0, 0, String::new());
        let info = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let read = self.jobs.read(id, left).await.map_err(job_error)?;
            skipped += read.skipped;
            let ended = read.info.state != JobState::Running;
            match filter {
                None => body.push_str(&read.text),
                Some(matcher) => {
                    // Lines are matched whole: the unfinished last line waits for the next read.
                    partial.push_str(&read.text);
                    let complete = if ended {
                        partial.len()
                    } else {
                        partial.rfind('\n').map_or(0, |at| at + 1)
                    };
                    for line in partial[..complete].lines() {
                        if matcher.is_match(line.as_bytes()).unwrap_or(false) {
                            matched += 1;
                            body.push_str(line);
                            body.push('\n');
                            // Only the latest matches are shown; older ones need no memory.
                            if body.len() > 2 * MAX_READ_BYTES {
                                body.drain(..body.len() - MAX_READ_BYTES);
                            }
                        }
                    }
                    partial.drain(..complete);
                }
            }
            let found = filter.is_none() || matched > 0;
            if found || ended || Instant::now() >= deadline {
                break read.info;
            }
        };
        let state = match info.state {
            JobState::Running => "running".to_owned(),
            JobState::Finished(exit) => format!("finished ({exit})"),
        };
        let mut text = format!("job {id} · {state} · {:.1} s", info.runtime.as_secs_f64());
        if filter.is_some() {
            let _ = write!(text, " · {matched} matching lines");
        }
        text.push('\n');
        let shown = tail(&body, MAX_READ_BYTES, if filter.is_some() { 0 } else { skipped });
        text.push_str(if shown.trim().is_empty() { "(no new output)" } else { shown.trim_end() });
        if skipped > 0 || shown.len() < body.len() || filter.is_some() {
            let _ = write!(text, "\n[whole output: {}]", info.output_path.display());
        }
        Ok(text)
    }
}

/// The last `max` bytes of `text` (on a character boundary), saying what came before.
pub(crate) fn tail(text: &str, max: usize, skipped: u64) -> String {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let dropped = skipped + start as u64;
    if dropped == 0 {
        return text.to_owned();
    }
    format!("[… {dropped} earlier bytes not shown …]\n{}", &text[start..])
}
