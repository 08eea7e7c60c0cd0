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
pub(crate) fn fixed(
    counter: &dyn TokenCounter,
    instructions: &str,
    tools: &[ToolSpec],
) -> (usize, usize) {
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

/// An upper bound of [`item`]'s count that needs no vocabulary: a byte-level BPE token covers at
/// least one byte, so no text has more tokens than bytes.
fn item_bound(item: &Item) -> usize {
    ITEM_OVERHEAD
        + match item {
            Item::Message(message) => message.content.len(),
            Item::ToolCall(call) => call.name.len() + call.arguments.len(),
            Item::ToolOutput(output) => output.output.len(),
            Item::Reasoning(reasoning) => {
                reasoning.summary.iter().map(String::len).sum::<usize>()
                    + reasoning.text.as_deref().map_or(0, str::len)
                    + reasoning.encrypted_content.as_deref().map_or(0, |text| text.len() / 4)
            }
        }
}

/// The size of the requests of one run, kept in step with the transcript so each item is counted
/// once.
///
/// Counting needs the encoding's tables, which take tens of milliseconds to build; a request
/// whose byte length (an upper bound of its tokens) is under the threshold needs no count at all,
/// so short sessions and the first request of every session never pay for them.
#[derive(Debug)]
pub(crate) struct RequestCount<'a> {
    counter: &'a dyn TokenCounter,
    instructions: &'a str,
    /// Owned, so the loop can offer new tools (MCP servers that became ready) mid-run.
    tools: Vec<ToolSpec>,
    fixed_bound: usize,
    fixed: Option<usize>,
    /// Per item: the byte bound, and the count once made.
    items: Vec<(usize, Option<usize>)>,
    /// What the server reported for the last request and its response (input plus output
    /// tokens, the fixed part included) and how many items they covered.
    reported: Option<(usize, usize)>,
}

impl<'a> RequestCount<'a> {
    pub(crate) fn new(
        counter: &'a dyn TokenCounter,
        instructions: &'a str,
        tools: Vec<ToolSpec>,
    ) -> Self {
        let mut count = Self {
            counter,
            instructions,
            tools: Vec::new(),
            fixed_bound: 0,
            fixed: None,
            items: Vec::new(),
            reported: None,
        };
        count.set_tools(tools);
        count
    }

    /// Offers `tools` from the next request on; the fixed part is counted again when needed.
    pub(crate) fn set_tools(&mut self, tools: Vec<ToolSpec>) {
        self.fixed_bound = self.instructions.len()
            + ITEM_OVERHEAD
            + tools
                .iter()
                .map(|spec| {
                    spec.name.len()
                        + spec.description.len()
                        + spec.parameters.to_string().len()
                        + TOOL_OVERHEAD
                })
                .sum::<usize>();
        self.tools = tools;
        self.fixed = None;
    }

    /// A bound of [`RequestCount::fixed`] that needs no counting (a token covers at least a
    /// byte).
    pub(crate) fn fixed_bound(&self) -> usize {
        self.fixed_bound
    }

    /// The tokens of the instructions and tool schemas, counted on first use.
    pub(crate) fn fixed(&mut self) -> usize {
        *self.fixed.get_or_insert_with(|| {
            let (instructions, tools) = fixed(self.counter, self.instructions, &self.tools);
            instructions + tools
        })
    }

    /// The tokens of a request carrying `items`. Under `threshold` by the byte bound (and by
    /// the server's last count), it returns a cheap estimate instead of counting: a quarter of
    /// the bytes, or the server's count plus the bytes since, whichever is larger.
    pub(crate) fn tokens(&mut self, items: &[Item], threshold: usize) -> usize {
        self.items.truncate(items.len());
        for item_ in &items[self.items.len()..] {
            self.items.push((item_bound(item_), None));
        }
        let reported = self.reported.filter(|(known, _)| *known <= items.len());
        let bound = self.fixed_bound + self.items.iter().map(|(bound, _)| bound).sum::<usize>();
        let reported_bound = reported.map(|(known, total)| {
            total + self.items[known..].iter().map(|(bound, _)| bound).sum::<usize>()
        });
        if bound <= threshold && reported_bound.is_none_or(|tokens| tokens <= threshold) {
            return (bound / 4).max(reported_bound.unwrap_or(0));
        }
        let fixed = self.fixed();
        for (index, (_, count)) in self.items.iter_mut().enumerate() {
            if count.is_none() {
                *count = Some(item(self.counter, &items[index]));
            }
        }
        let counts: Vec<usize> = self.items.iter().map(|(_, count)| count.unwrap_or(0)).collect();
        let counted = fixed + counts.iter().sum::<usize>();
        match reported {
            Some((known, total)) => counted.max(total + counts[known..].iter().sum::<usize>()),
            None => counted,
        }
    }

    /// Records a response's usage: the request and the response together held this many tokens,
    /// and `items_len` items.
    pub(crate) fn observe(&mut self, items_len: usize, usage: &Usage) {
        let total = usage.input_tokens + usage.output_tokens;
        self.reported = Some((items_len, usize::try_from(total).unwrap_or(usize::MAX)));
    }

    /// Forgets the transcript's counts after it was rewritten.
    pub(crate) fn reset(&mut self) {
        self.items.clear();
        self.reported = None;
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{CharEstimate, Message};

    use super::*;

    /// A counter that fails the test if it is asked.
    #[derive(Debug)]
    struct Forbidden;

    impl TokenCounter for Forbidden {
        fn count(&self, text: &str) -> usize {
            panic!("counted {} bytes under the threshold", text.len())
        }
        fn name(&self) -> &str {
            "forbidden"
        }
    }

    #[test]
    fn requests_under_the_threshold_by_their_bytes_are_not_counted() {
        let items = vec![Item::Message(Message::user("a".repeat(1000)))];
        let mut count = RequestCount::new(&Forbidden, "instructions", Vec::new());
        assert_eq!(count.tokens(&items, 2000), (12 + 6 + 1006) / 4);
    }

    #[test]
    fn requests_near_the_threshold_are_counted_and_the_server_wins_when_it_says_more() {
        let mut items = vec![Item::Message(Message::user("a".repeat(4000)))];
        let mut count = RequestCount::new(&CharEstimate, "", Vec::new());
        // 4000 characters at four a token, plus the framing of two items.
        assert_eq!(count.tokens(&items, 100), 1000 + 12);
        let usage = Usage { input_tokens: 5000, output_tokens: 10, ..Usage::default() };
        count.observe(1, &usage);
        items.push(Item::Message(Message::assistant("b".repeat(40))));
        assert_eq!(count.tokens(&items, 100), 5010 + 16);
        count.reset();
        assert_eq!(count.tokens(&items, 100), 1000 + 10 + 18);
    }
}
