//! Calls that stand for other calls: a tool whose prepared call has steps (the `shell`
//! built-in, whose commands are `bash` calls) is not run itself until each step has passed the
//! whole path a model's call takes — hooks, permission rules, approvals, the time limit and the
//! output cap — one at a time, in order. The first step that is refused (denied, rejected by
//! the user, blocked by a hook) or cancelled ends the sequence: no later step runs.

use std::time::Instant;

use agent_core::{BoxFuture, CancellationToken, PreparedCall, ToolCall, ToolError, ToolErrorKind};

use super::{Executor, Outcome};
use crate::registry::Entry;

impl Executor {
    /// Runs the steps of `prepared`, then the call itself with their outputs.
    pub(super) fn run_steps<'a>(
        &'a self,
        call: &'a ToolCall,
        entry: &'a Entry,
        mut prepared: PreparedCall,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let spec = entry.tool.spec();
            let start = Instant::now();
            // The call itself touches nothing; only what hides the tool (a bare deny rule, plan
            // mode for a tool with effects) stops it here. What it would ask is asked of each
            // step instead.
            if !self.policy.offers(spec) {
                let err = ToolError::new(
                    ToolErrorKind::PermissionDenied,
                    format!(
                        "`{}` is not allowed in this session (a deny rule or the permission mode); do not retry it",
                        spec.name
                    ),
                );
                return self.failure(call, &spec.name, err, start);
            }
            let mut results = Vec::new();
            let mut stop = None;
            for step in prepared.take_steps() {
                let outcome = self.dispatch(&step, cancel).await;
                let refused = matches!(
                    outcome.error_code,
                    Some(
                        ToolErrorKind::PermissionDenied
                            | ToolErrorKind::Rejected
                            | ToolErrorKind::Cancelled
                    )
                );
                stop = stop.or(outcome.stop.clone());
                results.push(outcome.into_call_output());
                if refused || stop.is_some() {
                    break;
                }
            }
            let prepared = prepared.with_results(results);
            let mut outcome =
                self.run_prepared(call, entry, prepared, None, cancel, Instant::now()).await;
            outcome.stop = outcome.stop.or(stop);
            outcome
        })
    }
}
