//! The async-openai client both adapters share, wired to our transport, timeouts and key handling.

use agent_core::{
    ApiKey, BoxFuture, Item, ModelError, ModelErrorKind, ModelRequest, ModelStream, Role,
    ToolChoice,
};
use async_openai::Client;

use crate::{
    config::{ClientConfig, WireConfig},
    empty_answer, error,
    transport::Transport,
};

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
    pub(crate) client: Client<WireConfig>,
    pub(crate) model: String,
    pub(crate) stream: bool,
    /// Whether tool-output images are sent ([`ClientConfig::image_input`]).
    pub(crate) image_input: bool,
    first_turn_tool_choice: Option<ToolChoice>,
    key: Option<ApiKey>,
}

impl Connection {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ModelError> {
        let wire = WireConfig::new(config)?;
        let http = http_client(config, wire.is_plain_http())?;
        let transport = Transport::new(http.clone(), config.retry.clone());
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
        let client = Client::build(http, wire).with_http_service(service);
        Ok(Self {
            client,
            model: config.model.clone(),
            stream: config.stream,
            image_input: config.image_input,
            first_turn_tool_choice: config.first_turn_tool_choice.clone(),
            key: config.api_key.clone(),
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
    let mut builder = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.read_timeout);
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
