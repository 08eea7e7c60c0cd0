//! Batches: all tool calls of one model turn, with outputs in call order.
//!
//! Read-only tools run concurrently (up to `max_parallel` at once); any other tool runs alone, in
//! call order, after every earlier call has finished, and later calls wait for it. This is the
//! read/write lock Codex uses per turn: reads take the shared side, everything else the exclusive
//! side, and tokio's lock is fair, so calls acquire it in the order they were made.

use agent_core::{CancellationToken, ToolCall, ToolError, ToolErrorKind};
use tokio::sync::{RwLock, Semaphore};

use crate::executor::{Executor, Outcome};

impl Executor {
    /// Runs all calls of one turn and returns one outcome per call, in call order.
    ///
    /// Cancelling `cancel` ends the batch promptly: calls that have not started get a `cancelled`
    /// outcome, running ones are cancelled (with the grace period), and every call still gets
    /// exactly one outcome.
    pub async fn execute_batch(
        &self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Vec<Outcome> {
        match calls {
            [] => return Vec::new(),
            [call] => return vec![self.execute(call, cancel).await],
            _ => {}
        }
        let lock = RwLock::new(());
        let slots = Semaphore::new(self.config().max_parallel.max(1));
        let runs = calls.iter().map(|call| {
            let read_only = match self.registry().get(&call.name) {
                Some(tool) => tool.spec().effects.read_only,
                // An unknown tool only produces an error; it need not wait for anything.
                None => true,
            };
            let (lock, slots) = (&lock, &slots);
            async move {
                let waited = async {
                    if read_only {
                        let shared = lock.read().await;
                        let slot = slots.acquire().await;
                        (Some(shared), None, slot.ok())
                    } else {
                        (None, Some(lock.write().await), None)
                    }
                };
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => self.cancelled_while_waiting(call),
                    _guards = waited => self.execute(call, cancel).await,
                }
            }
        });
        futures_util::future::join_all(runs).await
    }

    fn cancelled_while_waiting(&self, call: &ToolCall) -> Outcome {
        let tool = match self.registry().get(&call.name) {
            Some(tool) => tool.spec().name.clone(),
            None => call.name.clone(),
        };
        let err = ToolError::new(
            ToolErrorKind::Cancelled,
            "the call was cancelled before it ran. Do not retry unless the user asks",
        );
        Outcome {
            call_id: call.call_id.clone(),
            tool,
            ok: false,
            error_code: Some(err.kind.as_str()),
            text: err.observation(),
            duration: std::time::Duration::ZERO,
            truncated: false,
            output_path: None,
            remedy: None,
            stop: None,
            images: Vec::new(),
        }
    }
}
