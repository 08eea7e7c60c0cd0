//! What the batch shows on stderr: a bar redrawn in place on a terminal, one plain line per
//! finished task otherwise (a log file, CI).

use std::{
    io::{IsTerminal, Write},
    time::Duration,
};

use super::record::{Status, TaskResult};

const WIDTH: usize = 30;

/// The counts the bar shows.
#[derive(Debug)]
pub(crate) struct Progress {
    total: usize,
    done: usize,
    not_completed: usize,
    running: usize,
    terminal: bool,
}

impl Progress {
    /// Progress over `total` tasks, of which `skipped` finished in an earlier run.
    pub(crate) fn new(total: usize, skipped: usize) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let progress = Self { total, done: skipped, not_completed: 0, running: 0, terminal };
        if skipped > 0 {
            progress.line(&format!("{skipped} of {total} tasks finished in an earlier run"));
        }
        progress
    }

    /// A task's agent started.
    pub(crate) fn started(&mut self) {
        self.running += 1;
        self.draw();
    }

    /// A task's result was written.
    pub(crate) fn finished(&mut self, result: &TaskResult) {
        self.running = self.running.saturating_sub(1);
        self.done += 1;
        if result.status != Status::Completed {
            self.not_completed += 1;
        }
        let took = Duration::from_millis(result.duration_ms);
        let mut text = format!(
            "[{}/{}] {} {} in {:.1} s",
            self.done,
            self.total,
            result.id,
            result.status.name(),
            took.as_secs_f64()
        );
        let why = result.reason.as_ref().or(result.message.as_ref());
        if let Some(why) = why.filter(|_| result.status != Status::Completed) {
            text.push_str(&format!(" ({why})"));
        }
        self.line(&text);
    }

    /// A line above the bar (or alone, off a terminal).
    pub(crate) fn line(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = writeln!(err, "batch: {text}");
        drop(err);
        self.draw();
    }

    /// Clears the bar before the batch's last words.
    pub(crate) fn clear(&self) {
        if self.terminal {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }

    fn draw(&self) {
        if !self.terminal || self.total == 0 {
            return;
        }
        let filled = WIDTH * self.done / self.total;
        let bar: String = "#".repeat(filled) + &".".repeat(WIDTH - filled);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K[{bar}] {}/{} · {} running · {} not completed",
            self.done, self.total, self.running, self.not_completed
        );
        let _ = err.flush();
    }
}
