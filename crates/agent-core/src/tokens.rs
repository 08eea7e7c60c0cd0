//! Token counting as the agent loop sees it: a [`TokenCounter`] says how many tokens a text takes
//! for the model in use, so the loop can keep every request inside the model's context window.
//!
//! The counters themselves live where the model is known (agent-model has OpenAI's BPE
//! encodings and an estimate for other models); this crate only names the contract, and offers
//! [`CharEstimate`], the one counter that needs no vocabulary.

/// Counts the tokens of a text for one model's vocabulary.
pub trait TokenCounter: Send + Sync + std::fmt::Debug {
    /// How many tokens `text` takes. An estimate must err on the high side: the loop trusts it
    /// to keep requests under the window. It must never exceed `text.len()` (true of every
    /// byte-level BPE: a token covers at least one byte), so the loop can skip counting a
    /// request whose bytes are already under the threshold.
    fn count(&self, text: &str) -> usize;

    /// A short name for `/context` and the docs, such as `o200k_base` or `estimate`.
    fn name(&self) -> &str;
}

/// One token per four characters (rounded up): the usual rule of thumb for English and JSON
/// with the BPE vocabularies of current models, used when the model's vocabulary is unknown.
#[derive(Debug, Clone, Copy, Default)]
pub struct CharEstimate;

impl CharEstimate {
    /// Characters per token.
    pub const CHARS_PER_TOKEN: usize = 4;
}

impl TokenCounter for CharEstimate {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(Self::CHARS_PER_TOKEN)
    }

    fn name(&self) -> &str {
        "estimate"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_characters_make_a_token() {
        let check = |text: &str, expect| assert_eq!(CharEstimate.count(text), expect, "{text:?}");
        check("", 0);
        check("hello world", 3);
        check("大写", 1);
    }
}
