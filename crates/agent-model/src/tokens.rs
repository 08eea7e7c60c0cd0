//! Token counts for what requests carry, and the context windows of known models, so the loop can
//! keep every request inside the window and a front end can show what tools cost.
//!
//! OpenAI's models are counted with `o200k_base` through tiktoken-rs: exactly for GPT-4o, GPT-4.1,
//! GPT-5 and the o-series, closely for the retired GPT-4 and GPT-3.5, whose `cl100k_base` is not
//! shipped (its vocabulary was 1.7 MB of the binary; see `docs/models.md`).
//! Every other model is counted with [`CharEstimate`] (four characters a token): its vocabulary
//! is not ours to know, and an OpenAI table costs about 40 MB of memory once built, too much to
//! pay for an estimate. The estimate's measured error is in `docs/models.md`; the loop also takes
//! a server's reported usage when it is higher. An encoding's tables are built on first use,
//! never at start-up. The vocabulary is shipped compactly (`vocabulary.rs`).

use std::sync::Arc;

use agent_core::{CharEstimate, TokenCounter, ToolSpec};

use crate::chat_tools_json;

/// An OpenAI BPE encoding the binary ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-5, o1, o3, o4; also what GPT-4 and GPT-3.5 are counted with.
    O200kBase,
}

impl Encoding {
    /// The encoding that counts `model` (its name without any `provider/` part), or `None` for a
    /// model that is not OpenAI's. GPT-4 and GPT-3.5 used `cl100k_base`; one vocabulary serves
    /// them too, within a few per cent on English and code, rather than 1.7 MB more in the binary.
    pub fn for_model(model: &str) -> Option<Self> {
        let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
        const OPENAI: &[&str] = &[
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "o1",
            "o3",
            "o4",
            "gpt-oss",
            "gpt-4",
            "gpt-3.5",
            "text-embedding-3",
            "text-embedding-ada",
        ];
        OPENAI.iter().any(|prefix| name.starts_with(prefix)).then_some(Self::O200kBase)
    }

    /// The tokens `text` takes in this encoding. Were the shipped table ever unreadable, the
    /// count falls back to the four-characters-a-token estimate rather than failing a request.
    fn count(self, text: &str) -> usize {
        let bpe = match self {
            Self::O200kBase => crate::vocabulary::o200k_base(),
        };
        bpe.map_or_else(|| CharEstimate.count(text), |bpe| bpe.encode_ordinary(text).len())
    }

    /// The encoding's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
        }
    }
}

/// A counter over one OpenAI encoding: exact for the models that use it.
#[derive(Debug, Clone, Copy)]
pub struct BpeCounter {
    encoding: Encoding,
}

impl BpeCounter {
    /// Counts with `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        Self { encoding }
    }
}

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        // Special-token text such as `<|endoftext|>` in a tool output is counted as ordinary
        // text, which is how the server sees it too.
        self.encoding.count(text)
    }

    fn name(&self) -> &str {
        self.encoding.name()
    }
}

/// The counter for `model`: its own encoding for OpenAI's models, four characters a token for
/// any other.
pub fn counter_for(model: &str) -> Arc<dyn TokenCounter> {
    match Encoding::for_model(model) {
        Some(encoding) => Arc::new(BpeCounter::new(encoding)),
        None => Arc::new(CharEstimate),
    }
}

/// The tokens `text` takes with `o200k_base`: exact for current OpenAI models, a close estimate
/// for other BPE models (see `docs/models.md`).
pub fn estimate_tokens(text: &str) -> usize {
    Encoding::O200kBase.count(text)
}

/// The tokens one tool's schema costs in every request (its Chat Completions `tools` entry,
/// compact JSON), counted as [`estimate_tokens`] does.
pub fn tool_tokens(spec: &ToolSpec) -> usize {
    estimate_tokens(&chat_tools_json(std::slice::from_ref(spec)).to_string())
}

/// What every request carries before the conversation: the instructions and the tool schemas.
pub fn fixed_tokens(instructions: &str, specs: &[ToolSpec]) -> usize {
    estimate_tokens(instructions) + specs.iter().map(tool_tokens).sum::<usize>()
}

/// The window assumed when neither the configuration, the table below nor the server names one:
/// small enough for the local models people run on a laptop, so compaction starts early rather
/// than the server refusing a request.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

/// The context window of a known model, by its name (a prefix match on the name without any
/// `provider/` part, case-insensitive). A local server may serve a model with a smaller window
/// than the model's own; a configured window should then take precedence.
pub fn context_window(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    // Longest prefixes first within a family, since the first match wins.
    const KNOWN: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("gpt-5", 400_000),
        ("gpt-oss", 131_072),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("deepseek-chat", 128_000),
        ("deepseek-reasoner", 128_000),
        ("smollm2", 8_192),
        ("llama3.1", 131_072),
        ("llama3.2", 131_072),
        ("qwen2.5-coder", 32_768),
        ("qwen3", 40_960),
    ];
    KNOWN.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, expect: usize) {
        assert_eq!(estimate_tokens(text), expect, "{text:?}");
    }

    #[test]
    fn o200k_counts_known_texts() {
        check("", 0);
        check("hello world", 2);
        check(r#"{"type":"object"}"#, 5);
    }

    #[test]
    fn models_get_their_own_encoding() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Some(Encoding::O200kBase));
        assert_eq!(Encoding::for_model("openai/gpt-5"), Some(Encoding::O200kBase));
        // The retired GPT-4 and GPT-3.5 are counted with the one vocabulary the binary ships.
        assert_eq!(Encoding::for_model("gpt-4-0613"), Some(Encoding::O200kBase));
        assert_eq!(Encoding::for_model("qwen3-8b"), None);
        assert_eq!(counter_for("gpt-4").name(), "o200k_base");
        assert_eq!(counter_for("qwen3-8b").name(), "estimate");
    }

    #[test]
    fn known_models_have_windows_and_unknown_ones_none() {
        assert_eq!(context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(context_window("gpt-4-0613"), Some(8_192));
        assert_eq!(context_window("HuggingFaceTB/SmolLM2-135M-Instruct"), Some(8_192));
        assert_eq!(context_window("smollm2-135m"), Some(8_192));
        assert_eq!(context_window("my-finetune"), None);
    }
}
