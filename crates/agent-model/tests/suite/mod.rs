//! Shared helpers: clients pointed at a scripted server, requests, and event collection.

mod faults;
mod native;
mod requests;
mod round_trip;
mod tolerance;

use std::time::Duration;

use agent_core::{
    CallOutput, Effects, Item, Message, ModelClient, ModelError, ModelEvent, ModelRequest,
    Reasoning, ToolCall, ToolChoice, ToolSpec,
};
use agent_model::{
    ApiKey, ChatClient, ClientConfig, ResponsesClient, RetryPolicy,
    scripted::{Script, ScriptedServer, Turn},
};
use futures_util::StreamExt;
use serde_json::json;

/// A key that must never show up in an error.
pub(crate) const KEY: &str = "sk-test-0123456789";

/// Which adapter a test drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Responses,
}

pub(crate) const ALL: [(Api, bool); 4] =
    [(Api::Chat, true), (Api::Chat, false), (Api::Responses, true), (Api::Responses, false)];

pub(crate) fn config(server: &ScriptedServer, stream: bool) -> ClientConfig {
    let mut config = ClientConfig::new(server.url(), "gpt-test").with_api_key(ApiKey::new(KEY));
    config.stream = stream;
    config.limits.idle_timeout = Duration::from_secs(10);
    config.retry = RetryPolicy {
        max_retries: 3,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(2),
    };
    config
}

pub(crate) fn client(api: Api, config: &ClientConfig) -> Box<dyn ModelClient> {
    match api {
        Api::Chat => Box::new(ChatClient::new(config).unwrap()),
        Api::Responses => Box::new(ResponsesClient::new(config).unwrap()),
    }
}

pub(crate) async fn start(turns: impl IntoIterator<Item = Turn>) -> ScriptedServer {
    ScriptedServer::start(Script::new(turns)).await.unwrap()
}

pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "The file."}},
                "required": ["path"],
                "additionalProperties": false
            }),
            strict: true,
            aliases: Vec::new(),
            effects: Effects::READ_ONLY,
            rule_name: "Read".into(),
            text_input: None,
            shape: agent_core::ToolShape::Function,
        },
        ToolSpec {
            name: "shell".into(),
            description: "Runs a command.".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            strict: false,
            aliases: Vec::new(),
            effects: Effects::RUNS_PROCESSES,
            rule_name: "Bash".into(),
            text_input: None,
            shape: agent_core::ToolShape::Function,
        },
    ]
}

pub(crate) fn user(text: &str) -> Item {
    Item::Message(Message::user(text))
}

pub(crate) fn call(call_id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        call_id: call_id.into(),
        name: name.into(),
        arguments: arguments.into(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    }
}

pub(crate) fn output(call_id: &str, text: &str) -> Item {
    Item::ToolOutput(CallOutput {
        call_id: call_id.into(),
        output: text.into(),
        ok: true,
        error: None,
        images: Vec::new(),
    })
}

pub(crate) fn reasoning_text(text: &str) -> Reasoning {
    Reasoning { text: Some(text.into()), ..Reasoning::default() }
}

/// Sends one request with the standard tools and collects every event or the first error.
pub(crate) async fn run(
    client: &dyn ModelClient,
    items: &[Item],
    continuation: Option<&agent_core::Continuation>,
) -> Result<Vec<ModelEvent>, ModelError> {
    let tools = tools();
    let request = ModelRequest {
        instructions: "You are a careful coding agent.",
        items,
        tools: &tools,
        tool_choice: &ToolChoice::Auto,
        parallel_tool_calls: true,
        continuation,
        output_schema: None,
    };
    let mut stream = client.stream(request).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

/// The complete items and the stop of a run, without deltas, usage and ids that vary by API.
pub(crate) fn items(events: &[ModelEvent]) -> Vec<ModelEvent> {
    events
        .iter()
        .filter(|event| {
            matches!(
                event,
                ModelEvent::Message(_) | ModelEvent::ToolCall(_) | ModelEvent::Reasoning(_)
            )
        })
        .map(|event| match event {
            ModelEvent::ToolCall(call) => {
                ModelEvent::ToolCall(ToolCall { item_id: None, ..call.clone() })
            }
            ModelEvent::Reasoning(reasoning) => ModelEvent::Reasoning(Reasoning {
                text: reasoning.text.clone().or_else(|| reasoning.summary.first().cloned()),
                ..Reasoning::default()
            }),
            other => other.clone(),
        })
        .collect()
}

/// The concatenated text deltas.
pub(crate) fn text_deltas(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The error of a run that must fail, checked for secrets.
#[track_caller]
pub(crate) fn failure(result: Result<Vec<ModelEvent>, ModelError>) -> ModelError {
    let error = match result {
        Ok(events) => panic!("expected an error, got {events:?}"),
        Err(error) => error,
    };
    assert!(!format!("{error:?}").contains(KEY), "the key leaked: {error:?}");
    error
}
