//! Chat Completions chunk accumulation: text, reasoning and tool-call fragments into events.

use std::{
    collections::VecDeque,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use agent_core::{
    CallShape, Message, ModelError, ModelErrorKind, ModelEvent, Reasoning, StopReason, ToolCall,
    Usage,
};

use super::wire::{ChatResponse, Delta};
use crate::{
    error::{ServerError, from_server_error},
    events::Accumulator,
};

/// Per-client state the accumulator reports back into.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set once the server sent reasoning as `reasoning` rather than `reasoning_content`.
    pub(crate) uses_reasoning_field: AtomicBool,
    /// Numbers call ids made up for servers that send none.
    pub(crate) synthetic_ids: AtomicU64,
}

/// A tool call being assembled from fragments.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: Option<String>,
    name: String,
    arguments: String,
    custom: bool,
}

#[derive(Debug)]
pub(crate) struct ChatAccumulator {
    shared: Arc<Shared>,
    response_id: Option<String>,
    model: Option<String>,
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl ChatAccumulator {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            response_id: None,
            model: None,
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            finish_reason: None,
            usage: None,
        }
    }

    /// All events of a non-streamed response.
    pub(crate) fn whole(
        shared: Arc<Shared>,
        response: ChatResponse,
    ) -> Result<VecDeque<ModelEvent>, ModelError> {
        let mut accumulator = Self::new(shared);
        let mut out = VecDeque::new();
        accumulator.push(response, &mut out)?;
        accumulator.finish(&mut out)?;
        Ok(out)
    }

    fn apply(&mut self, delta: Delta, out: &mut VecDeque<ModelEvent>) {
        let reasoning = match (delta.reasoning_content, delta.reasoning) {
            (Some(text), _) => Some(text),
            (None, Some(text)) => {
                self.shared.uses_reasoning_field.store(true, Ordering::Relaxed);
                Some(text)
            }
            (None, None) => None,
        };
        if let Some(text) = reasoning.filter(|text| !text.is_empty()) {
            self.reasoning.push_str(&text);
            out.push_back(ModelEvent::ReasoningDelta(text));
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.text.push_str(&text);
                out.push_back(ModelEvent::TextDelta(text));
            }
        }
        for fragment in delta.tool_calls {
            let position = self.find_call(fragment.index, fragment.id.as_deref());
            let call = match position {
                Some(position) => &mut self.calls[position],
                None => {
                    self.calls
                        .push(PartialCall { index: fragment.index, ..PartialCall::default() });
                    let last = self.calls.len() - 1;
                    &mut self.calls[last]
                }
            };
            if call.id.is_none() {
                call.id = fragment.id.filter(|id| !id.is_empty());
            }
            let parts = match (fragment.function, fragment.custom) {
                (_, Some(custom)) => {
                    call.custom = true;
                    Some((custom.name, custom.input))
                }
                (Some(function), None) => Some((function.name, function.arguments)),
                (None, None) => None,
            };
            if fragment.kind.as_deref() == Some("custom") {
                call.custom = true;
            }
            if let Some((name, text)) = parts {
                // Some servers repeat the whole name in every fragment; it is only appended when
                // it differs, which keeps both styles right.
                if let Some(name) = name.filter(|name| *name != call.name) {
                    call.name.push_str(&name);
                }
                if let Some(text) = text {
                    call.arguments.push_str(&text);
                }
            }
        }
    }

    /// The call a fragment continues: by index; without an index, by id; with neither, the last
    /// call (servers that stream one call at a time and omit both after the first fragment).
    fn find_call(&self, index: Option<u32>, id: Option<&str>) -> Option<usize> {
        if let Some(index) = index {
            return self.calls.iter().position(|call| call.index == Some(index));
        }
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            return self.calls.iter().position(|call| call.id.as_deref() == Some(id));
        }
        self.calls.len().checked_sub(1)
    }
}

impl Accumulator for ChatAccumulator {
    type Chunk = ChatResponse;

    fn push(
        &mut self,
        chunk: ChatResponse,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(error) = &chunk.error {
            let server =
                ServerError::from_value(&serde_json::json!({ "error": error })).unwrap_or_default();
            return Err(from_server_error(&server));
        }
        if chunk.object.as_deref() == Some("error") {
            let message = chunk.message.unwrap_or_default();
            return Err(from_server_error(&ServerError { message, code: None }));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.id.filter(|id| !id.is_empty());
        }
        if self.model.is_none() {
            self.model = crate::events::served_model(chunk.model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                cached_input_tokens: usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
                output_tokens: usage.completion_tokens,
                reasoning_tokens: usage.completion_tokens_details.map_or(0, |d| d.reasoning_tokens),
            });
        }
        // Only the first choice is used: the adapter never asks for `n > 1`.
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(delta) = choice.delta.or(choice.message) {
                self.apply(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        let Some(reason) = self.finish_reason.take() else {
            return Err(ModelError::new(
                ModelErrorKind::BadResponse,
                "the response ended without a finish_reason (the stream was cut short)",
            ));
        };
        if !self.reasoning.is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            out.push_back(ModelEvent::Reasoning(Reasoning {
                text: Some(text),
                ..Reasoning::default()
            }));
        }
        if !self.text.is_empty() {
            out.push_back(ModelEvent::Message(Message::assistant(std::mem::take(&mut self.text))));
        }
        for call in self.calls.drain(..) {
            let call_id = match call.id {
                Some(id) => id,
                None => {
                    let n = self.shared.synthetic_ids.fetch_add(1, Ordering::Relaxed);
                    format!("call_synthetic_{n}")
                }
            };
            out.push_back(ModelEvent::ToolCall(ToolCall {
                call_id,
                name: call.name,
                arguments: call.arguments,
                item_id: None,
                shape: if call.custom { CallShape::Custom } else { CallShape::Function },
            }));
        }
        if let Some(usage) = self.usage.take() {
            out.push_back(ModelEvent::Usage(usage));
        }
        let stop = match reason.as_str() {
            // `eos` (end of sequence) and an empty string come from compatible servers and
            // proxies that mean a normal end.
            "stop" | "tool_calls" | "function_call" | "eos" | "" => StopReason::Completed,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::ContentFilter,
            other => StopReason::Other(other.to_owned()),
        };
        out.push_back(ModelEvent::Completed {
            response_id: self.response_id.take(),
            model: self.model.take(),
            stop,
        });
        Ok(())
    }

    fn is_complete(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Feeds chunks of `choices[0].delta` and returns the complete items.
    #[track_caller]
    fn check(deltas: Vec<Value>, expect: Vec<ModelEvent>) {
        let mut accumulator = ChatAccumulator::new(Arc::new(Shared::default()));
        let mut out = VecDeque::new();
        for delta in deltas {
            let chunk = json!({"choices": [{"delta": delta, "finish_reason": null}]});
            accumulator.push(serde_json::from_value(chunk).unwrap(), &mut out).unwrap();
        }
        let last = json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]});
        accumulator.push(serde_json::from_value(last).unwrap(), &mut out).unwrap();
        accumulator.finish(&mut out).unwrap();
        let items: Vec<_> = out
            .into_iter()
            .filter(|event| matches!(event, ModelEvent::ToolCall(_) | ModelEvent::Message(_)))
            .collect();
        assert_eq!(items, expect);
    }

    fn call(id: &str, name: &str, arguments: &str) -> ModelEvent {
        ModelEvent::ToolCall(ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            item_id: None,
            shape: agent_core::CallShape::Function,
        })
    }

    #[test]
    fn fragments_without_index_join_by_id() {
        check(
            vec![
                json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{\"x\""}}]}),
                json!({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
                json!({"tool_calls": [{"id": "a", "function": {"arguments": ":1}"}}]}),
            ],
            vec![call("a", "f", "{\"x\":1}"), call("b", "g", "{}")],
        );
    }

    #[test]
    fn a_repeated_name_is_not_doubled() {
        check(
            vec![
                json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": "{"}}]}),
                json!({"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": "}"}}]}),
            ],
            vec![call("a", "read_file", "{}")],
        );
    }

    #[test]
    fn error_chunks_fail_whatever_their_shape() {
        for chunk in [
            json!({"error": {"message": "overloaded", "type": "server_error"}}),
            json!({"object": "error", "message": "overloaded", "type": "InternalServerError", "code": 500}),
        ] {
            let mut accumulator = ChatAccumulator::new(Arc::new(Shared::default()));
            let error =
                accumulator.push(serde_json::from_value(chunk).unwrap(), &mut VecDeque::new());
            assert_eq!(
                error.map_err(|e| e.message),
                Err("the server reported an error: overloaded".to_owned())
            );
        }
    }
}
