//! Batches: all tool calls of one model turn, with outputs in call order.
//!
//! Read-only tools run concurrently (up to `max_parallel` at once); any other tool, registered or
//! late, runs alone, in call order, after every earlier call has finished, and later calls wait
//! for it. This is the read/write lock Codex uses per turn: reads take the shared side,
//! everything else the exclusive side, and tokio's lock is fair, so calls acquire it in the order
//! they were made.

use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ToolCall};
use tokio::sync::{RwLock, Semaphore};

use super::{Executor, Outcome, outcome::cancelled_before_start};

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
            // The same look-up as dispatch, so a late tool (an MCP server's) is judged by its own
            // effects like a registered one.
            let read_only = match self.entry(&call.name) {
                Some(entry) => entry.tool.spec().effects.read_only,
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

    /// The outcome of a call that was still waiting for its turn when the batch was cancelled.
    fn cancelled_while_waiting(&self, call: &ToolCall) -> Outcome {
        let tool = match self.entry(&call.name) {
            Some(entry) => entry.tool.spec().name.clone(),
            None => call.name.clone(),
        };
        let mut outcome = self.failure(call, &tool, cancelled_before_start(), Instant::now());
        // It never started, so it took no time.
        outcome.duration = Duration::ZERO;
        outcome
    }
}
