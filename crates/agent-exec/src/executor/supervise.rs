//! Supervision: a running tool under its time limit and the caller's cancellation token, with
//! the grace period after either and a caught panic turned into an outcome.

use std::{any::Any, panic::AssertUnwindSafe, task::Poll, time::Duration, time::Instant};

use agent_core::{BoxFuture, CancellationToken, ToolError, ToolErrorKind, ToolOutput};
use futures_util::{FutureExt, future::CatchUnwind};

use super::Executor;
use crate::output::human;

/// A tool's future with its panics caught.
type Guarded<'a> = CatchUnwind<AssertUnwindSafe<BoxFuture<'a, Result<ToolOutput, ToolError>>>>;

impl Executor {
    /// Drives a tool's future under its time limit and the caller's token, catching panics.
    pub(super) async fn supervise(
        &self,
        future: BoxFuture<'_, Result<ToolOutput, ToolError>>,
        token: &CancellationToken,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let mut future = AssertUnwindSafe(future).catch_unwind();
        // Most tools finish on their first poll; trying once first keeps the timer out of the hot
        // path entirely.
        if let Poll::Ready(res) =
            std::future::poll_fn(|cx| Poll::Ready(future.poll_unpin(cx))).await
        {
            return flatten(res);
        }
        Box::pin(self.supervise_pending(future, token, cancel, timeout)).await
    }

    /// The slow path of [`Executor::supervise`]: the tool did not finish on its first poll.
    async fn supervise_pending(
        &self,
        mut future: Guarded<'_>,
        token: &CancellationToken,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let stopped_by_cancel = tokio::select! {
            biased;
            res = &mut future => return flatten(res),
            () = cancel.cancelled() => true,
            () = tokio::time::sleep(timeout) => false,
        };
        token.cancel();
        let stopped = tokio::time::timeout(self.config.grace, &mut future).await.is_ok();
        if stopped_by_cancel {
            tracing::debug!(stopped, "tool call cancelled");
        } else {
            tracing::warn!(timeout_ms = timeout.as_millis(), stopped, "tool call timed out");
        }
        if !stopped {
            tracing::warn!(
                grace_ms = self.config.grace.as_millis(),
                "tool abandoned after the grace period"
            );
        }
        let after = human(started.elapsed());
        let how = if stopped {
            "the tool was stopped".to_owned()
        } else {
            format!("the tool did not stop within {} and was abandoned", human(self.config.grace))
        };
        if stopped_by_cancel {
            Err(ToolError::new(
                ToolErrorKind::Cancelled,
                format!(
                    "the call was cancelled after {after}; {how}. Do not retry unless the user asks"
                ),
            ))
        } else {
            Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "the call timed out after {}; {how}. Try a smaller or faster call, or run long jobs in the background",
                    human(timeout)
                ),
            ))
        }
    }
}

/// A tool's result, or the observation of its panic.
fn flatten(
    res: std::thread::Result<Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    match res {
        Ok(res) => res,
        Err(panic) => Err(panicked(&panic)),
    }
}

/// The observation of a tool that panicked.
pub(super) fn panicked(panic: &Box<dyn Any + Send>) -> ToolError {
    ToolError::new(
        ToolErrorKind::ToolError,
        format!(
            "the tool crashed ({}); this is a bug in the tool, not in your arguments. Try another approach",
            panic_message(panic)
        ),
    )
}

/// A panic's message, cut to 300 characters.
pub(super) fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    let message = if let Some(text) = panic.downcast_ref::<&str>() {
        text
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.as_str()
    } else {
        "panic"
    };
    message.chars().take(300).collect()
}
