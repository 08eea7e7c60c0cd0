//! [`Conversation`]: what a conversation keeps between runs of the loop — the transcript, the
//! server-side continuation, and the [`Ledger`] of what compactions dropped.
//!
//! The loop extends it, compaction rewrites it, and transcripts store and restore it; it is the
//! state all three share, so it lives apart from each of them.

mod ledger;

use agent_core::{Continuation, Item};

pub use self::ledger::{CommandRecord, DroppedOutput, Ledger};

/// The state a conversation keeps between runs: the transcript and the server-side continuation.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// Every item so far, in order.
    pub items: Vec<Item>,
    /// The stored response to continue, when the model supports it.
    pub continuation: Option<Continuation>,
    /// What compactions dropped so far.
    pub ledger: Ledger,
}
