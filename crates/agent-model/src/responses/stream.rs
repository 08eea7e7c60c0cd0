//! Responses API event accumulation: SSE events (or a whole response) into model events.

use std::collections::{HashSet, VecDeque};

use agent_core::{
    CallShape, Message, ModelError, ModelErrorKind, ModelEvent, Reasoning, StopReason, ToolCall,
    Usage,
};
use serde_json::json;

use super::{
    native,
    wire::{OutputItem, ResponseBody, StreamEvent},
};
use crate::{
    error::{ServerError, from_server_error},
    events::Accumulator,
};

/// A function or custom tool call being assembled from `function_call_arguments.delta` or
/// `custom_tool_call_input.delta` events.
#[derive(Debug, Default)]
struct PartialCall {
    output_index: Option<u64>,
    item_id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: String,
    shape: CallShape,
    emitted: bool,
}

/// A finished call item's fields, before what its deltas assembled fills the gaps.
struct Whole {
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    text: Option<String>,
    shape: CallShape,
}

#[derive(Debug, Default)]
pub(crate) struct ResponsesAccumulator {
    response_id: Option<String>,
    model: Option<String>,
    calls: Vec<PartialCall>,
    /// Keys of the output items already emitted (item id, else call id, else `#index`).
    emitted: HashSet<String>,
    /// Streamed text not yet covered by an emitted message, for servers that never send
    /// `output_item.done` nor the output in `response.completed`.
    pending_text: String,
    complete: bool,
}

impl ResponsesAccumulator {
    /// All events of a non-streamed response.
    pub(crate) fn whole(response: ResponseBody) -> Result<VecDeque<ModelEvent>, ModelError> {
        let mut accumulator = Self::default();
        let mut out = VecDeque::new();
        // A whole response has no deltas; queue them too so that a renderer that only shows
        // deltas sees the same text as with streaming.
        for item in &response.output {
            match item {
                OutputItem::Message { content, .. } => {
                    let text = join_text(content);
                    if !text.is_empty() {
                        out.push_back(ModelEvent::TextDelta(text));
                    }
                }
                OutputItem::Reasoning { content, summary, .. } => {
                    let text = join_text(if content.is_empty() { summary } else { content });
                    if !text.is_empty() {
                        out.push_back(ModelEvent::ReasoningDelta(text));
                    }
                }
                OutputItem::FunctionCall { .. }
                | OutputItem::CustomToolCall { .. }
                | OutputItem::ApplyPatchCall { .. }
                | OutputItem::ShellCall { .. }
                | OutputItem::Other => {}
            }
        }
        let status = response.status.clone();
        accumulator.terminal(status.as_deref().unwrap_or("completed"), response, &mut out)?;
        Ok(out)
    }

    fn call_position(&self, item_id: Option<&str>, output_index: Option<u64>) -> Option<usize> {
        item_id
            .and_then(|id| self.calls.iter().position(|call| call.item_id.as_deref() == Some(id)))
            .or_else(|| {
                output_index.and_then(|index| {
                    self.calls.iter().position(|call| call.output_index == Some(index))
                })
            })
    }

    fn call_entry(
        &mut self,
        item_id: Option<String>,
        output_index: Option<u64>,
    ) -> &mut PartialCall {
        let position = match self.call_position(item_id.as_deref(), output_index) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall { output_index, item_id, ..PartialCall::default() });
                self.calls.len() - 1
            }
        };
        &mut self.calls[position]
    }

    /// Emits a finished output item once.
    fn emit(
        &mut self,
        item: OutputItem,
        output_index: Option<u64>,
        out: &mut VecDeque<ModelEvent>,
    ) {
        let key = match &item {
            OutputItem::Message { id, .. } | OutputItem::Reasoning { id, .. } => id.clone(),
            OutputItem::FunctionCall { id, call_id, .. }
            | OutputItem::CustomToolCall { id, call_id, .. }
            | OutputItem::ApplyPatchCall { id, call_id, .. }
            | OutputItem::ShellCall { id, call_id, .. } => id.clone().or_else(|| call_id.clone()),
            OutputItem::Other => None,
        }
        .or_else(|| output_index.map(|index| format!("#{index}")));
        if let Some(key) = key
            && !self.emitted.insert(key)
        {
            return;
        }
        match item {
            OutputItem::Message { content, .. } => {
                let text = join_text(&content);
                self.pending_text.clear();
                if !text.is_empty() {
                    out.push_back(ModelEvent::Message(Message::assistant(text)));
                }
            }
            OutputItem::FunctionCall { id, call_id, name, arguments } => {
                let call = Whole { id, call_id, name, text: arguments, shape: CallShape::Function };
                self.finish_call(call, output_index, out);
            }
            OutputItem::CustomToolCall { id, call_id, name, input } => {
                let call = Whole { id, call_id, name, text: input, shape: CallShape::Custom };
                self.finish_call(call, output_index, out);
            }
            OutputItem::ApplyPatchCall { id, call_id, operation } => {
                let text = native::patch_text(&operation.unwrap_or_default());
                let call = Whole {
                    id,
                    call_id,
                    name: Some(native::APPLY_PATCH.to_owned()),
                    text: Some(text),
                    shape: CallShape::ApplyPatch,
                };
                self.finish_call(call, output_index, out);
            }
            OutputItem::ShellCall { id, call_id, action } => {
                let call = Whole {
                    id,
                    call_id,
                    name: Some(native::SHELL.to_owned()),
                    text: Some(action.unwrap_or_default().arguments()),
                    shape: CallShape::Shell,
                };
                self.finish_call(call, output_index, out);
            }
            OutputItem::Reasoning { id, summary, encrypted_content, content } => {
                let text = join_text(&content);
                out.push_back(ModelEvent::Reasoning(Reasoning {
                    id,
                    summary: summary.into_iter().filter_map(|part| part.text).collect(),
                    encrypted_content,
                    text: (!text.is_empty()).then_some(text),
                }));
            }
            OutputItem::Other => {}
        }
    }

    /// Emits a finished call, completed from what its deltas assembled where the item lacks it.
    fn finish_call(
        &mut self,
        call: Whole,
        output_index: Option<u64>,
        out: &mut VecDeque<ModelEvent>,
    ) {
        let position = self.call_position(call.id.as_deref(), output_index);
        let partial = position.map(|position| &mut self.calls[position]);
        let (partial_call_id, partial_name, partial_text) = match partial {
            Some(partial) => {
                partial.emitted = true;
                (
                    partial.call_id.take(),
                    partial.name.take(),
                    std::mem::take(&mut partial.arguments),
                )
            }
            None => (None, None, String::new()),
        };
        let arguments = call.text.filter(|text| !text.is_empty()).unwrap_or(partial_text);
        out.push_back(ModelEvent::ToolCall(ToolCall {
            // Invariant: the call is answered under its `call_id`; the item id is only kept to
            // replay the item, and stands in only if a server sent no call id.
            call_id: call
                .call_id
                .or(partial_call_id)
                .or_else(|| call.id.clone())
                .unwrap_or_default(),
            name: call.name.or(partial_name).unwrap_or_default(),
            arguments,
            item_id: call.id,
            shape: call.shape,
        }));
    }

    /// Handles `response.completed` / `.incomplete` / `.failed` (or a whole response).
    fn terminal(
        &mut self,
        status: &str,
        response: ResponseBody,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if status == "failed" || response.error.as_ref().is_some_and(|error| !error.is_null()) {
            let error = response.error.unwrap_or_default();
            let server = ServerError::from_value(&json!({ "error": error })).unwrap_or_default();
            return Err(from_server_error(&server));
        }
        if response.id.is_some() {
            self.response_id = response.id;
        }
        if let Some(model) = crate::events::served_model(response.model) {
            self.model = Some(model);
        }
        for (index, item) in response.output.into_iter().enumerate() {
            self.emit(item, Some(index as u64), out);
        }
        // Calls that were streamed but never reported as done still deserve to be answered.
        for call in self.calls.iter_mut().filter(|call| !call.emitted) {
            call.emitted = true;
            out.push_back(ModelEvent::ToolCall(ToolCall {
                call_id: call.call_id.take().or_else(|| call.item_id.clone()).unwrap_or_default(),
                name: call.name.take().unwrap_or_default(),
                arguments: std::mem::take(&mut call.arguments),
                item_id: call.item_id.take(),
                shape: call.shape,
            }));
        }
        if !self.pending_text.is_empty() {
            out.push_back(ModelEvent::Message(Message::assistant(std::mem::take(
                &mut self.pending_text,
            ))));
        }
        if let Some(usage) = response.usage {
            out.push_back(ModelEvent::Usage(Usage {
                input_tokens: usage.input_tokens,
                cached_input_tokens: usage.input_tokens_details.map_or(0, |d| d.cached_tokens),
                output_tokens: usage.output_tokens,
                reasoning_tokens: usage.output_tokens_details.map_or(0, |d| d.reasoning_tokens),
            }));
        }
        let reason = response.incomplete_details.and_then(|details| details.reason);
        let stop = match (status, reason.as_deref()) {
            ("incomplete", Some("max_output_tokens")) => StopReason::MaxTokens,
            ("incomplete", Some("content_filter")) => StopReason::ContentFilter,
            ("incomplete", other) => StopReason::Other(other.unwrap_or("incomplete").to_owned()),
            _ => StopReason::Completed,
        };
        out.push_back(ModelEvent::Completed {
            response_id: self.response_id.take(),
            model: self.model.take(),
            stop,
        });
        self.complete = true;
        Ok(())
    }
}

impl Accumulator for ResponsesAccumulator {
    type Chunk = StreamEvent;

    fn push(
        &mut self,
        event: StreamEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let Some(kind) = event.kind.as_deref() else {
            // Servers that fail mid-stream sometimes send a bare `{"error": …}` chunk.
            if let Some(error) = &event.error {
                let server =
                    ServerError::from_value(&json!({ "error": error })).unwrap_or_default();
                return Err(from_server_error(&server));
            }
            return Ok(());
        };
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(response) = event.response {
                    if let Some(id) = response.id {
                        self.response_id = Some(id);
                    }
                    if let Some(model) = crate::events::served_model(response.model) {
                        self.model = Some(model);
                    }
                }
            }
            "response.output_item.added" => {
                let (id, call_id, name, text, shape) = match event.item {
                    Some(OutputItem::FunctionCall { id, call_id, name, arguments }) => {
                        (id, call_id, name, arguments, CallShape::Function)
                    }
                    Some(OutputItem::CustomToolCall { id, call_id, name, input }) => {
                        (id, call_id, name, input, CallShape::Custom)
                    }
                    _ => return Ok(()),
                };
                let call = self.call_entry(id, event.output_index);
                call.call_id = call_id.or(call.call_id.take());
                call.name = name.or(call.name.take());
                call.shape = shape;
                if let Some(text) = text {
                    call.arguments = text;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = event.delta.filter(|delta| !delta.is_empty()) {
                    self.pending_text.push_str(&delta);
                    out.push_back(ModelEvent::TextDelta(delta));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = event.delta.filter(|delta| !delta.is_empty()) {
                    out.push_back(ModelEvent::ReasoningDelta(delta));
                }
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let call = self.call_entry(event.item_id, event.output_index);
                call.arguments.push_str(event.delta.as_deref().unwrap_or(""));
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let call = self.call_entry(event.item_id, event.output_index);
                if let Some(text) = event.arguments.or(event.input) {
                    call.arguments = text;
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.emit(item, event.output_index, out);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let status = kind.trim_start_matches("response.");
                return self.terminal(status, event.response.unwrap_or_default(), out);
            }
            "error" => {
                let message = event.message.unwrap_or_else(|| "unknown error".to_owned());
                return Err(from_server_error(&ServerError { message, code: event.code }));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.complete {
            return Ok(());
        }
        Err(ModelError::new(
            ModelErrorKind::BadResponse,
            "the response stream ended without response.completed (the stream was cut short)",
        ))
    }

    fn is_complete(&self) -> bool {
        self.complete
    }
}

fn join_text(parts: &[super::wire::Part]) -> String {
    parts.iter().filter_map(|part| part.text.as_deref().or(part.refusal.as_deref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Feeds the events and returns what came out, or the error's message.
    #[track_caller]
    fn check(events: Vec<Value>, expect: Result<Vec<ModelEvent>, &str>) {
        let mut accumulator = ResponsesAccumulator::default();
        let mut out = VecDeque::new();
        let mut result = Ok(());
        for event in events {
            let event: StreamEvent = serde_json::from_value(event).unwrap();
            result = result.and_then(|()| accumulator.push(event, &mut out));
        }
        let result = result.and_then(|()| accumulator.finish(&mut out));
        match (result, expect) {
            (Ok(()), Ok(expect)) => assert_eq!(Vec::from(out), expect),
            (Err(error), Err(message)) => assert_eq!(error.message, message),
            (got, expect) => panic!("got {got:?} and {out:?}, expected {expect:?}"),
        }
    }

    fn completed(stop: StopReason) -> ModelEvent {
        ModelEvent::Completed { response_id: Some("resp_1".into()), model: None, stop }
    }

    fn read_call(arguments: &str) -> ModelEvent {
        ModelEvent::ToolCall(ToolCall {
            call_id: "call_1".into(),
            name: "read_file".into(),
            arguments: arguments.into(),
            item_id: Some("fc_1".into()),
            shape: CallShape::Function,
        })
    }

    #[test]
    fn unknown_events_are_ignored() {
        check(
            vec![
                json!({"type": "keepalive"}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "x_1", "status": "completed"}}),
                json!({"type": "response.brand_new_event", "whatever": [1, 2]}),
                json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}}),
            ],
            Ok(vec![completed(StopReason::Completed)]),
        );
    }

    #[test]
    fn calls_only_streamed_are_still_emitted_with_their_call_id() {
        check(
            vec![
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": ""}}),
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"path\":"}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "\"a\"}"}),
                json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}),
            ],
            Ok(vec![read_call(r#"{"path":"a"}"#), completed(StopReason::Completed)]),
        );
    }

    #[test]
    fn items_missing_from_done_events_come_from_completed_once() {
        let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": "{}"});
        check(
            vec![
                json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
                json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [call, {"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}}),
            ],
            Ok(vec![
                read_call("{}"),
                ModelEvent::Message(Message::assistant("hi")),
                completed(StopReason::Completed),
            ]),
        );
    }

    #[test]
    fn incomplete_is_a_stop_and_failed_is_an_error() {
        check(
            vec![
                json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
            ],
            Ok(vec![completed(StopReason::MaxTokens)]),
        );
        check(
            vec![
                json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
            ],
            Err("the server reported an error: boom"),
        );
        check(
            vec![
                json!({"type": "error", "code": "context_length_exceeded", "message": "too long"}),
            ],
            Err("the server reported an error: too long"),
        );
    }

    #[test]
    fn a_stream_without_a_terminal_event_fails() {
        check(
            vec![json!({"type": "response.output_text.delta", "delta": "hi"})],
            Err("the response stream ended without response.completed (the stream was cut short)"),
        );
    }
}
