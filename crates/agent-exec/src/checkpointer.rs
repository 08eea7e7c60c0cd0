//! [`Checkpointer`]: what the runtime tells a session's checkpoints (docs/checkpoints.md), so that
//! a turn's file changes can be undone. The store that keeps them is another crate's
//! (`agent-checkpoints`); the executor only says when a prompt begins and what each call is about
//! to touch, and hears nothing back but a [`PendingCall`] to close when the call has ended.
//!
//! The executor judges a call only by what it declared (its [`Access`] list and its tool's
//! `Effects`), so no tool is named here; a front end registers a checkpointer with
//! [`AgentBuilder::checkpoints`](crate::AgentBuilder::checkpoints), and a child agent's calls are
//! told to its parent's, so undoing a turn takes back what its children wrote too.

use std::{error::Error as StdError, fmt, path::Path};

use agent_core::Access;

/// A session's checkpoints, as the runtime drives them.
pub trait Checkpointer: Send + Sync + fmt::Debug {
    /// Begins a user prompt and returns its number (from 1, counting the session's earlier
    /// prompts); `transcript_offset` is the transcript's length before the prompt was written,
    /// where a fork after the previous turn cuts it.
    fn begin_turn(&self, transcript_offset: u64, prompt: &str) -> Result<u32, CheckpointFailed>;

    /// Continues in another session's folder (after `/clear`, or a fork the front end switched
    /// to).
    fn switch(&self, session_dir: &Path) -> Result<(), CheckpointFailed>;

    /// Before `call` runs: keeps what it may change. `None` when it can change nothing; otherwise
    /// the executor closes the returned call once the call has ended, however it ended.
    fn before_call(&self, call: &CallIntent<'_>) -> Option<Box<dyn PendingCall>>;
}

/// A call a [`Checkpointer`] is keeping the "before" of.
pub trait PendingCall: Send {
    /// The call has ended (answered, failed, timed out or cancelled): records what it changed.
    fn ended(self: Box<Self>);
}

/// What a call is about to touch, as the executor knows it before the call runs.
#[derive(Debug, Clone, Copy)]
pub struct CallIntent<'a> {
    /// What the call declared it reads, writes and runs.
    pub access: &'a [Access],
    /// Whether its tool starts processes (they may write where no [`Access`] says).
    pub runs_processes: bool,
    /// Whether the policy found every program of its command read-only, so no scan is needed.
    pub judged_read_only: bool,
}

/// A checkpoint that could not be kept or switched: the store's own error, for the front end to
/// report. The prompt or call goes on without it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckpointFailed(Box<dyn StdError + Send + Sync>);

impl CheckpointFailed {
    /// Wraps the store's error `err`.
    pub fn new(err: impl StdError + Send + Sync + 'static) -> Self {
        Self(Box::new(err))
    }
}
