//! Token estimates for what every request carries (instructions and tool schemas), and the
//! context windows of known models, so a front end can show what tools cost and warn early.
//!
//! These are estimates, not a tokenizer: an exact count needs the model's own vocabulary, and
//! the maintained BPE crates (tiktoken-rs and the like) embed megabytes of vocabulary and a regex
//! engine for one family of models only. The estimate is one token per four characters, the
//! usual rule of thumb for English and JSON with BPE vocabularies. Measured against SmolLM2's
//! tokenizer (llama-cpp-python's `/extras/tokenize`) on the compact Chat schemas of the ten
//! built-in tools: 13,992 characters are 3,576 tokens (3.9 characters per token); per tool the
//! estimate is within 6 % (see `docs/models.md`).

use agent_core::ToolSpec;

use crate::chat_tools_json;

/// Characters per token.
const CHARS_PER_TOKEN: usize = 4;

/// An estimate of the tokens `text` takes.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN)
}

/// An estimate of the tokens one tool's schema costs in every request (its Chat Completions
/// `tools` entry, compact JSON).
pub fn tool_tokens(spec: &ToolSpec) -> usize {
    estimate_tokens(&chat_tools_json(std::slice::from_ref(spec)).to_string())
}

/// An estimate of what every request carries before the conversation: the instructions and the
/// tool schemas.
pub fn fixed_tokens(instructions: &str, specs: &[ToolSpec]) -> usize {
    estimate_tokens(instructions) + specs.iter().map(tool_tokens).sum::<usize>()
}

/// The context window of a known model, by its name (a prefix match on the name without any
/// `provider/` part, case-insensitive). A local server may serve a model with a smaller window
/// than the model's own; a configured window should then take precedence.
pub fn context_window(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    // Longest prefixes first within a family, since the first match wins.
    const KNOWN: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-5", 400_000),
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
    fn four_characters_make_a_token() {
        check("", 0);
        check("hello world", 3);
        check(r#"{"type":"object"}"#, 5);
        check("大写", 1);
    }

    #[test]
    fn known_models_have_windows_and_unknown_ones_none() {
        assert_eq!(context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(context_window("HuggingFaceTB/SmolLM2-135M-Instruct"), Some(8_192));
        assert_eq!(context_window("smollm2-135m"), Some(8_192));
        assert_eq!(context_window("my-finetune"), None);
    }
}
