//! The HTTP connection both adapters share: request building, our transport, the response's
//! deadlines and size caps, and key handling.

use std::sync::Arc;

use agent_core::{
    ApiKey, BoxFuture, Item, ModelError, ModelErrorKind, ModelRequest, ModelStream, Role,
    ToolChoice,
};
use async_openai::{config::Config as _, error::OpenAIError, middleware::HttpRequestFactory};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    body::{Body, WireStream},
    config::{ClientConfig, WireConfig},
    empty_answer, error,
    limits::{Deadlines, Missed, ResponseLimits},
    transport::Transport,
};

/// The HTTP service behind a connection, type-erased: it sends one request (with retries) and
/// returns the response whose body is still unread.
type Sender = Arc<
    dyn Fn(HttpRequestFactory) -> BoxFuture<'static, Result<reqwest::Response, OpenAIError>>
        + std::marker::Send
        + Sync,
>;

/// What async-openai's middleware accepts as the HTTP layer: our transport in production, a canned
/// service in benchmarks. Named once so the two constructors share the bound.
pub(crate) trait HttpService:
    tower::Service<
        async_openai::middleware::HttpRequestFactory,
        Response = reqwest::Response,
        Error = async_openai::error::OpenAIError,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> HttpService for S where
    S: tower::Service<
            async_openai::middleware::HttpRequestFactory,
            Response = reqwest::Response,
            Error = async_openai::error::OpenAIError,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// One configured HTTP client for one model.
pub(crate) struct Connection {
    send: Sender,
    http: reqwest::Client,
    wire: WireConfig,
    limits: ResponseLimits,
    pub(crate) model: String,
    pub(crate) stream: bool,
    /// Whether tool-output images are sent ([`ClientConfig::image_input`]).
    pub(crate) image_input: bool,
    first_turn_tool_choice: Option<ToolChoice>,
    key: Option<ApiKey>,
    /// Where requests go, for telemetry.
    pub(crate) endpoint: agent_core::ModelEndpoint,
}

impl Connection {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ModelError> {
        let wire = WireConfig::new(config)?;
        let http = http_client(config, wire.is_plain_http())?;
        let transport = Transport::new(http.clone(), config.retry.clone(), config.limits.clone());
        Self::with_service(config, http, wire, transport)
    }

    /// A connection whose requests go through `service` instead of the network (benchmarks).
    #[cfg(feature = "scripted-server")]
    pub(crate) fn canned<S>(config: &ClientConfig, service: S) -> Result<Self, ModelError>
    where
        S: HttpService,
    {
        let wire = WireConfig::new(config)?;
        install_crypto();
        Self::with_service(config, reqwest::Client::new(), wire, service)
    }

    fn with_service<S>(
        config: &ClientConfig,
        http: reqwest::Client,
        wire: WireConfig,
        service: S,
    ) -> Result<Self, ModelError>
    where
        S: HttpService,
    {
        let send: Sender = Arc::new(move |factory| {
            let mut service = service.clone();
            Box::pin(async move {
                std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
                service.call(factory).await
            })
        });
        Ok(Self {
            send,
            http,
            wire,
            limits: config.limits.clone(),
            model: config.model.clone(),
            stream: config.stream,
            image_input: config.image_input,
            first_turn_tool_choice: config.first_turn_tool_choice.clone(),
            key: config.api_key.clone(),
            endpoint: endpoint(config),
        })
    }

    /// The request as sent: with the configured first-turn tool choice when its transcript ends
    /// with a user message.
    pub(crate) fn shape<'a>(&'a self, mut request: ModelRequest<'a>) -> ModelRequest<'a> {
        let first_turn = matches!(request.items.last(), Some(Item::Message(message)) if message.role == Role::User);
        if let Some(choice) = self.first_turn_tool_choice.as_ref().filter(|_| first_turn) {
            request.tool_choice = choice;
        }
        request
    }

    /// Opens `request` with `open`, then guards the stream against an empty answer by opening
    /// the same request once more (see `empty_answer`). Errors are scrubbed of the key.
    pub(crate) async fn open_guarded<'a, F>(
        &'a self,
        request: ModelRequest<'a>,
        open: F,
    ) -> Result<ModelStream<'a>, ModelError>
    where
        F: Fn(ModelRequest<'a>) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>>
            + Send
            + Sync
            + 'a,
    {
        let request = self.shape(request);
        let first = open(request).await.map_err(|e| self.scrub(e))?;
        let resend: empty_answer::Resend<'a> = Box::new(move || {
            Box::pin(async move { open(request).await.map_err(|e| self.scrub(e)) })
        });
        Ok(empty_answer::guard(first, resend))
    }

    /// Sends `body` to `path` and reads the whole JSON answer, at most `max_body_bytes` of it.
    pub(crate) async fn post_whole<T, R>(&self, path: &str, body: &T) -> Result<R, ModelError>
    where
        T: Serialize,
        R: DeserializeOwned,
    {
        let answer = self.post(path, body, false).await?;
        let bytes = answer.whole(&self.limits).await?;
        serde_json::from_slice(&bytes).map_err(|parse| error::bad_json(&parse, &bytes))
    }

    /// Sends `body` to `path` asking for an event stream, and returns its payloads parsed as `R`,
    /// read as the caller pulls them.
    pub(crate) async fn post_stream<T, R>(
        &self,
        path: &str,
        body: &T,
    ) -> Result<WireStream<R>, ModelError>
    where
        T: Serialize,
        R: DeserializeOwned + std::marker::Send + 'static,
    {
        let answer = self.post(path, body, true).await?;
        Ok(answer.events(&self.limits))
    }

    /// Sends the request through the transport, under the total deadline, and returns the body
    /// of its successful answer, unread.
    async fn post<T: Serialize>(
        &self,
        path: &str,
        body: &T,
        sse: bool,
    ) -> Result<Body, ModelError> {
        let deadlines = Deadlines::start(tokio::time::Instant::now(), &self.limits);
        let json = serde_json::to_vec(body).map_err(|error| {
            ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("the request could not be serialised: {error}"),
            )
        })?;
        let json = bytes::Bytes::from(json);
        let (http, url) = (self.http.clone(), self.wire.url(path));
        let mut headers = self.wire.headers();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if sse {
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        }
        // Each retry builds the request again from the same parts.
        let factory = HttpRequestFactory::new(move || {
            let request = http.post(&url).headers(headers.clone()).body(json.clone()).build();
            async move { request.map_err(OpenAIError::Reqwest) }
        });
        let sent = (self.send)(factory);
        let response = match deadlines.total {
            Some(at) => tokio::time::timeout_at(at, sent)
                .await
                .map_err(|_elapsed| deadlines.error(Missed::Total))?,
            None => sent.await,
        };
        Ok(Body::new(response.map_err(error::from_openai)?, deadlines))
    }

    /// Removes the key from an error's message, in case a server echoed it.
    pub(crate) fn scrub(&self, error: ModelError) -> ModelError {
        error::scrub(error, self.key.as_ref().map(ApiKey::expose))
    }
}

/// The HTTP client of one configured server: its timeouts, and for plain http no trust store.
pub(crate) fn http_client(
    config: &ClientConfig,
    plain_http: bool,
) -> Result<reqwest::Client, ModelError> {
    install_crypto();
    // No read timeout here: the response's own deadlines (first byte, idle, total) are applied
    // around each read, where the error can name the one that passed.
    let mut builder = reqwest::Client::builder().connect_timeout(config.connect_timeout);
    if plain_http {
        // A local server over plain http needs no certificate: an empty trust store skips
        // loading the system's roots, about 6 ms of every start (`startup.first_request`).
        // A redirect to https would then fail to verify, which is the safe way to fail.
        builder = builder.tls_certs_only(std::iter::empty());
    }
    builder.build().map_err(|error| {
        ModelError::new(
            ModelErrorKind::InvalidRequest,
            format!("could not build the http client: {error}"),
        )
    })
}

/// reqwest is built without a default crypto provider so that only ring is compiled, and it
/// panics when a client is built with none installed; the process-wide default is installed
/// before any client is built, and a second install fails harmlessly.
fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The model and server of `config` as telemetry names them. The host is the base URL's, which
/// names no key.
fn endpoint(config: &ClientConfig) -> agent_core::ModelEndpoint {
    let url = reqwest::Url::parse(&config.base_url).ok();
    agent_core::ModelEndpoint {
        provider: "openai",
        model: config.model.clone(),
        server_address: url.as_ref().and_then(|url| url.host_str().map(str::to_owned)),
        server_port: url.as_ref().and_then(reqwest::Url::port_or_known_default),
    }
}
