//! "still waiting for the model (N s)": how long the model has been silent, and who says so.
//!
//! [`Watched`] wraps the session's model client and notes when a response is awaited and when the
//! model last sent an event; [`Notices`] prints the line on stderr for `exec`, and the REPL's
//! spinner shows the same words. A slow or dripping server is then never a silent hang, while
//! the response's own deadlines (docs/limits.md) decide when waiting ends.

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        mpsc::{self, RecvTimeoutError},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use agent_core::{BoxFuture, ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream};
use futures_util::StreamExt;

/// Shared by the model client of a session (and any it switches to) and what reports on it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Waiting(Arc<Mutex<Option<Instant>>>);

impl Waiting {
    /// How long the model has been silent (since the request, or since its last event) while a
    /// response is awaited; `None` when none is.
    pub(crate) fn silent_for(&self) -> Option<Duration> {
        self.lock().map(|since| since.elapsed())
    }

    /// The words for a silence of `silent`, said once every `every`: `None` before the first
    /// interval has passed.
    pub(crate) fn words(silent: Duration, every: Duration) -> Option<String> {
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
pub(crate) struct Watched {
    inner: Box<dyn ModelClient>,
    waiting: Waiting,
}

impl Watched {
    pub(crate) fn new(inner: Box<dyn ModelClient>, waiting: Waiting) -> Self {
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

/// Prints "agent: still waiting for the model (N s)" on stderr every `every` of silence, on its
/// own thread (the runtime is busy waiting on the network); stops when dropped.
pub(crate) struct Notices {
    /// Dropping it wakes the thread at once: a sleeping thread would hold every `exec` up to a
    /// tick at exit (250 ms with the default interval).
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Notices {
    pub(crate) fn start(waiting: Waiting, every: Duration) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        // Four looks per interval keep each line within a quarter interval of its time.
        let tick = (every / 4).clamp(Duration::from_millis(10), Duration::from_millis(250));
        let thread = std::thread::spawn(move || {
            let mut said = None;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                let words = waiting.silent_for().and_then(|silent| Waiting::words(silent, every));
                if let Some(line) = words.as_ref().filter(|_| words != said) {
                    eprintln!("agent: {line}");
                }
                said = words;
            }
        });
        Self { stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for Notices {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
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
