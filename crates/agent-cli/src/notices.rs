//! "still waiting for the model": said on stderr while a model stays silent, so a slow server
//! is told apart from a hung one.

use std::{
    sync::mpsc::{self, RecvTimeoutError},
    thread::JoinHandle,
    time::Duration,
};

use agent_session::waiting::Waiting;

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
