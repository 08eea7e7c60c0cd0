//! The Chat Completions adapter (`POST /chat/completions`), streamed or whole.

mod stream;
pub(crate) mod wire;

use std::sync::{Arc, atomic::Ordering};

use agent_core::{BoxFuture, ModelClient, ModelError, ModelRequest, ModelStream};
use async_openai::traits::RequestOptionsBuilder;

use self::{
    stream::{ChatAccumulator, Shared},
    wire::{ChatResponse, ReasoningField},
};
use crate::{config::ClientConfig, connection::Connection, error, events};

/// A [`ModelClient`] over the Chat Completions API, for OpenAI and every compatible server
/// (Ollama, vLLM, llama.cpp server, LM Studio, DeepSeek).
///
/// Tool calls become assistant `tool_calls`, tool outputs `role: "tool"` messages; the whole
/// transcript is sent on every request (the API keeps no state).
pub struct ChatClient {
    connection: Connection,
    name: String,
    shared: Arc<Shared>,
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
        }
    }

    async fn open(&self, request: ModelRequest<'_>) -> Result<ModelStream<'_>, ModelError> {
        let connection = &self.connection;
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
            connection.image_input,
        );
        tracing::debug!(model = %connection.model, messages = body.messages.len(), stream = connection.stream, "chat request");
        if !connection.stream {
            let response: ChatResponse =
                connection.client.chat().create_byot(&body).await.map_err(error::from_openai)?;
            return Ok(events::ready(ChatAccumulator::whole(self.shared.clone(), response)?));
        }
        let inner = connection
            .client
            .chat()
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .map_err(error::from_openai)?
            .create_stream_byot::<_, ChatResponse>(&body)
            .await
            .map_err(error::from_openai)?;
        Ok(events::pump(inner, ChatAccumulator::new(self.shared.clone()), connection))
    }
}

impl ModelClient for ChatClient {
    fn name(&self) -> &str {
        &self.name
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        Box::pin(self.connection.open_guarded(request, move |request| Box::pin(self.open(request))))
    }
}
