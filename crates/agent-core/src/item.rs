//! Conversation items: the provider-neutral transcript that adapters map to and from wire formats.

use serde::{Deserialize, Serialize};

use crate::{CallShape, ToolErrorKind};

/// One entry of a conversation transcript.
///
/// The transcript is the single source of truth for a session: adapters build every request from it
/// and append every response to it, and sessions are saved as a list of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    /// A system, developer, user or assistant message.
    Message(Message),
    /// A tool call the model made.
    ToolCall(ToolCall),
    /// The output the harness returned for one tool call.
    ToolOutput(CallOutput),
    /// An opaque reasoning item, carried so that it can be sent back to the provider.
    Reasoning(Reasoning),
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the application (Chat Completions `system`).
    System,
    /// Instructions from the application on models that distinguish them (`developer`).
    Developer,
    /// The person using the agent.
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The role's wire name, shared by both OpenAI APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// A text message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }

    /// A message from the model.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self { role: Role::Assistant, content: content.into() }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }
}

/// A tool call exactly as the model made it.
///
/// The arguments stay the raw string the model produced: parsing them is the executor's job, and a
/// call whose arguments do not parse must still be answered under its `call_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id that pairs this call with its output (`tool_call_id` / `call_id` on the wire).
    pub call_id: String,
    /// The tool name the model asked for.
    pub name: String,
    /// The raw argument text.
    pub arguments: String,
    /// The provider's id of the item that carried the call (the Responses API `fc_…` id), which is
    /// distinct from `call_id` and only needed to replay the item verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// The shape the call came in, which says what `arguments` holds and how it is answered.
    #[serde(default, skip_serializing_if = "CallShape::is_function")]
    pub shape: CallShape,
}

impl ToolCall {
    /// A function call with JSON `arguments`.
    pub fn function(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            item_id: None,
            shape: CallShape::Function,
        }
    }
}

/// The harness's answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallOutput {
    /// The `call_id` of the call this answers.
    pub call_id: String,
    /// The text the model reads: the tool's output, or an error observation.
    pub output: String,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The stable error code when `ok` is false, serialized as its code (`"timeout"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolErrorKind>,
    /// Images the tool returned beside its text (an MCP tool's image results), for models that
    /// can see them. The text already names each one, so a text-only API loses nothing it
    /// could use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image a tool returned, as base64 data with its media type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The media type (`image/png`, `image/jpeg`, …).
    pub mime_type: String,
    /// The image bytes, base64-encoded (standard alphabet, padded).
    pub data: String,
}

impl Image {
    /// The image as a `data:` URL.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

/// A reasoning item. The harness never interprets it; it only carries it back to the provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The provider's item id (Responses API `rs_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Reasoning summary parts, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// Encrypted reasoning content for stateless continuation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Plain reasoning text from compatible servers (`reasoning_content` or `reasoning` fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check(item: Item, expect: serde_json::Value) {
        assert_eq!(serde_json::to_value(&item).unwrap(), expect);
        let back: Item = serde_json::from_value(expect).unwrap();
        assert_eq!(back, item);
    }

    #[test]
    fn message_round_trips() {
        check(
            Item::Message(Message::user("hi")),
            json!({"type": "message", "role": "user", "content": "hi"}),
        );
    }

    #[test]
    fn tool_call_round_trips_without_item_id() {
        check(
            Item::ToolCall(ToolCall {
                call_id: "call_1".into(),
                name: "uppercase".into(),
                arguments: "{\"text\":\"a\"}".into(),
                item_id: None,
                shape: CallShape::Function,
            }),
            json!({"type": "tool_call", "call_id": "call_1", "name": "uppercase", "arguments": "{\"text\":\"a\"}"}),
        );
    }

    #[test]
    fn a_custom_call_keeps_its_raw_input_and_shape() {
        check(
            Item::ToolCall(ToolCall {
                call_id: "call_1".into(),
                name: "apply_patch".into(),
                arguments: "*** Begin Patch\n*** End Patch".into(),
                item_id: Some("ctc_1".into()),
                shape: CallShape::Custom,
            }),
            json!({"type": "tool_call", "call_id": "call_1", "name": "apply_patch", "arguments": "*** Begin Patch\n*** End Patch", "item_id": "ctc_1", "shape": "custom"}),
        );
    }

    #[test]
    fn tool_output_round_trips_with_error_code() {
        check(
            Item::ToolOutput(CallOutput {
                call_id: "call_1".into(),
                output: "{\"ok\":false}".into(),
                ok: false,
                error: Some(ToolErrorKind::Timeout),
                images: Vec::new(),
            }),
            json!({"type": "tool_output", "call_id": "call_1", "output": "{\"ok\":false}", "ok": false, "error": "timeout"}),
        );
    }

    #[test]
    fn tool_output_round_trips_with_a_tool_specific_error_code() {
        check(
            Item::ToolOutput(CallOutput {
                call_id: "call_1".into(),
                output: "{\"ok\":false}".into(),
                ok: false,
                error: Some(ToolErrorKind::from_code("no_match")),
                images: Vec::new(),
            }),
            json!({"type": "tool_output", "call_id": "call_1", "output": "{\"ok\":false}", "ok": false, "error": "no_match"}),
        );
    }

    #[test]
    fn reasoning_round_trips_with_only_encrypted_content() {
        check(
            Item::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                encrypted_content: Some("gAAA".into()),
                ..Reasoning::default()
            }),
            json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA"}),
        );
    }
}
