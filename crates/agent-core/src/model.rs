//! The `ModelClient` trait: how the agent loop talks to any model, through streamed events.

use std::{pin::Pin, time::Duration};

use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::{
    item::{Item, Message, Reasoning, ToolCall},
    output::OutputSchema,
    tool::{BoxFuture, ToolSpec},
};

/// How the model may use tools in a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// Continuation of a stored server-side response (Responses API `previous_response_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuation {
    /// The id of the response to continue.
    pub previous_response_id: String,
    /// How many leading items of the transcript the server already holds through that response;
    /// only the items after them are sent.
    pub items_known: usize,
}

/// One request to a model.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The system prompt. Sent on every request (the Responses API does not carry it over).
    pub instructions: &'a str,
    /// The whole transcript so far.
    pub items: &'a [Item],
    /// The tools the model may call, in a stable order.
    pub tools: &'a [ToolSpec],
    /// How the model may use the tools.
    pub tool_choice: &'a ToolChoice,
    /// Whether the model may call several tools in one turn.
    pub parallel_tool_calls: bool,
    /// Continue a stored response instead of sending the whole transcript, when the client can.
    pub continuation: Option<&'a Continuation>,
    /// A schema the final answer must match (structured output), when one is asked for.
    pub output_schema: Option<&'a OutputSchema>,
}

/// Token counts of one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which served from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// Of which reasoning.
    pub reasoning_tokens: u64,
}

/// Why a response ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer or its tool calls.
    Completed,
    /// The output hit the token limit.
    MaxTokens,
    /// The provider's content filter stopped it.
    ContentFilter,
    /// Anything else the provider reported, verbatim.
    Other(String),
}

/// What a model streams back. Deltas are for display; the complete items (`Message`, `ToolCall`,
/// `Reasoning`) are what the loop appends to the transcript, in the order they arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A piece of visible reasoning text.
    ReasoningDelta(String),
    /// A complete assistant message.
    Message(Message),
    /// A complete tool call.
    ToolCall(ToolCall),
    /// A complete reasoning item.
    Reasoning(Reasoning),
    /// Token usage of the response.
    Usage(Usage),
    /// The response ended; always the last event of a successful stream.
    Completed {
        /// The provider's response id, usable as a [`Continuation`].
        response_id: Option<String>,
        /// The model the server says answered (the response's `model`), which may name a
        /// dated version of the one requested (`gpt-4o` answered by `gpt-4o-2024-08-06`).
        model: Option<String>,
        /// Why it ended.
        stop: StopReason,
    },
}

/// Where a model client sends its requests, as telemetry reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEndpoint {
    /// The provider as the GenAI conventions name it (`openai` for any OpenAI-compatible server).
    pub provider: &'static str,
    /// The model id sent in requests.
    pub model: String,
    /// The server's host name or address.
    pub server_address: Option<String>,
    /// The server's port.
    pub server_port: Option<u16>,
}

/// A stream of model events; it ends with [`ModelEvent::Completed`] or an error.
pub type ModelStream<'a> = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send + 'a>>;

/// The class of a model failure, which decides whether the harness may retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// The key is missing, wrong or lacks access (401/403). Never retried.
    Auth,
    /// Too many requests (429); wait `retry_after` when given.
    RateLimit {
        /// How long the server asked to wait.
        retry_after: Option<Duration>,
    },
    /// The request is larger than the model's context window.
    ContextTooLong,
    /// The model does not exist on this server.
    ModelNotFound,
    /// The server failed (5xx).
    Server,
    /// The server answered something that is not a valid response.
    BadResponse,
    /// The connection failed or broke.
    Network,
    /// The request was refused for another reason (4xx).
    InvalidRequest,
    /// The caller cancelled the request.
    Cancelled,
}

/// A failed model request. The message never contains the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    /// The class of failure.
    pub kind: ModelErrorKind,
    /// What went wrong, for the user.
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The provider's request id, for support tickets.
    pub request_id: Option<String>,
}

impl ModelError {
    /// A new error without status or request id.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), status: None, request_id: None }
    }

    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ModelErrorKind::RateLimit { .. } | ModelErrorKind::Server | ModelErrorKind::Network
        )
    }
}

/// A model the agent loop can talk to. Implementations own the wire format, transport, retries and
/// provider quirks; the loop only sees these events.
///
/// Implementors guarantee that a successful stream ends with exactly one
/// [`ModelEvent::Completed`], that every [`ModelEvent::ToolCall`] carries the provider's `call_id`
/// unchanged, and that a stream which breaks after output began yields an error rather than being
/// replayed silently.
pub trait ModelClient: Send + Sync {
    /// A short name for logs and transcripts, such as `chat:gpt-4.1`.
    fn name(&self) -> &str;

    /// Whether [`ModelRequest::continuation`] is honoured; when false the loop always sends the
    /// whole transcript.
    fn supports_continuation(&self) -> bool {
        false
    }

    /// Where requests go, for telemetry (the GenAI conventions' `gen_ai.provider.name`,
    /// `gen_ai.request.model`, `server.address` and `server.port`); `None` when unknown.
    fn endpoint(&self) -> Option<ModelEndpoint> {
        None
    }

    /// Sends one request and streams the response.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>>;
}
