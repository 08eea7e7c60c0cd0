//! A minimal spinner on stderr while the model thinks; silent when stderr is not a terminal.

use std::{
    io::{IsTerminal, Write},
    sync::{Arc, Mutex},
    thread,
    time::Duration,
};

use crate::waiting::Waiting;

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

#[derive(Default)]
struct State {
    active: bool,
    frame: usize,
    quit: bool,
}

/// Spins on its own thread, so it keeps moving while the async runtime waits on the network.
pub(crate) struct Spinner {
    state: Option<Arc<Mutex<State>>>,
}

impl Spinner {
    /// A spinner that, once the model has been silent for `notice`, says "still waiting for the
    /// model (N s)" instead of "thinking…", as `exec` prints it.
    pub(crate) fn new(waiting: Waiting, notice: Option<Duration>) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { state: None };
        }
        let state = Arc::new(Mutex::new(State::default()));
        let ticking = Arc::clone(&state);
        thread::spawn(move || {
            loop {
                thread::sleep(Duration::from_millis(80));
                let Ok(mut state) = ticking.lock() else { return };
                if state.quit {
                    return;
                }
                if state.active {
                    state.frame = (state.frame + 1) % FRAMES.len();
                    let words = notice
                        .zip(waiting.silent_for())
                        .and_then(|(every, silent)| Waiting::words(silent, every));
                    let words = words.as_deref().unwrap_or("thinking…");
                    eprint!("\r{} {words}\x1b[K", FRAMES[state.frame]);
                    let _ = std::io::stderr().flush();
                }
            }
        });
        Self { state: Some(state) }
    }

    /// Starts spinning (no-op when already spinning).
    pub(crate) fn start(&self) {
        if let Some(Ok(mut state)) = self.state.as_ref().map(|state| state.lock()) {
            state.active = true;
        }
    }

    /// Stops and erases the spinner, so the next output starts on a clean line.
    pub(crate) fn stop(&self) {
        if let Some(Ok(mut state)) = self.state.as_ref().map(|state| state.lock())
            && state.active
        {
            state.active = false;
            eprint!("\r\x1b[K");
            let _ = std::io::stderr().flush();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
        if let Some(Ok(mut state)) = self.state.as_ref().map(|state| state.lock()) {
            state.quit = true;
        }
    }
}
