//! Outcomes: what one call produced, built in one place for a success and one for a failure, so
//! every path (dispatch, hooks, batches) words and measures them the same way.

use std::{path::PathBuf, time::Duration, time::Instant};

use agent_core::{CallOutput, Image, ToolCall, ToolError, ToolErrorKind, ToolOutput};

use super::Executor;
use crate::{
    output::{self, SpillError},
    permission::Remedy,
};

/// What one call produced: the observation the model reads, and facts for the harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The `call_id` of the call.
    pub call_id: String,
    /// The tool's registered name (the name as called when no tool matched).
    pub tool: String,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The stable error code when it did not.
    pub error_code: Option<ToolErrorKind>,
    /// The model-visible text: the tool's (capped) output, or the error observation.
    pub text: String,
    /// Wall time from the start of dispatch (or from the approver's answer) to the outcome.
    pub duration: Duration,
    /// Whether the output was cut by the output cap.
    pub truncated: bool,
    /// Where the whole output of a truncated call was saved, when it was.
    pub output_path: Option<PathBuf>,
    /// For a call refused because it needed approval and nobody could be asked: what would
    /// allow it, for the front end to show its user in its own terms.
    pub remedy: Option<Remedy>,
    /// A hook asked to stop the whole run after this call, with this reason.
    pub stop: Option<String>,
    /// Images the tool returned beside its text, for models that see images.
    pub images: Vec<Image>,
}

impl Outcome {
    /// The transcript item answering the call.
    pub fn to_call_output(&self) -> CallOutput {
        self.clone().into_call_output()
    }

    /// The transcript item answering the call, without copying the text.
    pub fn into_call_output(self) -> CallOutput {
        CallOutput {
            call_id: self.call_id,
            output: self.text,
            ok: self.ok,
            error: self.error_code,
            images: self.images,
        }
    }
}

impl Executor {
    /// The outcome of a call that ran and returned `output`, capped to `cap` characters (the
    /// whole output is saved to the session directory when it was cut).
    pub(super) async fn success(
        &self,
        call: &ToolCall,
        tool: &str,
        output: ToolOutput,
        cap: usize,
        start: Instant,
    ) -> Outcome {
        let (text, truncated, output_path) = match output::cut(&output.text, cap) {
            None => (output.text, false, None),
            Some(cut) => {
                let kept = cut.head.len() + cut.tail.len();
                crate::telemetry::record_dropped(output.text.len().saturating_sub(kept));
                let spilled = self.spill(call, &output.text).await;
                (cut.render(&spilled), true, spilled.ok())
            }
        };
        Outcome {
            call_id: call.call_id.clone(),
            tool: tool.to_owned(),
            ok: true,
            error_code: None,
            text,
            duration: start.elapsed(),
            truncated,
            output_path,
            remedy: None,
            stop: None,
            images: output.images,
        }
    }

    /// The outcome of a call that failed with `err`, at any stage.
    pub(super) fn failure(
        &self,
        call: &ToolCall,
        tool: &str,
        err: ToolError,
        start: Instant,
    ) -> Outcome {
        Outcome {
            call_id: call.call_id.clone(),
            tool: tool.to_owned(),
            ok: false,
            text: err.observation(),
            error_code: Some(err.kind),
            duration: start.elapsed(),
            truncated: false,
            output_path: None,
            remedy: None,
            stop: None,
            images: Vec::new(),
        }
    }

    /// Saves a full output to the session directory on the blocking pool.
    pub(super) async fn spill(&self, call: &ToolCall, text: &str) -> Result<PathBuf, SpillError> {
        let Some(dir) = &self.config.session_dir else {
            return Err(SpillError::NoSessionDir);
        };
        let path = output::spill_path(dir, &call.call_id);
        let text = text.to_owned();
        tokio::task::spawn_blocking(move || output::save(&path, &text)).await?
    }
}

/// The observation of a call that was cancelled before its tool ran (while it waited for its
/// turn in a batch, for its approval, or before dispatch).
pub(super) fn cancelled_before_start() -> ToolError {
    ToolError::new(
        ToolErrorKind::Cancelled,
        "the call was cancelled before it ran. Do not retry unless the user asks",
    )
}
