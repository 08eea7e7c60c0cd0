//! Context that lasts: token accounting for every request, and compaction when a conversation
//! outgrows the model's context window.
//!
//! The loop counts what each request carries (instructions, tool schemas, the transcript) with
//! the [`TokenCounter`] it was given, and trusts the server's reported usage when that is
//! higher. When a request would pass the threshold (default 80 % of the window), when the server
//! reports a context overflow, or when the user asks (`/compact`), it compacts: old tool outputs
//! shrink to their head and a pointer to their saved full text first; if that is not enough, the
//! older turns are replaced by a summary the same model writes, followed by a [`Ledger`](crate::conversation::Ledger) the
//! harness builds from the dropped items. See `docs/context.md`.

mod compactor;
pub(crate) mod count;

use std::sync::Arc;

use agent_core::TokenCounter;
use serde::{Deserialize, Serialize};

pub use self::compactor::{SUMMARY_MARKER, SUMMARY_PROMPT};
pub(crate) use self::{compactor::compact, count::RequestCount};

/// How the loop keeps requests inside the model's context window.
#[derive(Debug, Clone)]
pub struct ContextConfig {
    /// Counts tokens for the model in use.
    pub counter: Arc<dyn TokenCounter>,
    /// The model's context window, in tokens.
    pub window: u64,
    /// Where the window came from (`configured`, `known model`, `server`, `default`), for
    /// `/context`.
    pub window_source: String,
    /// The share of the window a request may fill before the loop compacts (default 0.8).
    pub threshold: f64,
    /// The budget of latest turns kept verbatim by a summary, in tokens (default a quarter of
    /// the window).
    pub keep_recent_tokens: usize,
    /// Tool outputs of turns older than this many turns shrink first (default 3).
    pub shrink_after_turns: usize,
    /// How many characters of a shrunk output stay (default 400).
    pub shrink_head_chars: usize,
    /// A window the model server reports once the session has started; when it arrives it
    /// replaces `window` from the next request on.
    pub server_window: Option<Arc<ServerWindow>>,
}

/// The context window a model server reports about itself, filled in the background (the CLI
/// asks the server while the first request is already on its way, so start-up never waits).
#[derive(Debug, Default)]
pub struct ServerWindow(std::sync::OnceLock<u64>);

impl ServerWindow {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the server's window; a second report is ignored.
    pub fn set(&self, tokens: u64) {
        let _ = self.0.set(tokens);
    }

    /// The server's window, once reported.
    pub fn get(&self) -> Option<u64> {
        self.0.get().copied()
    }
}

impl ContextConfig {
    /// A window of `window` tokens counted by `counter`, with the defaults above.
    pub fn new(counter: Arc<dyn TokenCounter>, window: u64, source: impl Into<String>) -> Self {
        Self {
            counter,
            window,
            window_source: source.into(),
            threshold: 0.8,
            keep_recent_tokens: usize::try_from(window / 4).unwrap_or(usize::MAX),
            shrink_after_turns: 3,
            shrink_head_chars: 400,
            server_window: None,
        }
    }

    /// The window in force: the server's, once it has reported one, else `window`.
    pub fn current_window(&self) -> u64 {
        self.server_window.as_ref().and_then(|reported| reported.get()).unwrap_or(self.window)
    }

    /// Where the window in force came from.
    pub fn current_source(&self) -> &str {
        match self.server_window.as_ref().and_then(|reported| reported.get()) {
            Some(_) => "reported by the server",
            None => &self.window_source,
        }
    }

    /// The most tokens a request may carry before the loop compacts.
    pub fn threshold_tokens(&self) -> usize {
        (self.current_window() as f64 * self.threshold.clamp(0.1, 1.0)) as usize
    }

    /// What a compaction aims for: well under the threshold, so the next few turns fit without
    /// compacting again at once.
    pub(crate) fn target_tokens(&self) -> usize {
        (self.current_window() as f64 * (self.threshold.clamp(0.1, 1.0) * 0.6)) as usize
    }

    /// The budget of latest turns a summary keeps: never more than a quarter of the window in
    /// force, since a server may report a window smaller than the one assumed at the start.
    pub(crate) fn keep_recent(&self) -> usize {
        self.keep_recent_tokens
            .min(usize::try_from(self.current_window() / 4).unwrap_or(usize::MAX))
    }
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The next request would have passed the threshold.
    Threshold,
    /// The server answered that the request was over the model's context window.
    Overflow,
    /// The user asked (`/compact`).
    Manual,
}

/// What one compaction did: the transcript's `compaction` record and the `--json` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionInfo {
    /// Why it ran.
    pub reason: CompactionReason,
    /// The estimated request size before, in tokens.
    pub tokens_before: usize,
    /// The estimated request size after, in tokens.
    pub tokens_after: usize,
    /// Transcript items before.
    pub items_before: usize,
    /// Transcript items after.
    pub items_after: usize,
    /// Tool outputs shrunk to their head and a pointer.
    pub outputs_shrunk: usize,
    /// Arguments of failed calls replaced by a short note (their outputs say why they failed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub arguments_shrunk: usize,
    /// Turns replaced by the summary and the ledger (0 when shrinking was enough).
    pub turns_dropped: usize,
    /// Whether the model wrote a summary; false when none was needed or the request failed
    /// (then the turns were dropped behind the ledger alone).
    pub summarized: bool,
    /// Why the summary request failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_error: Option<String>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// What the next request carries, by part, for `/context`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextUsage {
    /// The instructions, project instructions included.
    pub instructions: usize,
    /// The tool schemas.
    pub tools: usize,
    /// The transcript.
    pub transcript: usize,
    /// The window.
    pub window: u64,
    /// Where the window came from.
    pub window_source: String,
    /// The counter's name.
    pub counter: String,
    /// The threshold at which the loop compacts.
    pub threshold: usize,
}

impl ContextUsage {
    /// The whole request.
    pub fn total(&self) -> usize {
        self.instructions + self.tools + self.transcript
    }

    /// The tokens left in the window.
    pub fn free(&self) -> u64 {
        self.window.saturating_sub(self.total() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_the_server_reports_later_replaces_the_assumed_one() {
        let reported = Arc::new(ServerWindow::new());
        let mut ctx = ContextConfig::new(
            Arc::new(agent_core::CharEstimate),
            32_768,
            "default for an unknown model",
        );
        ctx.server_window = Some(reported.clone());
        assert_eq!(
            (ctx.current_window(), ctx.threshold_tokens(), ctx.keep_recent()),
            (32_768, 26_214, 8_192)
        );
        reported.set(4_096);
        reported.set(8_192);
        assert_eq!(
            (ctx.current_window(), ctx.threshold_tokens(), ctx.keep_recent()),
            (4_096, 3_276, 1_024)
        );
        assert_eq!(ctx.current_source(), "reported by the server");
    }
}
