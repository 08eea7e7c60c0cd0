//! The script a [`super::ScriptedServer`] plays: one turn per request, each an answer or a fault.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The turns to play, in order; each request to either API consumes the next one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// The turns.
    pub turns: Vec<Turn>,
    /// Answers given, without consuming a turn, to every request whose body contains a text:
    /// for requests a test cannot place in the script in advance, such as the loop's compaction
    /// summaries. The first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub standing: Vec<Standing>,
    /// The context window `GET /v1/models` reports for every model, as vLLM's `max_model_len`;
    /// without one that path answers 404, like a server that reports nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// An answer to every request whose body contains `when_body_contains`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Standing {
    /// The text to look for in the raw request body.
    pub when_body_contains: String,
    /// The answer.
    pub turn: Turn,
}

impl Script {
    /// A script of these turns.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self { turns: turns.into_iter().collect(), standing: Vec::new(), context_window: None }
    }

    /// Adds a standing answer: `turn` answers every request whose body contains `text`.
    pub fn with_standing(mut self, text: impl Into<String>, turn: Turn) -> Self {
        self.standing.push(Standing { when_body_contains: text.into(), turn });
        self
    }

    /// Reports `tokens` as every model's context window on `GET /v1/models`.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Reads a script from its JSON form (see `docs/models.md`).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// One answer: reasoning, text and tool calls (rendered in the realistic order for the API the
/// request used), or a fault instead of (or in the middle of) it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Turn {
    /// Reasoning text: `reasoning_content` in Chat, a reasoning item (summary and
    /// `encrypted_content`) in Responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The assistant's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedCall>,
    /// A fault to inject.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Milliseconds to wait before answering.
    #[serde(skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Milliseconds to wait between two streamed events.
    #[serde(skip_serializing_if = "is_zero")]
    pub event_delay_ms: u64,
    /// Deviations from OpenAI's payloads, as compatible servers produce them.
    #[serde(skip_serializing_if = "Quirks::is_default")]
    pub quirks: Quirks,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Turn {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// An answer made of tool calls.
    pub fn tool_calls(calls: impl IntoIterator<Item = ScriptedCall>) -> Self {
        Self { tool_calls: calls.into_iter().collect(), ..Self::default() }
    }

    /// A fault instead of an answer.
    pub fn fault(fault: Fault) -> Self {
        Self { fault: Some(fault), ..Self::default() }
    }

    /// The same turn with reasoning before the rest.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// The same turn with these quirks.
    pub fn with_quirks(mut self, quirks: Quirks) -> Self {
        self.quirks = quirks;
        self
    }

    /// The same turn with a fault injected while it is streamed.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// The same turn answered after a delay.
    pub fn with_delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The call id (`call_…`).
    pub call_id: String,
    /// The tool name.
    pub name: String,
    /// The arguments: a JSON string is sent verbatim (even if it is not valid JSON), anything
    /// else is serialised. A custom call's input is the string; an `apply_patch_call`'s
    /// `operation` and a `shell_call`'s `action` are the object.
    pub arguments: Value,
    /// The call's item type; a function call by default.
    #[serde(default, skip_serializing_if = "CallKind::is_function")]
    pub kind: CallKind,
}

/// The item type a scripted call is sent as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A function call (both APIs).
    #[default]
    Function,
    /// A custom tool call: `custom_tool_call` (Responses), `type: "custom"` (Chat).
    Custom,
    /// A Responses `apply_patch_call` (Chat sends it as a function call).
    ApplyPatch,
    /// A Responses `shell_call` (Chat sends it as a function call).
    Shell,
}

impl CallKind {
    fn is_function(&self) -> bool {
        *self == CallKind::Function
    }
}

impl ScriptedCall {
    /// A call with structured arguments.
    pub fn new(call_id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self { call_id: call_id.into(), name: name.into(), arguments, kind: CallKind::Function }
    }

    /// A custom tool call whose raw input is `input`.
    pub fn custom(
        call_id: impl Into<String>,
        name: impl Into<String>,
        input: impl Into<String>,
    ) -> Self {
        let arguments = Value::String(input.into());
        Self { call_id: call_id.into(), name: name.into(), arguments, kind: CallKind::Custom }
    }

    /// An `apply_patch_call` with this file `operation` (`{"type": "update_file", "path": …,
    /// "diff": …}`).
    pub fn apply_patch(call_id: impl Into<String>, operation: Value) -> Self {
        let call_id = call_id.into();
        Self {
            call_id,
            name: "apply_patch".into(),
            arguments: operation,
            kind: CallKind::ApplyPatch,
        }
    }

    /// A `shell_call` with this `action` (`{"commands": […], "timeout_ms": …}`).
    pub fn shell(call_id: impl Into<String>, action: Value) -> Self {
        let call_id = call_id.into();
        Self { call_id, name: "shell".into(), arguments: action, kind: CallKind::Shell }
    }

    /// The argument text as sent on the wire.
    pub(crate) fn argument_text(&self) -> String {
        match &self.arguments {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

/// A failure to inject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Answer with this status, body and headers (such as `retry-after`).
    Status {
        /// The HTTP status.
        status: u16,
        /// The body, sent verbatim.
        #[serde(default)]
        body: String,
        /// The content type (default `application/json`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_type: Option<String>,
        /// Extra headers.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
    /// Reset the connection (TCP RST) without answering.
    Reset,
    /// Stream this many events of the turn, then reset the connection.
    ResetAfter {
        /// Events sent before the reset.
        events: usize,
    },
    /// Stream this many events of the turn, then end the body cleanly with no terminal event.
    Truncate {
        /// Events sent before the end.
        events: usize,
    },
    /// Stream this many events, then this raw chunk (such as `{"error":{…}}`), then end.
    Chunk {
        /// Events sent before the chunk.
        events: usize,
        /// The chunk, sent as one `data:` line.
        chunk: Value,
    },
    /// Send a body (or, streaming, an event) that is not valid JSON.
    MalformedJson,
    /// Answer a streaming request with the whole JSON response instead of SSE.
    NotSse,
}

/// Deviations from OpenAI's exact payloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quirks {
    /// Omit `id`, `object`, `created` and the tool calls' `id` and `type`.
    pub omit_ids: bool,
    /// Send tool-call arguments as a JSON object instead of a string (Ollama).
    pub arguments_as_object: bool,
    /// Use this `finish_reason` (Chat) instead of `stop` / `tool_calls`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Stream Chat tool-call fragments without `index` (old Ollama, Gemini).
    pub omit_tool_index: bool,
    /// Interleave the argument fragments of parallel calls.
    pub interleave_arguments: bool,
    /// Add an output item of an unknown type (Responses) or unknown fields (Chat).
    pub unknown_item: bool,
    /// Send Chat reasoning as `reasoning` (Ollama) instead of `reasoning_content`.
    pub reasoning_field: bool,
    /// Characters per streamed fragment (0 means 8).
    pub fragment_chars: usize,
    /// Name this model as the one that answered instead of the one requested, as OpenAI answers
    /// `gpt-4o` with `gpt-4o-2024-08-06`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_model: Option<String>,
}

impl Quirks {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check(text: &str, expect: Result<Script, &str>) {
        match (Script::from_json(text), expect) {
            (Ok(got), Ok(expect)) => assert_eq!(got, expect),
            (Err(got), Err(expect)) => assert!(got.to_string().contains(expect), "{got}"),
            (got, expect) => panic!("got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn documented_script_parses() {
        let text = r#"{"turns": [
          {"reasoning": "I should read the file.",
           "tool_calls": [{"call_id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
          {"fault": {"kind": "status", "status": 429, "body": "{}", "headers": {"retry-after": "1"}}},
          {"text": "It says hello.", "delay_ms": 50, "quirks": {"omit_ids": true, "fragment_chars": 4}},
          {"fault": {"kind": "reset_after", "events": 2}}
        ]}"#;
        let expect = Script::new([
            Turn::tool_calls([ScriptedCall::new("call_1", "read_file", json!({"path": "a.txt"}))])
                .with_reasoning("I should read the file."),
            Turn::fault(Fault::Status {
                status: 429,
                body: "{}".into(),
                content_type: None,
                headers: [("retry-after".to_owned(), "1".to_owned())].into(),
            }),
            Turn::text("It says hello.").with_delay_ms(50).with_quirks(Quirks {
                omit_ids: true,
                fragment_chars: 4,
                ..Quirks::default()
            }),
            Turn::fault(Fault::ResetAfter { events: 2 }),
        ]);
        check(text, Ok(expect));
    }

    #[test]
    fn typos_are_rejected() {
        check(r#"{"turns": [{"txt": "hi"}]}"#, Err("unknown field `txt`"));
        check(r#"{"turns": [{"fault": {"kind": "explode"}}]}"#, Err("unknown variant `explode`"));
    }

    #[test]
    fn script_round_trips_through_json() {
        let script = Script::new([Turn::text("a").with_fault(Fault::Truncate { events: 1 })]);
        let text = serde_json::to_string(&script).unwrap_or_default();
        check(&text, Ok(script));
    }
}
