//! Repairs what a crash leaves in a conversation: calls without an output.
//!
//! A process killed while a tool ran leaves the call in the transcript with no output after it,
//! and a request carrying such a call is refused by strict servers ("tool_calls must be followed
//! by tool messages") — every later request of the session too. So on load each call that has no
//! output in its block (the calls, outputs, reasoning and assistant text of one model turn, up to
//! the next message of another role) gets an `interrupted` output at the end of the block.
//!
//! Only the outputs for calls with no output anywhere in the file are reported for the caller to
//! append: a transcript written before this repair existed may carry an output far from its call
//! (after a later prompt); that late output is dropped on load and the call answered in place,
//! the same way on every load, so nothing is appended twice.

use std::collections::HashSet;

use agent_core::{CallOutput, Item, Role, ToolErrorKind};

/// The error code of an output made for a call the session ended during.
pub(crate) const INTERRUPTED: ToolErrorKind = ToolErrorKind::other("interrupted");

/// What the model reads for a call the session ended during.
const INTERRUPTED_TEXT: &str = "the session ended while this call ran (the agent was stopped or \
                                crashed), so its result is unknown; check its effect before \
                                running it again";

/// The `interrupted` output for `call_id`.
fn interrupted(call_id: &str) -> CallOutput {
    CallOutput {
        call_id: call_id.to_owned(),
        output: INTERRUPTED_TEXT.to_owned(),
        ok: false,
        error: Some(INTERRUPTED),
        images: Vec::new(),
    }
}

/// `items` with an `interrupted` output for every call left without one, and the outputs made for
/// calls that have none anywhere in `items` (those the caller persists).
pub(crate) fn answer_interrupted(items: Vec<Item>) -> (Vec<Item>, Vec<CallOutput>) {
    let answered: HashSet<String> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolOutput(output) => Some(output.call_id.clone()),
            _ => None,
        })
        .collect();
    let mut repaired = Vec::with_capacity(items.len());
    let mut added = Vec::new();
    // Calls of the current block still waiting for their output, in order.
    let mut open: Vec<String> = Vec::new();
    // Calls of earlier blocks: an output for one of them now is out of place.
    let mut closed: HashSet<String> = HashSet::new();
    let mut close = |open: &mut Vec<String>, repaired: &mut Vec<Item>, closed: &mut HashSet<_>| {
        for call_id in open.drain(..) {
            let output = interrupted(&call_id);
            if !answered.contains(&call_id) {
                added.push(output.clone());
            }
            repaired.push(Item::ToolOutput(output));
            closed.insert(call_id);
        }
    };
    for item in items {
        match &item {
            Item::ToolCall(call) => open.push(call.call_id.clone()),
            Item::ToolOutput(output) => {
                if let Some(at) = open.iter().position(|id| *id == output.call_id) {
                    let call_id = open.remove(at);
                    closed.insert(call_id);
                } else if closed.contains(&output.call_id) {
                    // Answered in place already: this copy would follow the wrong message.
                    continue;
                }
            }
            Item::Message(message) if message.role != Role::Assistant => {
                close(&mut open, &mut repaired, &mut closed);
            }
            Item::Message(_) | Item::Reasoning(_) => {}
        }
        repaired.push(item);
    }
    close(&mut open, &mut repaired, &mut closed);
    (repaired, added)
}

#[cfg(test)]
mod tests {
    use agent_core::Message;

    use super::*;

    fn call(id: &str) -> Item {
        // As a transcript line holds it, so the test does not depend on every field of the type.
        let line = serde_json::json!({"type": "tool_call", "call_id": id, "name": "bash", "arguments": "{}"});
        serde_json::from_value(line).unwrap()
    }

    fn output(id: &str) -> Item {
        Item::ToolOutput(CallOutput {
            call_id: id.to_owned(),
            output: "ok".to_owned(),
            ok: true,
            error: None,
            images: Vec::new(),
        })
    }

    fn user(text: &str) -> Item {
        Item::Message(Message::user(text))
    }

    /// Items as short names: `c1` a call, `o1` an output, `i1` an interrupted output, `u` a user
    /// message; and the ids of the outputs reported for appending.
    #[track_caller]
    fn check(items: Vec<Item>, expect: &[&str], added: &[&str]) {
        let (repaired, made) = answer_interrupted(items);
        let names: Vec<String> = repaired
            .iter()
            .map(|item| match item {
                Item::ToolCall(call) => format!("c{}", call.call_id),
                Item::ToolOutput(out) if out.error == Some(INTERRUPTED) => {
                    format!("i{}", out.call_id)
                }
                Item::ToolOutput(out) => format!("o{}", out.call_id),
                Item::Message(_) => "u".to_owned(),
                Item::Reasoning(_) => "r".to_owned(),
            })
            .collect();
        assert_eq!(names, expect);
        let made: Vec<&str> = made.iter().map(|out| out.call_id.as_str()).collect();
        assert_eq!(made, added);
    }

    #[test]
    fn calls_without_outputs_are_answered_interrupted() {
        // Killed during the last call of a batch: the first call had its output.
        check(
            vec![user("go"), call("1"), call("2"), output("1")],
            &["u", "c1", "c2", "o1", "i2"],
            &["2"],
        );
        // A whole transcript is left as it is.
        check(vec![user("go"), call("1"), output("1"), user("next")], &["u", "c1", "o1", "u"], &[]);
        // Resumed before this repair existed: the call is answered before the next prompt.
        check(vec![call("1"), user("continue")], &["c1", "i1", "u"], &["1"]);
    }

    #[test]
    fn an_appended_output_is_not_appended_again() {
        // The repair's own output, appended at the end of the file after a later prompt.
        let late = Item::ToolOutput(interrupted("1"));
        check(vec![call("1"), user("continue"), late], &["c1", "i1", "u"], &[]);
        // Appended right after the call, as a resume does: found in place.
        check(vec![call("1"), Item::ToolOutput(interrupted("1"))], &["c1", "i1"], &[]);
    }
}
