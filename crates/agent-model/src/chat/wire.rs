//! Chat Completions wire types: the request we send, and lenient response and chunk types.

use agent_core::{
    CallShape, Item, ModelRequest, Role, TextFormat, ToolChoice, ToolShape, ToolSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use self::images::{Content, PendingImages};
use crate::{images::ImagePlan, lenient};

mod images;

/// `POST /chat/completions` body.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub(crate) model: &'a str,
    pub(crate) messages: Vec<RequestMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<RequestTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_format: Option<Value>,
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
}

#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub(crate) include_usage: bool,
}

/// One message. `content` is a string, `""` on an assistant message that only calls tools (a list
/// of parts only on the user message that carries tool-output images, see [`images`]).
///
/// OpenAI documents `null` there, and accepts `""` as well; llama-cpp-python 0.3.36 answers `null`
/// (and a missing key) with HTTP 500, since its request model and chat templates want a string.
/// `""` is the one shape every server we know accepts.
#[derive(Debug, Serialize)]
pub(crate) struct RequestMessage<'a> {
    role: &'static str,
    content: Content<'a>,
    /// Reasoning text replayed to servers that need it (DeepSeek rejects a tool-call turn without
    /// its `reasoning_content`); written under the field name the server itself used.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<RequestToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> RequestMessage<'a> {
    fn new(role: &'static str, content: &'a str) -> Self {
        Self {
            role,
            content: Content::Text(content),
            reasoning_content: None,
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A replayed call: a function's JSON arguments, or a custom tool's raw input (`id` first, as
/// the API documents it).
#[derive(Debug, Serialize)]
struct RequestToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<RequestFunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<RequestCustomCall<'a>>,
}

#[derive(Debug, Serialize)]
struct RequestFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct RequestCustomCall<'a> {
    name: &'a str,
    input: &'a str,
}

/// A tool as Chat Completions takes it: nested under `function` or `custom`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum RequestTool<'a> {
    Function { function: RequestFunction<'a> },
    Custom { custom: RequestCustom<'a> },
}

#[derive(Debug, Serialize)]
pub(crate) struct RequestCustom<'a> {
    name: &'a str,
    description: &'a str,
    format: ChatFormat<'a>,
}

/// A custom tool's `format`; Chat Completions nests the grammar one level deeper than Responses.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatFormat<'a> {
    Text,
    Grammar { grammar: ChatGrammar<'a> },
}

#[derive(Debug, Serialize)]
struct ChatGrammar<'a> {
    definition: &'a str,
    syntax: &'static str,
}

impl<'a> RequestTool<'a> {
    /// `tool` as sent: a freeform tool as a custom tool while `custom` holds, every other tool
    /// (built-ins included: Chat Completions has none) as its function.
    fn of(tool: &'a ToolSpec, custom: bool) -> Self {
        if let (ToolShape::Freeform, Some(input), true) = (tool.shape, &tool.text_input, custom) {
            let format = match &input.format {
                TextFormat::Text => ChatFormat::Text,
                TextFormat::Grammar(grammar) => ChatFormat::Grammar {
                    grammar: ChatGrammar {
                        definition: &grammar.definition,
                        syntax: crate::responses::wire::syntax(grammar.syntax),
                    },
                },
            };
            let custom = RequestCustom { name: &tool.name, description: &tool.description, format };
            return Self::Custom { custom };
        }
        Self::Function {
            function: RequestFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: tool.strict,
            },
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct RequestFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

/// Which field carries replayed reasoning text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReasoningField {
    /// `reasoning_content` (DeepSeek, vLLM, llama.cpp).
    ReasoningContent,
    /// `reasoning` (Ollama, OpenRouter).
    Reasoning,
}

/// Builds the request body from a transcript.
///
/// Invariant: consecutive tool calls (and the assistant text and reasoning right before them)
/// become one assistant message, so every `role: "tool"` message follows the assistant message
/// that holds its `tool_call_id`.
pub(crate) fn build<'a>(
    model: &'a str,
    request: &ModelRequest<'a>,
    stream: bool,
    reasoning_field: ReasoningField,
    custom: bool,
    image_input: bool,
) -> ChatRequest<'a> {
    let mut messages = Vec::with_capacity(request.items.len() + 1);
    let plan = ImagePlan::new(request.items, image_input);
    // Tool messages carry only text: their images follow the run of tool messages they belong to.
    let mut pending = PendingImages::default();
    if !request.instructions.is_empty() {
        messages.push(RequestMessage::new("system", request.instructions));
    }
    // Reasoning text waits for the assistant message it belongs to.
    let mut reasoning: Option<&'a str> = None;
    // Whether the last message is an assistant message that later tool calls may join.
    let mut open_assistant = false;
    for item in request.items {
        if !matches!(item, Item::ToolOutput(_)) {
            messages.extend(pending.flush());
        }
        match item {
            Item::Message(message) => {
                let mut wire = RequestMessage::new(message.role.as_str(), &message.content);
                open_assistant = message.role == Role::Assistant;
                if open_assistant {
                    set_reasoning(&mut wire, reasoning.take(), reasoning_field);
                }
                messages.push(wire);
            }
            Item::ToolCall(call) => {
                if !open_assistant {
                    let mut wire = RequestMessage::new("assistant", "");
                    set_reasoning(&mut wire, reasoning.take(), reasoning_field);
                    messages.push(wire);
                    open_assistant = true;
                }
                if let Some(last) = messages.last_mut() {
                    let id = &call.call_id;
                    last.tool_calls.push(if call.shape == CallShape::Custom {
                        RequestToolCall {
                            id,
                            r#type: "custom",
                            function: None,
                            custom: Some(RequestCustomCall {
                                name: &call.name,
                                input: &call.arguments,
                            }),
                        }
                    } else {
                        // A built-in's call (a transcript from the Responses API) has no Chat
                        // form; its function form keeps the turn valid.
                        RequestToolCall {
                            id,
                            r#type: "function",
                            function: Some(RequestFunctionCall {
                                name: &call.name,
                                arguments: crate::quirks::replay_arguments(&call.arguments),
                            }),
                            custom: None,
                        }
                    });
                }
            }
            Item::ToolOutput(output) => {
                let mut wire = RequestMessage::new("tool", &output.output);
                wire.tool_call_id = Some(&output.call_id);
                messages.push(wire);
                pending.add(output, plan.images(output));
                open_assistant = false;
            }
            Item::Reasoning(item) => {
                // Only plain reasoning text means anything to a Chat server; encrypted Responses
                // reasoning cannot be replayed here and is dropped.
                if let Some(text) = item.text.as_deref().filter(|text| !text.is_empty()) {
                    reasoning = Some(text);
                }
                open_assistant = false;
            }
        }
    }
    messages.extend(pending.flush());
    let has_tools = !request.tools.is_empty();
    let tools =
        has_tools.then(|| request.tools.iter().map(|tool| RequestTool::of(tool, custom)).collect());
    ChatRequest {
        model,
        messages,
        tools,
        tool_choice: has_tools.then(|| tool_choice(request.tool_choice, request.tools, custom)),
        parallel_tool_calls: has_tools.then_some(request.parallel_tool_calls),
        response_format: request.output_schema.map(|output| {
            json!({
                "type": "json_schema",
                "json_schema": {
                    "name": output.name(),
                    "schema": output.strict_schema(),
                    "strict": true,
                },
            })
        }),
        stream,
        stream_options: stream.then_some(StreamOptions { include_usage: true }),
    }
}

fn set_reasoning<'a>(wire: &mut RequestMessage<'a>, text: Option<&'a str>, field: ReasoningField) {
    match field {
        ReasoningField::ReasoningContent => wire.reasoning_content = text,
        ReasoningField::Reasoning => wire.reasoning = text,
    }
}

fn tool_choice(choice: &ToolChoice, tools: &[ToolSpec], custom: bool) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => {
            let tool = tools.iter().find(|tool| tool.name == *name);
            match tool.map(|tool| RequestTool::of(tool, custom)) {
                Some(RequestTool::Custom { .. }) => {
                    json!({"type": "custom", "custom": {"name": name}})
                }
                _ => json!({"type": "function", "function": {"name": name}}),
            }
        }
    }
}

/// A whole response (`choices[].message`) or one streamed chunk (`choices[].delta`). Every field
/// is optional: compatible servers omit `id`, `object`, `created`, `type` and `index` at will.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatResponse {
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) id: Option<String>,
    /// The model that answered, as the server names it.
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) model: Option<String>,
    #[serde(default, deserialize_with = "lenient::nullable")]
    pub(crate) choices: Vec<Choice>,
    #[serde(default)]
    pub(crate) usage: Option<ChatUsage>,
    /// An error object sent in place of a chunk (OpenAI, vLLM, proxies).
    #[serde(default)]
    pub(crate) error: Option<Value>,
    /// vLLM marks its error objects with `"object": "error"`.
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) object: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub(crate) message: Option<Delta>,
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    /// Any string: `stop`, `tool_calls`, `length`, `eos`, `""`, `insufficient_system_resource`…
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default, deserialize_with = "lenient::text")]
    pub(crate) content: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(crate) refusal: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub(crate) reasoning: Option<String>,
    #[serde(default, deserialize_with = "lenient::nullable")]
    pub(crate) tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) id: Option<String>,
    #[serde(rename = "type", default, deserialize_with = "lenient::string")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
    /// A custom tool call (`"type": "custom"`): its name and raw input.
    #[serde(default)]
    pub(crate) custom: Option<CustomDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CustomDelta {
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) input: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient::arguments")]
    pub(crate) arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatUsage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) prompt_tokens: u64,
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) completion_tokens: u64,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub(crate) completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) cached_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CompletionDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub(crate) reasoning_tokens: u64,
}
