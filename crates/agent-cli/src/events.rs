//! The `exec --json` stream: a versioned contract for programs that drive `agent`.
//!
//! One JSON object per line, each with a `type`. The first is `run.started` with the
//! `schema_version`; the last is always `run.completed` or `run.failed`, whatever ended the run
//! (an answer, the turn limit, a model error, Ctrl-C, a hook, a panic). The JSON Schema of the
//! whole stream is generated from [`ExecEvent`] and committed as `docs/exec-events.schema.json`;
//! a test fails when the two drift. Decisions: `docs/cli.md` ("The --json stream").

use std::io::Write;

use agent_core::{ToolErrorKind, Usage};
use agent_exec::{
    Remedy,
    agent::{AgentEvent, Finish},
    jobs::{EndPolicy, JobEnd},
};
use schemars::JsonSchema;
use serde::Serialize;

/// The version of the stream's format: raised when a field is removed or changes meaning
/// (adding an event type or an optional field does not raise it).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// One line of the `exec --json` stream.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(title = "agent exec --json event")]
pub(crate) enum ExecEvent {
    /// The first event of every stream.
    #[serde(rename = "run.started")]
    RunStarted {
        /// The stream format's version: raised when a field is removed or changes meaning.
        schema_version: u32,
        /// The session id (`--resume` takes it).
        session_id: String,
        /// The model name as configured.
        model: String,
    },
    /// A model turn began (1-based, per run).
    #[serde(rename = "turn.started")]
    TurnStarted {
        /// The turn number.
        turn: usize,
    },
    /// An item was appended to the conversation (the user's prompt, the model's messages, tool
    /// calls and reasoning once its response completed, each tool output): the transcript's
    /// `item`, as `--resume` reads it.
    #[serde(rename = "item.added")]
    ItemAdded {
        /// The item, tagged by its own `type` (`message`, `tool_call`, `tool_output`,
        /// `reasoning`).
        #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
        item: serde_json::Value,
    },
    /// A piece of the assistant's text, as it streams.
    #[serde(rename = "text.delta")]
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of visible reasoning, as it streams.
    #[serde(rename = "reasoning.delta")]
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// A tool call is about to run.
    #[serde(rename = "tool.started")]
    ToolStarted {
        /// The model's id for the call.
        call_id: String,
        /// The tool name as called.
        tool: String,
        /// The raw argument text.
        arguments: String,
    },
    /// A tool call has its output.
    #[serde(rename = "tool.completed")]
    ToolCompleted {
        /// The model's id for the call.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Whether it succeeded.
        ok: bool,
        /// The stable error code when it did not (`permission_denied`, `timeout`, …).
        #[schemars(with = "Option<String>")]
        error: Option<ToolErrorKind>,
        /// Wall time of the call, hooks included, in milliseconds; the wait for an approval is not
        /// counted.
        duration_ms: u64,
        /// Whether the output the model read was cut by the output cap.
        truncated: bool,
        /// Where the whole output of a cut call was saved.
        output_path: Option<String>,
        /// For a call refused because it needed approval: what would allow it.
        remedy: Option<RemedyInfo>,
    },
    /// Token usage of one model response: this turn's counts and the run's running total.
    #[serde(rename = "usage")]
    Usage {
        /// The turn the response belongs to.
        turn: usize,
        /// This response's tokens only.
        turn_usage: Tokens,
        /// Every response of this run so far, this one included.
        cumulative_usage: Tokens,
    },
    /// A call waits for someone to approve it (`agent serve` only: `exec` asks no one); it is
    /// answered at `POST /v1/sessions/{id}/approvals/{approval_id}` (docs/serve.md).
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        /// The approval's id in the session.
        approval_id: u64,
        /// The model's id for the call.
        call_id: String,
        /// The tool.
        tool: String,
        /// Why the policy asks.
        reason: String,
        /// The rules "allow always" records (empty: this exact call, this session).
        suggested_rules: Vec<String>,
    },
    /// The model asks the user a question (`ask_user`; `agent serve` only: `exec` has no one to
    /// ask); it is answered at `POST /v1/sessions/{id}/questions/{question_id}` (docs/serve.md).
    #[serde(rename = "question.asked")]
    QuestionAsked {
        /// The question's id in the session.
        question_id: u64,
        /// The model's id for the call that asks.
        call_id: String,
        /// The question.
        question: String,
        /// The choices, 2 to 6, in the model's order.
        choices: Vec<crate::serve::QuestionChoice>,
        /// Whether several choices may be picked.
        multiple: bool,
        /// Whether an answer in words of one's own is taken.
        free_text: bool,
    },
    /// A model request failed; `run.failed` follows.
    #[serde(rename = "error")]
    Error {
        /// What went wrong (never contains a key).
        message: String,
    },
    /// A model request is about to be sent: its input tokens by the agent's own count (the
    /// whole conversation, also when `previous_response_id` sends only the new items; a quarter
    /// of its bytes while that is under the compaction threshold). The server's count follows
    /// in `usage` when it reports one.
    #[serde(rename = "request.started")]
    RequestStarted {
        /// The turn the request belongs to.
        turn: usize,
        /// The request's input tokens as the agent counted them.
        estimated_input_tokens: usize,
        /// The model's context window, in tokens.
        window: u64,
    },
    /// Older turns were compacted to keep requests inside the window (see `docs/context.md`).
    #[serde(rename = "compaction")]
    Compaction {
        /// What triggered it: `threshold`, `overflow` (the server refused a request as too
        /// long; it is retried once) or `manual`.
        reason: String,
        /// The request's estimated tokens before.
        tokens_before: usize,
        /// And after.
        tokens_after: usize,
        /// Old tool outputs shrunk to their head and the path of their saved full text.
        outputs_shrunk: usize,
        /// Turns replaced by the summary and the ledger (0 when shrinking was enough).
        turns_dropped: usize,
        /// Whether the model wrote the summary (false when none was needed or it failed).
        summarized: bool,
    },
    /// The plan changed (`update_plan`): the whole plan after the change. Its own
    /// `plan_schema_version` versions the `plan` object (docs/agents.md).
    #[serde(rename = "plan.updated")]
    PlanUpdated {
        /// `agent_exec::plan::PLAN_SCHEMA_VERSION`.
        plan_schema_version: u32,
        /// The change's number in the session, from 1.
        seq: u64,
        /// `{"items":[{"id","text","status"}],"explanation"?}`; statuses `pending`,
        /// `in_progress`, `completed`, `cancelled`.
        plan: serde_json::Value,
    },
    /// An event of a child agent (`task`), with the child's and its parent's ids.
    #[serde(rename = "agent.event")]
    ChildEvent {
        /// The child's id (`<session>.c<N>`).
        agent_id: String,
        /// The session id of the agent that started it.
        parent_id: String,
        /// The definition it runs (`explore`, …).
        agent: String,
        /// The child's event, as a run's own events are written.
        event: Box<ExecEvent>,
    },
    /// The last event of a run that answered.
    #[serde(rename = "run.completed")]
    RunCompleted {
        /// The final answer (the JSON text alone with `--output-schema`).
        answer: String,
        /// The run's total usage.
        cumulative_usage: Tokens,
        /// Always 0.
        exit_code: u8,
        /// The child agents' tokens, already counted in `cumulative_usage`; absent when no
        /// child ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        child_usage: Option<Tokens>,
        /// Background jobs still running when the model answered, and what `--jobs` did with
        /// them; absent when none ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        background_jobs: Option<BackgroundJobs>,
    },
    /// The last event of a run that did not answer.
    #[serde(rename = "run.failed")]
    RunFailed {
        /// Why.
        reason: FailReason,
        /// The details, for people.
        message: String,
        /// The run's total usage.
        cumulative_usage: Tokens,
        /// The process's exit code.
        exit_code: u8,
        /// The child agents' tokens, already counted in `cumulative_usage`; absent when no
        /// child ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        child_usage: Option<Tokens>,
        /// Background jobs still running when the run ended, and what `--jobs` did with them;
        /// absent when none ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        background_jobs: Option<BackgroundJobs>,
    },
}

/// The background jobs a run left running, and how each ended (`--jobs kill|wait`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct BackgroundJobs {
    /// `kill` (SIGTERM, SIGKILL after 2 s) or `wait` (until they finished).
    pub(crate) policy: JobsPolicy,
    /// Each job that was running.
    pub(crate) jobs: Vec<JobEndInfo>,
}

/// What `--jobs` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JobsPolicy {
    /// Killed them.
    Kill,
    /// Waited for them.
    Wait,
}

/// How one job ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct JobEndInfo {
    /// The job's id in the session.
    pub(crate) id: u32,
    /// Its command line.
    pub(crate) command: String,
    /// `exit 0`, `signal SIGTERM`, …
    pub(crate) status: String,
}

impl BackgroundJobs {
    /// The report of `ended` under `policy`; `None` when no job was running.
    pub(crate) fn new(policy: EndPolicy, ended: Vec<JobEnd>) -> Option<Self> {
        if ended.is_empty() {
            return None;
        }
        let policy = match policy {
            EndPolicy::Kill => JobsPolicy::Kill,
            EndPolicy::Wait => JobsPolicy::Wait,
        };
        let jobs = ended
            .into_iter()
            .map(|job| JobEndInfo { id: job.id, command: job.command, status: job.status })
            .collect();
        Some(Self { policy, jobs })
    }
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FailReason {
    /// The turn limit was reached (exit 1).
    MaxTurns,
    /// The model request failed after retries (exit 1).
    ModelError,
    /// Ctrl-C or SIGINT (exit 130).
    Cancelled,
    /// A hook stopped the run (exit 1).
    Stopped,
    /// The answer did not match `--output-schema`, even when asked again (exit 1).
    InvalidOutput,
    /// The harness itself failed, for example the session log (exit 1).
    Error,
    /// A bug: the harness panicked (exit 101).
    Panic,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct Tokens {
    /// Prompt tokens.
    pub(crate) input_tokens: u64,
    /// Of which served from the provider's prompt cache.
    pub(crate) cached_input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub(crate) output_tokens: u64,
    /// Of which reasoning.
    pub(crate) reasoning_tokens: u64,
}

impl Tokens {
    pub(crate) fn add(&mut self, usage: &Usage) {
        self.input_tokens += usage.input_tokens;
        self.cached_input_tokens += usage.cached_input_tokens;
        self.output_tokens += usage.output_tokens;
        self.reasoning_tokens += usage.reasoning_tokens;
    }
}

/// What would let a refused call run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct RemedyInfo {
    /// Allow rules that would cover the call (`Bash(cargo test *)`).
    pub(crate) rules: Vec<String>,
    /// A permission mode that would allow it.
    pub(crate) mode: Option<String>,
}

impl From<&Remedy> for RemedyInfo {
    fn from(remedy: &Remedy) -> Self {
        Self { rules: remedy.rules.clone(), mode: remedy.mode.map(|mode| mode.to_string()) }
    }
}

/// Turns the loop's events into stream events, keeping the turn number and the usage totals.
#[derive(Debug, Default)]
pub(crate) struct JsonStream {
    turn: usize,
    cumulative: Tokens,
    /// Reported by the last event.
    pub(crate) background_jobs: Option<BackgroundJobs>,
    /// The child agents' tokens, added to the last event's totals.
    pub(crate) child_usage: Option<Tokens>,
}

impl JsonStream {
    /// The stream event for a loop event; `None` for the loop's own finish, which
    /// [`JsonStream::finish`] reports with the exit code.
    pub(crate) fn event(&mut self, event: &AgentEvent) -> Option<ExecEvent> {
        Some(match event {
            AgentEvent::ItemAdded { item } => {
                ExecEvent::ItemAdded { item: serde_json::to_value(item).ok()? }
            }
            AgentEvent::TurnStarted { turn } => {
                self.turn = *turn;
                ExecEvent::TurnStarted { turn: *turn }
            }
            AgentEvent::TextDelta { text } => ExecEvent::TextDelta { text: text.clone() },
            AgentEvent::ReasoningDelta { text } => ExecEvent::ReasoningDelta { text: text.clone() },
            AgentEvent::ToolCallStarted { call_id, name, arguments } => ExecEvent::ToolStarted {
                call_id: call_id.clone(),
                tool: name.clone(),
                arguments: arguments.clone(),
            },
            AgentEvent::ToolCallFinished {
                call_id,
                name,
                ok,
                error,
                duration_ms,
                truncated,
                output_path,
                remedy,
            } => ExecEvent::ToolCompleted {
                call_id: call_id.clone(),
                tool: name.clone(),
                ok: *ok,
                error: error.clone(),
                duration_ms: *duration_ms,
                truncated: *truncated,
                output_path: output_path.clone(),
                remedy: remedy.as_ref().map(RemedyInfo::from),
            },
            AgentEvent::Usage { usage } => {
                let mut turn_usage = Tokens::default();
                turn_usage.add(usage);
                self.cumulative.add(usage);
                ExecEvent::Usage { turn: self.turn, turn_usage, cumulative_usage: self.cumulative }
            }
            AgentEvent::Error { message } => ExecEvent::Error { message: message.clone() },
            AgentEvent::Request { turn, estimated_input_tokens, window } => {
                ExecEvent::RequestStarted {
                    turn: *turn,
                    estimated_input_tokens: *estimated_input_tokens,
                    window: *window,
                }
            }
            AgentEvent::Compaction { info, .. } => ExecEvent::Compaction {
                reason: serde_json::to_value(info.reason).ok()?.as_str()?.to_owned(),
                tokens_before: info.tokens_before,
                tokens_after: info.tokens_after,
                outputs_shrunk: info.outputs_shrunk,
                turns_dropped: info.turns_dropped,
                summarized: info.summarized,
            },
            AgentEvent::Finished { .. } => return None,
        })
    }

    /// The last event of a run that ended with `finish`, and `exit_code`.
    pub(crate) fn finish(&self, finish: &Finish, exit_code: u8) -> ExecEvent {
        let (reason, message) = match finish {
            Finish::Answered(answer) => {
                return ExecEvent::RunCompleted {
                    answer: answer.clone(),
                    cumulative_usage: self.total(),
                    exit_code,
                    child_usage: self.child_usage,
                    background_jobs: self.background_jobs.clone(),
                };
            }
            Finish::MaxTurns(turns) => {
                (FailReason::MaxTurns, format!("stopped after {turns} turns without an answer"))
            }
            Finish::ModelError(err) => (FailReason::ModelError, err.to_string()),
            Finish::Cancelled => (FailReason::Cancelled, "interrupted".to_owned()),
            Finish::Stopped(reason) => (FailReason::Stopped, reason.clone()),
            Finish::InvalidOutput(problem) => (FailReason::InvalidOutput, problem.clone()),
        };
        self.failed(reason, message, exit_code)
    }

    /// The run's tokens, the children's included.
    fn total(&self) -> Tokens {
        let mut total = self.cumulative;
        if let Some(children) = self.child_usage {
            total.input_tokens += children.input_tokens;
            total.cached_input_tokens += children.cached_input_tokens;
            total.output_tokens += children.output_tokens;
            total.reasoning_tokens += children.reasoning_tokens;
        }
        total
    }

    /// A `run.failed` event.
    pub(crate) fn failed(&self, reason: FailReason, message: String, exit_code: u8) -> ExecEvent {
        ExecEvent::RunFailed {
            reason,
            message,
            cumulative_usage: self.total(),
            exit_code,
            child_usage: self.child_usage,
            background_jobs: self.background_jobs.clone(),
        }
    }
}

/// Prints one event as a line on stdout and flushes it, so a reader sees it at once.
pub(crate) fn print(event: &ExecEvent) {
    if let Ok(line) = serde_json::to_string(event) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON Schema of the whole stream (one event per line), as committed in
    /// `docs/exec-events.schema.json`.
    fn schema() -> String {
        let schema = schemars::schema_for!(ExecEvent);
        let mut text = serde_json::to_string_pretty(&schema).unwrap();
        text.push('\n');
        text
    }

    const COMMITTED: &str = include_str!("../../../docs/exec-events.schema.json");

    #[test]
    fn the_committed_schema_matches_the_event_types() {
        let generated = schema();
        if generated != COMMITTED && std::env::var_os("AGENT_BLESS_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/exec-events.schema.json");
            std::fs::write(path, &generated).unwrap();
            return;
        }
        assert!(
            generated == COMMITTED,
            "docs/exec-events.schema.json is out of date with the event types in \
             crates/agent-cli/src/events.rs; if the change is meant (and SCHEMA_VERSION raised \
             when a field was removed or changed meaning), regenerate it with \
             `AGENT_BLESS_SCHEMA=1 cargo test -p agent-cli --bin agent events`"
        );
    }
}
