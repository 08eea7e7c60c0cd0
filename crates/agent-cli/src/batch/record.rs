//! One line of RESULTS.jsonl: how a task ended and where its patch and transcript are. The Ray
//! driver (scripts/ray/batch.py) writes the same fields, so one reader serves both.

use serde::{Deserialize, Serialize};

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    /// The agent answered (`run.completed`, exit 0).
    Completed,
    /// The agent ended without an answer (`run.failed`: `reason` says why).
    Failed,
    /// The task ran past its wall limit and its processes were killed.
    WallLimit,
    /// The task's tokens went past its limit and its processes were killed.
    TokenLimit,
    /// The task could not run or its agent died without a last event: no copy of the workspace,
    /// no binary, a crash.
    Error,
}

impl Status {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::WallLimit => "wall_limit",
            Self::TokenLimit => "token_limit",
            Self::Error => "error",
        }
    }
}

/// A task's result. Paths are relative to the directory that holds RESULTS.jsonl, so a batch
/// directory can be moved or copied off a cluster whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskResult {
    /// The task's id.
    pub(crate) id: String,
    pub(crate) status: Status,
    /// The agent's exit code; `null` when it was killed or never started.
    pub(crate) exit_code: Option<i32>,
    /// `run.failed`'s reason (`max_turns`, `model_error`, …); `null` otherwise.
    pub(crate) reason: Option<String>,
    /// What went wrong, for people; `null` for a completed task.
    pub(crate) message: Option<String>,
    /// The final answer; `null` when there was none.
    pub(crate) answer: Option<String>,
    /// The patch of what the task changed (`patches/<id>.patch`); `null` when it changed nothing.
    pub(crate) patch: Option<String>,
    /// Input tokens of every model response, as the last event (or last `usage`) counted them.
    pub(crate) tokens_in: u64,
    /// Output tokens, likewise.
    pub(crate) tokens_out: u64,
    /// Wall time of the agent process, in milliseconds.
    pub(crate) duration_ms: u64,
    /// The session id (`agent exec --resume` takes it with `AGENT_DATA_DIR=<batch>/data`).
    pub(crate) session_id: Option<String>,
    /// The session's transcript (`data/sessions/<id>/transcript.jsonl`).
    pub(crate) transcript: Option<String>,
    /// The machine it ran on (the host name; Ray's node address).
    pub(crate) node: String,
}

impl TaskResult {
    /// A result for a task that never got to run its agent.
    pub(crate) fn error(id: &str, message: String, node: &str) -> Self {
        Self {
            id: id.to_owned(),
            status: Status::Error,
            exit_code: None,
            reason: None,
            message: Some(message),
            answer: None,
            patch: None,
            tokens_in: 0,
            tokens_out: 0,
            duration_ms: 0,
            session_id: None,
            transcript: None,
            node: node.to_owned(),
        }
    }
}

/// This machine's name, for the `node` field.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field names and order are the contract the Ray driver copies.
    #[test]
    fn a_result_line_has_the_documented_fields() {
        let mut result = TaskResult::error("t1", "no copy".to_owned(), "node-a");
        result.status = Status::WallLimit;
        insta::assert_snapshot!(serde_json::to_string(&result).unwrap());
    }
}
