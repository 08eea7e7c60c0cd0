//! The Responses API adapter (`POST /responses`): stored continuation or stateless replay.

pub(crate) mod native;
mod operation;
pub(crate) mod stream;
pub(crate) mod wire;

use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::{BoxFuture, ModelClient, ModelError, ModelErrorKind, ModelRequest, ModelStream};

use self::{
    stream::ResponsesAccumulator,
    wire::{Mode, ResponseBody, ResponsesRequest, StreamEvent},
};
use crate::{config::ClientConfig, connection::Connection, events};

const PATH: &str = "/responses";

/// A [`ModelClient`] over the Responses API.
///
/// By default responses are stored on the server and a [`agent_core::Continuation`] sends only the
/// new items with `previous_response_id` (instructions and tools are re-sent, since the API does
/// not carry them over). In stateless mode (`store: false`) the whole transcript is sent each time
/// with reasoning replayed through its `encrypted_content`. A server that rejects
/// `previous_response_id` switches the client to stateless mode for the rest of its life.
pub struct ResponsesClient {
    connection: Connection,
    name: String,
    stateless: AtomicBool,
    /// Cleared once the server refused custom tools: freeform tools go as functions from then.
    custom: AtomicBool,
}

impl std::fmt::Debug for ResponsesClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesClient")
            .field("name", &self.name)
            .field("stateless", &self.stateless.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ResponsesClient {
    /// A client that stores responses and continues them with `previous_response_id`.
    pub fn new(config: &ClientConfig) -> Result<Self, ModelError> {
        Ok(Self::with_connection(Connection::new(config)?))
    }

    pub(crate) fn with_connection(connection: Connection) -> Self {
        Self {
            name: format!("responses:{}", connection.model),
            connection,
            stateless: AtomicBool::new(false),
            custom: AtomicBool::new(true),
        }
    }

    /// A client that never stores responses (`store: false`) and replays the whole transcript,
    /// for zero-data-retention accounts and servers without stored responses.
    pub fn stateless(config: &ClientConfig) -> Result<Self, ModelError> {
        let client = Self::new(config)?;
        client.stateless.store(true, Ordering::Relaxed);
        Ok(client)
    }

    /// Whether the client runs stateless, by choice or after a server rejected continuation.
    pub fn is_stateless(&self) -> bool {
        self.stateless.load(Ordering::Relaxed)
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
        let custom = self.custom.load(Ordering::Relaxed);
        let continuation = request
            .continuation
            .filter(|continuation| continuation.items_known <= request.items.len());
        let Some(continuation) = continuation.filter(|_| !self.is_stateless()) else {
            let mode = if self.is_stateless() {
                Mode::Stateless
            } else {
                Mode::Stored { previous_response_id: None }
            };
            return self
                .send(wire::build(
                    &self.connection.model,
                    &request,
                    request.items,
                    mode,
                    self.connection.stream,
                    custom,
                    self.connection.image_input,
                ))
                .await;
        };
        let items = &request.items[continuation.items_known..];
        let mode = Mode::Stored { previous_response_id: Some(&continuation.previous_response_id) };
        let body = wire::build(
            &self.connection.model,
            &request,
            items,
            mode,
            self.connection.stream,
            custom,
            self.connection.image_input,
        );
        match self.send(body).await {
            Err(error) if rejects_continuation(&error) => {
                tracing::warn!(model = %self.connection.model, "server rejected previous_response_id; switching to stateless requests");
                self.stateless.store(true, Ordering::Relaxed);
                let body = wire::build(
                    &self.connection.model,
                    &request,
                    request.items,
                    Mode::Stateless,
                    self.connection.stream,
                    custom,
                    self.connection.image_input,
                );
                self.send(body).await
            }
            other => other,
        }
    }

    async fn send<'a>(&'a self, body: ResponsesRequest<'_>) -> Result<ModelStream<'a>, ModelError> {
        let connection = &self.connection;
        tracing::debug!(model = %connection.model, items = body.input.len(), continued = body.previous_response_id.is_some(), "responses request");
        if !connection.stream {
            let response: ResponseBody = connection.post_whole(PATH, &body).await?;
            return Ok(events::ready(ResponsesAccumulator::whole(response)?));
        }
        let inner = connection.post_stream::<_, StreamEvent>(PATH, &body).await?;
        Ok(events::pump(inner, ResponsesAccumulator::default(), connection))
    }
}

/// Whether a failed continued request failed because the server cannot continue a stored
/// response (unknown id, storage disabled, or the parameter unsupported).
fn rejects_continuation(error: &ModelError) -> bool {
    let message = error.message.to_lowercase();
    matches!(error.kind, ModelErrorKind::InvalidRequest | ModelErrorKind::ModelNotFound)
        && (message.contains("previous_response") || message.contains("previous response"))
}

impl ModelClient for ResponsesClient {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> Option<agent_core::ModelEndpoint> {
        Some(self.connection.endpoint.clone())
    }

    fn supports_continuation(&self) -> bool {
        !self.is_stateless()
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        Box::pin(self.connection.open_guarded(request, move |request| Box::pin(self.open(request))))
    }
}
