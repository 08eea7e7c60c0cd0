//! The Chat Completions adapter (`POST /chat/completions`), streamed or whole.

pub(crate) mod stream;
pub(crate) mod wire;

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use agent_core::{BoxFuture, ModelClient, ModelError, ModelRequest, ModelStream};

use self::{
    stream::{ChatAccumulator, Shared},
    wire::{ChatResponse, ReasoningField},
};
use crate::{config::ClientConfig, connection::Connection, events};

const PATH: &str = "/chat/completions";

/// A [`ModelClient`] over the Chat Completions API, for OpenAI and every compatible server
/// (Ollama, vLLM, llama.cpp server, LM Studio, DeepSeek).
///
/// Tool calls become assistant `tool_calls`, tool outputs `role: "tool"` messages; the whole
/// transcript is sent on every request (the API keeps no state).
pub struct ChatClient {
    connection: Connection,
    name: String,
    shared: Arc<Shared>,
    /// Cleared once the server refused custom tools: freeform tools go as functions from then.
    custom: AtomicBool,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ChatClient {
    /// A client for `config`. Fails only on an invalid configuration (base URL, key characters).
    pub fn new(config: &ClientConfig) -> Result<Self, ModelError> {
        Ok(Self::with_connection(Connection::new(config)?))
    }

    pub(crate) fn with_connection(connection: Connection) -> Self {
        Self {
            name: format!("chat:{}", connection.model),
            connection,
            shared: Arc::new(Shared::default()),
            custom: AtomicBool::new(true),
        }
    }

    /// Sends the request; a server that refuses custom tools gets it again with them as
    /// functions, and every later request too.
    async fn open<'a>(&'a self, request: ModelRequest<'a>) -> Result<ModelStream<'a>, ModelError> {
        let model = &self.connection.model;
        crate::custom::open_falling_back(&self.custom, model, request, |request| {
            self.open_once(request)
        })
        .await
    }

    async fn open_once<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> Result<ModelStream<'a>, ModelError> {
        let connection = &self.connection;
        let custom = self.custom.load(Ordering::Relaxed);
        let field = if self.shared.uses_reasoning_field.load(Ordering::Relaxed) {
            ReasoningField::Reasoning
        } else {
            ReasoningField::ReasoningContent
        };
        let body = wire::build(
            &connection.model,
            &request,
            connection.stream,
            field,
            custom,
            connection.image_input,
        );
        tracing::debug!(model = %connection.model, messages = body.messages.len(), stream = connection.stream, "chat request");
        if !connection.stream {
            let response: ChatResponse = connection.post_whole(PATH, &body).await?;
            return Ok(events::ready(ChatAccumulator::whole(self.shared.clone(), response)?));
        }
        let inner = connection.post_stream::<_, ChatResponse>(PATH, &body).await?;
        Ok(events::pump(inner, ChatAccumulator::new(self.shared.clone()), connection))
    }
}

impl ModelClient for ChatClient {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> Option<agent_core::ModelEndpoint> {
        Some(self.connection.endpoint.clone())
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        Box::pin(self.connection.open_guarded(request, move |request| Box::pin(self.open(request))))
    }
}
