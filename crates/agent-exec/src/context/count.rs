//! Token accounting of a request: the fixed part (instructions and tool schemas) counted once per
//! run, each transcript item counted once when it is appended, and the server's reported usage
//! taken when it says more than the count.

use agent_core::{Item, TokenCounter, ToolSpec, Usage};

/// Per-item framing the wire adds (role, ids, JSON keys): a few tokens per item, so the count
/// errs on the high side.
const ITEM_OVERHEAD: usize = 6;
/// The same for a tool's schema entry (`type`, `function`, `strict`).
const TOOL_OVERHEAD: usize = 10;

/// The tokens of the instructions and of the tool schemas.
pub(crate) fn fixed(counter: &dyn TokenCounter, instructions: &str, tools: &[ToolSpec]) -> (usize, usize) {
    let tools = tools
        .iter()
        .map(|spec| {
            counter.count(&spec.name)
                + counter.count(&spec.description)
                + counter.count(&spec.parameters.to_string())
                + TOOL_OVERHEAD
        })
        .sum();
    (counter.count(instructions) + ITEM_OVERHEAD, tools)
}

/// The tokens one transcript item takes.
pub(crate) fn item(counter: &dyn TokenCounter, item: &Item) -> usize {
    ITEM_OVERHEAD
        + match item {
            Item::Message(message) => counter.count(&message.content),
            Item::ToolCall(call) => counter.count(&call.name) + counter.count(&call.arguments),
            Item::ToolOutput(output) => counter.count(&output.output),
            Item::Reasoning(reasoning) => {
                reasoning.summary.iter().map(|part| counter.count(part)).sum::<usize>()
                    + reasoning.text.as_deref().map_or(0, |text| counter.count(text))
                    // Encrypted reasoning is opaque; its length over four is a safe bound.
                    + reasoning.encrypted_content.as_deref().map_or(0, |text| text.len() / 4)
            }
        }
}

/// The transcript's token counts, kept in step with the items so each is counted once.
#[derive(Debug, Default)]
pub(crate) struct ItemCounts {
    counts: Vec<usize>,
    /// What the server reported for the last request (input plus output tokens) and how many
    /// items that request and its response covered.
    reported: Option<(usize, u64)>,
}

impl ItemCounts {
    /// The tokens of `items`, counting the ones not seen yet. Items are only ever appended or
    /// cut from the end between calls, except by a compaction, which calls [`Self::reset`].
    pub(crate) fn transcript(&mut self, counter: &dyn TokenCounter, items: &[Item]) -> usize {
        self.counts.truncate(items.len());
        for item_ in &items[self.counts.len()..] {
            self.counts.push(item(counter, item_));
        }
        let counted: usize = self.counts.iter().sum();
        match self.reported {
            // The server's count covers the prefix it saw; the items since are counted here.
            Some((known, tokens)) if known <= items.len() => {
                let since: usize = self.counts[known..].iter().sum();
                counted.max(usize::try_from(tokens).unwrap_or(usize::MAX) + since)
            }
            _ => counted,
        }
    }

    /// Records a response's usage: the request and the response together held this many tokens
    /// of transcript (the fixed part excluded by the caller).
    pub(crate) fn observe(&mut self, items_len: usize, usage: &Usage, fixed: usize) {
        let total = usage.input_tokens + usage.output_tokens;
        self.reported = Some((items_len, total.saturating_sub(fixed as u64)));
    }

    /// Forgets everything after the transcript was rewritten.
    pub(crate) fn reset(&mut self) {
        self.counts.clear();
        self.reported = None;
    }
}
