//! Responses API wire types: the request we send, and lenient response and event types.

use agent_core::{BuiltinTool, Item, ModelRequest, ToolCall, ToolChoice, ToolShape, ToolSpec};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

pub(crate) use super::native::syntax;
use super::native::{self, NativeItem, RequestTool};
use crate::{images::ImagePlan, lenient};

/// `POST /responses` body.
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest<'a> {
    pub(crate) model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub(crate) instructions: &'a str,
    pub(crate) input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<RequestTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) previous_response_id: Option<&'a str>,
    pub(crate) store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) include: Vec<&'static str>,
    pub(crate) stream: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputItem<'a> {
    Message {
        role: &'static str,
        content: &'a str,
    },
    FunctionCall {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: OutputBody<'a>,
    },
    Reasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        summary: Vec<TextPart<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<TextPart<'a>>,
    },
    /// A call or output of a custom tool or a built-in, which carries its own `type`.
    #[serde(untagged)]
    Native(NativeItem<'a>),
}

/// A function call's output: its text, or, when the tool returned images, the text followed by
/// the images as input (the Responses API takes a list of `input_text` and `input_image` parts
/// as a `function_call_output`'s output).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum OutputBody<'a> {
    Text(&'a str),
    Parts(Vec<OutputPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputPart<'a> {
    InputText { text: &'a str },
    InputImage { image_url: String, detail: &'static str },
}

impl<'a> OutputBody<'a> {
    pub(crate) fn of(output: &'a agent_core::CallOutput, plan: &ImagePlan<'a>) -> Self {
        let images = plan.images(output);
        if images.is_empty() {
            return Self::Text(&output.output);
        }
        let text = std::iter::once(OutputPart::InputText { text: &output.output });
        let images = images
            .iter()
            .map(|image| OutputPart::InputImage { image_url: image.data_url(), detail: "auto" });
        Self::Parts(text.chain(images).collect())
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct TextPart<'a> {
    r#type: &'static str,
    text: &'a str,
}

/// Whether a request relies on server-side state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode<'a> {
    /// `store: true`, optionally continuing a stored response.
    Stored { previous_response_id: Option<&'a str> },
    /// `store: false`, the whole transcript with encrypted reasoning.
    Stateless,
}

/// Builds the request body from `items` (already cut to what the server does not hold).
pub(crate) fn build<'a>(
    model: &'a str,
    request: &ModelRequest<'a>,
    items: &'a [Item],
    mode: Mode<'a>,
    stream: bool,
    custom: bool,
    image_input: bool,
) -> ResponsesRequest<'a> {
    let stateless = mode == Mode::Stateless;
    // Outputs are answered in the item type of their call, which a continued request may no
    // longer send: the whole transcript says which calls were not functions.
    let natives = native::native_calls(request.items);
    let plan = ImagePlan::new(items, image_input);
    let input =
        items.iter().filter_map(|item| input_item(item, stateless, &natives, &plan)).collect();
    let has_tools = !request.tools.is_empty();
    let tools = has_tools
        .then(|| request.tools.iter().map(|tool| native::request_tool(tool, custom)).collect());
    let (previous_response_id, store, include) = match mode {
        Mode::Stored { previous_response_id } => (previous_response_id, true, Vec::new()),
        Mode::Stateless => (None, false, vec!["reasoning.encrypted_content"]),
    };
    ResponsesRequest {
        model,
        instructions: request.instructions,
        input,
        tools,
        tool_choice: has_tools.then(|| tool_choice(request.tool_choice, request.tools, custom)),
        parallel_tool_calls: has_tools.then_some(request.parallel_tool_calls),
        text: request.output_schema.map(|output| {
            json!({
                "format": {
                    "type": "json_schema",
                    "name": output.name(),
                    "schema": output.strict_schema(),
                    "strict": true,
                },
            })
        }),
        previous_response_id,
        store,
        include,
        stream,
    }
}

/// One transcript item as input. Item ids are only sent when the server stores items; without
/// storage OpenAI rejects ids it cannot look up, so a reasoning item is only replayable through
/// its `encrypted_content`, and one without it is dropped.
fn input_item<'a>(
    item: &'a Item,
    stateless: bool,
    natives: &[&ToolCall],
    plan: &ImagePlan<'a>,
) -> Option<InputItem<'a>> {
    Some(match item {
        Item::ToolCall(call) if !call.shape.is_function() => {
            InputItem::Native(native::call_item(call, stateless)?)
        }
        Item::ToolOutput(output)
            if let Some(call) = natives.iter().find(|call| call.call_id == output.call_id)
                && let Some(native) = native::output_item(output, call, plan) =>
        {
            InputItem::Native(native)
        }
        Item::Message(message) => {
            InputItem::Message { role: message.role.as_str(), content: &message.content }
        }
        Item::ToolCall(call) => InputItem::FunctionCall {
            id: if stateless { None } else { call.item_id.as_deref() },
            call_id: &call.call_id,
            name: &call.name,
            arguments: crate::quirks::replay_arguments(&call.arguments),
        },
        Item::ToolOutput(output) => InputItem::FunctionCallOutput {
            call_id: &output.call_id,
            output: OutputBody::of(output, plan),
        },
        Item::Reasoning(reasoning) => {
            let replayable = if stateless {
                reasoning.encrypted_content.is_some()
            } else {
                reasoning.id.is_some()
            };
            if !replayable {
                return None;
            }
            InputItem::Reasoning {
                id: if stateless { None } else { reasoning.id.as_deref() },
                summary: reasoning
                    .summary
                    .iter()
                    .map(|text| TextPart { r#type: "summary_text", text })
                    .collect(),
                encrypted_content: reasoning.encrypted_content.as_deref(),
                content: reasoning
                    .text
                    .iter()
                    .map(|text| TextPart { r#type: "reasoning_text", text })
                    .collect(),
            }
        }
    })
}

fn tool_choice(choice: &ToolChoice, tools: &[ToolSpec], custom: bool) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => {
            let shape = tools
                .iter()
                .find(|tool| tool.name == *name)
                .map(|tool| native::sent_shape(tool, custom));
            match shape {
                Some(ToolShape::Freeform) => json!({"type": "custom", "name": name}),
                Some(ToolShape::Builtin(BuiltinTool::ApplyPatch)) => json!({"type": "apply_patch"}),
                Some(ToolShape::Builtin(BuiltinTool::Shell)) => json!({"type": "shell"}),
                _ => json!({"type": "function", "name": name}),
            }
        }
    }
}

/// A response object (the whole answer, or the one inside `response.*` events).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseBody {
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) id: Option<String>,
    /// The model that answered, as the server names it.
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) model: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) status: Option<String>,
    #[serde(default, deserialize_with = "items")]
    pub(crate) output: Vec<OutputItem>,
    #[serde(default)]
    pub(crate) usage: Option<ResponsesUsage>,
    #[serde(default)]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) reason: Option<String>,
}

/// An output item. Types we do not use (web search calls, images, new item kinds) are kept as
/// `Other` instead of failing the whole response.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputItem {
    Message {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::nullable")]
        content: Vec<Part>,
    },
    FunctionCall {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        call_id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient::arguments")]
        arguments: Option<String>,
    },
    CustomToolCall {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        call_id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        input: Option<String>,
    },
    ApplyPatchCall {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        call_id: Option<String>,
        #[serde(default)]
        operation: Option<native::Operation>,
    },
    ShellCall {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::string")]
        call_id: Option<String>,
        #[serde(default)]
        action: Option<native::ShellAction>,
    },
    Reasoning {
        #[serde(default, deserialize_with = "lenient::string")]
        id: Option<String>,
        #[serde(default, deserialize_with = "lenient::nullable")]
        summary: Vec<Part>,
        #[serde(default, deserialize_with = "lenient::string")]
        encrypted_content: Option<String>,
        #[serde(default, deserialize_with = "lenient::nullable")]
        content: Vec<Part>,
    },
    #[serde(other)]
    Other,
}

/// A content or summary part; only its text matters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Part {
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) text: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) refusal: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponsesUsage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) input_tokens: u64,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) output_tokens: u64,
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct InputDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) cached_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) reasoning_tokens: u64,
}

/// One SSE event. The `type` decides which fields matter; unknown types are ignored.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamEvent {
    #[serde(rename = "type", default, deserialize_with = "lenient::string")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) output_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) item_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) delta: Option<String>,
    #[serde(default, deserialize_with = "lenient::arguments")]
    pub(crate) arguments: Option<String>,
    /// A custom tool call's whole input (`response.custom_tool_call_input.done`).
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) input: Option<String>,
    #[serde(default, deserialize_with = "item")]
    pub(crate) item: Option<OutputItem>,
    #[serde(default)]
    pub(crate) response: Option<ResponseBody>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) code: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// An output item; one without a `type` is kept as `Other` instead of failing the whole event.
/// A known type with broken fields still fails, so that a tool call is never dropped silently.
fn output_item<E: serde::de::Error>(value: Value) -> Result<OutputItem, E> {
    if value.get("type").is_none_or(Value::is_null) {
        return Ok(OutputItem::Other);
    }
    serde_json::from_value(value).map_err(E::custom)
}

fn item<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<OutputItem>, D::Error> {
    Option::<Value>::deserialize(deserializer)?
        .filter(|value| !value.is_null())
        .map(output_item)
        .transpose()
}

fn items<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<OutputItem>, D::Error> {
    Option::<Vec<Value>>::deserialize(deserializer)?
        .unwrap_or_default()
        .into_iter()
        .map(output_item)
        .collect()
}
