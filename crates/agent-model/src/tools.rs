//! The `tools` array each API receives, built by the same code as real requests, for
//! `agent tools schema` and for snapshot tests of what a model is offered.

use agent_core::{ModelRequest, ToolChoice, ToolSpec};
use serde_json::Value;

use crate::{chat, responses};

/// The Chat Completions `tools` array: `{"type":"function","function":{…}}` entries.
pub fn chat_tools_json(specs: &[ToolSpec]) -> Value {
    let request = request(specs);
    let body = chat::wire::build(
        "",
        &request,
        false,
        chat::wire::ReasoningField::ReasoningContent,
        true,
        false,
    );
    tools_of(serde_json::to_value(body))
}

/// The Responses API `tools` array: flat `{"type":"function","name":…}` entries.
pub fn responses_tools_json(specs: &[ToolSpec]) -> Value {
    let request = request(specs);
    let mode = responses::wire::Mode::Stored { previous_response_id: None };
    let body = responses::wire::build("", &request, &[], mode, false, true, false);
    tools_of(serde_json::to_value(body))
}

fn request(specs: &[ToolSpec]) -> ModelRequest<'_> {
    ModelRequest {
        instructions: "",
        items: &[],
        tools: specs,
        tool_choice: &ToolChoice::Auto,
        parallel_tool_calls: true,
        continuation: None,
        output_schema: None,
    }
}

fn tools_of(body: Result<Value, serde_json::Error>) -> Value {
    match body {
        Ok(mut body) => body.get_mut("tools").map(Value::take).unwrap_or(Value::Array(Vec::new())),
        Err(_) => Value::Array(Vec::new()),
    }
}
