//! "still waiting for the model (N s)": how long the model has been silent, and who says so.
//!
//! [`Watched`] wraps the session's model client and notes when a response is awaited and when the
//! model last sent an event; the CLI prints the line on stderr for `exec`, and the REPL's
//! spinner shows the same words. A slow or dripping server is then never a silent hang, while
//! the response's own deadlines (docs/limits.md) decide when waiting ends.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use agent_core::{BoxFuture, ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream};
use futures_util::StreamExt;

/// Shared by the model client of a session (and any it switches to) and what reports on it.
#[derive(Debug, Clone, Default)]
pub struct Waiting(Arc<Mutex<Option<Instant>>>);

impl Waiting {
    /// How long the model has been silent (since the request, or since its last event) while a
    /// response is awaited; `None` when none is.
    pub fn silent_for(&self) -> Option<Duration> {
        self.lock().map(|since| since.elapsed())
    }

    /// The words for a silence of `silent`, said once every `every`: `None` before the first
    /// interval has passed.
    pub fn words(silent: Duration, every: Duration) -> Option<String> {
        let steps = silent.as_millis().checked_div(every.as_millis())?;
        let secs = u64::try_from(steps).ok()?.checked_mul(every.as_secs())?;
        (steps > 0).then(|| format!("still waiting for the model ({secs} s)"))
    }

    fn set(&self, since: Option<Instant>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = since;
    }

    fn lock(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A model client that reports its silences to a [`Waiting`].
pub struct Watched {
    inner: Box<dyn ModelClient>,
    waiting: Waiting,
}

impl Watched {
    /// Wraps `inner` so `waiting` learns when it waits and when it last heard.
    pub fn new(inner: Box<dyn ModelClient>, waiting: Waiting) -> Self {
        Self { inner, waiting }
    }
}

/// Marks the response as no longer awaited when the stream goes, however it ends.
struct Over(Waiting);

impl Drop for Over {
    fn drop(&mut self) {
        self.0.set(None);
    }
}

impl ModelClient for Watched {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn supports_continuation(&self) -> bool {
        self.inner.supports_continuation()
    }

    fn endpoint(&self) -> Option<agent_core::ModelEndpoint> {
        self.inner.endpoint()
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        self.waiting.set(Some(Instant::now()));
        let over = Over(self.waiting.clone());
        let opened = self.inner.stream(request);
        Box::pin(async move {
            let stream = opened.await?;
            let events = stream.inspect(move |event| match event {
                Ok(ModelEvent::Completed { .. }) | Err(_) => over.0.set(None),
                Ok(_) => over.0.set(Some(Instant::now())),
            });
            Ok(Box::pin(events) as ModelStream<'a>)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(silent_ms: u64, every_secs: u64, expect: Option<&str>) {
        let words =
            Waiting::words(Duration::from_millis(silent_ms), Duration::from_secs(every_secs));
        assert_eq!(words.as_deref(), expect);
    }

    #[test]
    fn the_line_comes_once_each_interval_of_silence() {
        check(9_999, 10, None);
        check(10_000, 10, Some("still waiting for the model (10 s)"));
        check(29_500, 10, Some("still waiting for the model (20 s)"));
        check(3_100, 1, Some("still waiting for the model (3 s)"));
    }
}
