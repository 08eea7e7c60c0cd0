//! [`ReplayClient`]: a recorded conversation played back as the model, so any run can be
//! reproduced offline and the tools regression-tested against it.
//!
//! The recording is split into assistant turns: each maximal run of assistant messages, tool calls
//! and reasoning items between a user message or tool output and the next. Every request gets the
//! next turn, whatever it contains; the tools really run again, so their outputs are fresh.

use std::sync::Mutex;

use agent_core::{
    BoxFuture, Item, ModelClient, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    ModelStream, Role, StopReason,
};

/// A model that answers each request with the next recorded assistant turn.
///
/// ```
/// use agent_core::{Item, Message};
/// use agent_model::ReplayClient;
///
/// let recorded = vec![
///     Item::Message(Message::user("hi")),
///     Item::Message(Message::assistant("hello")),
/// ];
/// let model = ReplayClient::new("greeting", recorded);
/// assert_eq!(model.turns(), 1);
/// ```
#[derive(Debug)]
pub struct ReplayClient {
    name: String,
    turns: Vec<Vec<Item>>,
    /// How many turns have been played.
    played: Mutex<usize>,
}

impl ReplayClient {
    /// Plays back the assistant turns of `items` (a transcript: user messages, assistant
    /// messages, tool calls, tool outputs, reasoning); `label` names the recording in its model
    /// name (`replay:<label>`) and in errors.
    pub fn new(label: &str, items: Vec<Item>) -> Self {
        Self {
            name: format!("replay:{label}"),
            turns: assistant_turns(items),
            played: Mutex::new(0),
        }
    }

    /// How many assistant turns the recording holds; a client with none cannot answer anything.
    pub fn turns(&self) -> usize {
        self.turns.len()
    }

    /// The next turn, or an error naming the recording once it is exhausted.
    fn next_turn(&self) -> Result<Vec<Item>, ModelError> {
        let mut played = self.played.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(turn) = self.turns.get(*played) else {
            return Err(ModelError::new(
                ModelErrorKind::BadResponse,
                format!(
                    "the recording {} is exhausted: all {} assistant turns were played",
                    self.name.trim_start_matches("replay:"),
                    self.turns.len()
                ),
            ));
        };
        *played += 1;
        Ok(turn.clone())
    }
}

impl ModelClient for ReplayClient {
    fn name(&self) -> &str {
        &self.name
    }

    fn stream<'a>(
        &'a self,
        _request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        let turn = self.next_turn();
        Box::pin(async move {
            let events = turn_events(turn?);
            let stream: ModelStream<'a> =
                Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        })
    }
}

/// Splits a transcript into the assistant turns between user messages and tool outputs.
fn assistant_turns(items: Vec<Item>) -> Vec<Vec<Item>> {
    let mut turns = Vec::new();
    let mut current = Vec::new();
    for item in items {
        let from_model = match &item {
            Item::Message(message) => message.role == Role::Assistant,
            Item::ToolCall(_) | Item::Reasoning(_) => true,
            Item::ToolOutput(_) => false,
        };
        if from_model {
            current.push(item);
        } else if !current.is_empty() {
            turns.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        turns.push(current);
    }
    turns
}

/// The events a streaming server would send for `turn`: text as one delta before its message.
fn turn_events(turn: Vec<Item>) -> Vec<ModelEvent> {
    let mut events = Vec::new();
    for item in turn {
        match item {
            Item::Message(message) => {
                events.push(ModelEvent::TextDelta(message.content.clone()));
                events.push(ModelEvent::Message(message));
            }
            Item::ToolCall(call) => events.push(ModelEvent::ToolCall(call)),
            Item::Reasoning(reasoning) => events.push(ModelEvent::Reasoning(reasoning)),
            Item::ToolOutput(_) => {}
        }
    }
    events.push(ModelEvent::Completed {
        response_id: None,
        model: None,
        stop: StopReason::Completed,
    });
    events
}

#[cfg(test)]
mod tests {
    use agent_core::{CallOutput, Message, ToolCall};

    use super::*;

    fn call(id: &str) -> Item {
        Item::ToolCall(ToolCall {
            call_id: id.to_owned(),
            name: "uppercase".to_owned(),
            arguments: "{}".to_owned(),
            item_id: None,
            shape: agent_core::CallShape::Function,
        })
    }

    fn output(id: &str) -> Item {
        Item::ToolOutput(CallOutput {
            call_id: id.to_owned(),
            output: "X".to_owned(),
            ok: true,
            error: None,
            images: Vec::new(),
        })
    }

    fn user(text: &str) -> Item {
        Item::Message(Message::user(text))
    }

    fn assistant(text: &str) -> Item {
        Item::Message(Message::assistant(text))
    }

    #[track_caller]
    fn check(items: Vec<Item>, expect: Vec<Vec<Item>>) {
        assert_eq!(assistant_turns(items), expect);
    }

    #[test]
    fn turns_are_split_at_user_messages_and_tool_outputs() {
        check(vec![user("a")], vec![]);
        check(vec![user("a"), assistant("b")], vec![vec![assistant("b")]]);
        check(
            vec![user("a"), call("1"), call("2"), output("1"), output("2"), assistant("b")],
            vec![vec![call("1"), call("2")], vec![assistant("b")]],
        );
        check(
            vec![user("a"), assistant("b"), user("c"), assistant("d"), call("3"), output("3")],
            vec![vec![assistant("b")], vec![assistant("d"), call("3")]],
        );
    }

    #[test]
    fn a_turn_ends_with_completed_and_streams_its_text() {
        let events = turn_events(vec![assistant("hi"), call("1")]);
        assert_eq!(events.len(), 4);
        assert_eq!(events[0], ModelEvent::TextDelta("hi".to_owned()));
        assert!(matches!(events[3], ModelEvent::Completed { response_id: None, .. }));
    }

    #[test]
    fn an_exhausted_recording_is_a_clear_error() {
        let client = ReplayClient::new("t.jsonl", vec![user("a"), assistant("only")]);
        assert_eq!(client.next_turn().unwrap(), vec![assistant("only")]);
        let err = client.next_turn().unwrap_err();
        assert!(err.message.contains("t.jsonl is exhausted"), "{}", err.message);
    }
}
