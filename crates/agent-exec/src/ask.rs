//! Questions the model puts to a person: what a front end is asked ([`Question`]), what it
//! answers ([`Reply`]), and the seam it answers through ([`Asker`]), injected like the
//! [`Approver`](crate::Approver).
//!
//! This crate names no tool: the tool that asks is registered by whoever builds the agent
//! (agent-tools' `ask_user`), which checks the bounds below before a question reaches a person
//! and again on the reply, so a front end can trust a [`Question`] and need not trust itself.

use agent_core::BoxFuture;
use serde::{Deserialize, Serialize};

/// The fewest choices a question offers.
pub const MIN_CHOICES: usize = 2;
/// The most choices a question offers.
pub const MAX_CHOICES: usize = 6;
/// The longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 500;
/// The longest choice label, in characters.
pub const MAX_LABEL_CHARS: usize = 60;
/// The longest choice description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// The longest free-text answer passed back to the model, in characters; a longer one is cut
/// and the model is told so.
pub const MAX_ANSWER_CHARS: usize = 2_000;

/// One choice the person may pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// A short name for the choice (at most [`MAX_LABEL_CHARS`]), unique within the question.
    pub label: String,
    /// What picking it means (at most [`MAX_DESCRIPTION_CHARS`]).
    pub description: String,
}

/// One question, as the model asked it and the tool checked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The `call_id` of the call that asks, so a front end can match a reply to its question.
    pub call_id: String,
    /// The question (at most [`MAX_QUESTION_CHARS`]).
    pub question: String,
    /// Between [`MIN_CHOICES`] and [`MAX_CHOICES`] choices.
    pub choices: Vec<Choice>,
    /// Whether several choices may be picked.
    pub multiple: bool,
    /// Whether the person may answer in words of their own instead of a choice.
    pub free_text: bool,
}

/// What a front end answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// The picked choices, as indices into [`Question::choices`] (one unless
    /// [`Question::multiple`]).
    Chosen {
        /// The indices, in the order picked.
        choices: Vec<usize>,
    },
    /// Words of the person's own (only when [`Question::free_text`]).
    Text {
        /// What they wrote.
        text: String,
    },
    /// The person saw the question and chose not to answer.
    Declined,
    /// No one can answer here (no person at hand, or a client that cannot show questions).
    Unavailable,
}

/// Puts a [`Question`] to a person.
///
/// Implementors may take as long as a person needs; the call's time limit and the turn's
/// cancellation still stop the wait. Object-safe: a tool holds an `Arc<dyn Asker>`.
pub trait Asker: Send + Sync {
    /// Asks `question` and waits for the answer.
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Reply>;
}
