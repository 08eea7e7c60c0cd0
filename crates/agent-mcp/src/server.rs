//! One configured MCP server: starting it, its connection, and restarting it after a crash.
//!
//! A stdio server is a child process started through `agent_sandbox::process::spawn_service` (its
//! stderr goes to a log file in the session folder); an HTTP server is a streamable HTTP session.
//! Either way rmcp speaks the protocol. When the connection breaks, the next call starts the
//! server again, with backoff, and gives up after [`MAX_RESTARTS`] failures in a row.

use std::{
    collections::HashMap,
    ffi::OsString,
    io::{Read as _, Seek as _, SeekFrom},
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use agent_core::{ToolError, ToolErrorKind};
use agent_sandbox::process::{ProcessSpec, ServiceChild, spawn_service};
use futures_util::FutureExt as _;
use rmcp::{
    Peer, RoleClient,
    model::ServerNotification,
    service::{ClientInitializeError, ClientServiceExt as _, RunningService, Subscription},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use crate::{
    config::{ServerConfig, TransportKind},
    handler::{Handler, listen},
    incoming::{Dropped, DroppedTool, Relay},
    launch::{LaunchError, findable, open_log},
    protocol::Protocol,
    questions::Questions,
};

/// Restarts tried in a row before a server is given up for the session.
pub const MAX_RESTARTS: u32 = 3;

/// The observation code of a call whose server is not running.
pub const UNAVAILABLE: &str = "mcp_server_unavailable";

/// Where a server's files go and where it runs.
#[derive(Debug, Clone)]
pub struct ServerEnv {
    /// The default working directory of stdio servers.
    pub workspace: PathBuf,
    /// The session folder: server logs (`mcp/NAME.log`) and saved images go under it.
    pub session_dir: Option<PathBuf>,
}

impl ServerEnv {
    /// The file a server's stderr is appended to.
    pub fn log_path(&self, server: &str) -> Option<PathBuf> {
        self.session_dir.as_ref().map(|dir| dir.join("mcp").join(format!("{server}.log")))
    }
}

/// Why a server could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[error("mcp server `{server}` did not start: {reason}{}", tail.as_ref().map(|t| format!("\nits stderr ended with:\n{t}")).unwrap_or_default())]
pub struct StartError {
    /// The server's name.
    pub server: String,
    /// What went wrong.
    pub reason: String,
    /// The last lines the server wrote to stderr, when it wrote any.
    pub tail: Option<String>,
    /// It did not answer within its `startup_timeout_sec` (rather than failing outright).
    pub timed_out: bool,
}

/// A failed start, and whether the server answered `server/discover` with something that is
/// neither a discovery result nor an error.
struct Failed {
    error: StartError,
    odd_discover: bool,
}

impl From<StartError> for Failed {
    fn from(error: StartError) -> Self {
        Self { error, odd_discover: false }
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// `subscriptions/listen` for `tools/list_changed`, on servers that speak the 2026 protocol
    /// (older ones send the notification unasked, and [`Handler`] sees it).
    subscription: Option<Subscription>,
    // Dropped after the service: killing the group ends a server rmcp is still reading.
    _child: Option<ServiceChild>,
    _relay: Option<Relay>,
}

struct State {
    connection: Option<Connection>,
    /// Failed starts in a row since the last good one.
    failures: u32,
    /// No restart before this instant.
    not_before: Option<Instant>,
    last_error: Option<String>,
}

/// One server for the session, shared by all its tools.
pub struct Server {
    name: String,
    config: ServerConfig,
    env: ServerEnv,
    changed: Arc<AtomicBool>,
    /// Tools the relay left out of a listing (their definitions nest too deep).
    dropped: Dropped,
    questions: Arc<Questions>,
    /// The protocol version the last connection negotiated.
    revision: std::sync::Mutex<Option<String>>,
    state: tokio::sync::Mutex<State>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Server {
    /// A server not yet started.
    pub fn new(name: &str, config: ServerConfig, env: ServerEnv) -> Arc<Self> {
        Self::asking(name, config, env, Arc::default())
    }

    /// A server not yet started whose questions are answered through `questions`.
    pub fn asking(
        name: &str,
        config: ServerConfig,
        env: ServerEnv,
        questions: Arc<Questions>,
    ) -> Arc<Self> {
        Arc::new(Self {
            questions,
            revision: std::sync::Mutex::new(None),
            name: name.to_owned(),
            config,
            env,
            changed: Arc::new(AtomicBool::new(false)),
            dropped: Dropped::default(),
            state: tokio::sync::Mutex::new(State {
                connection: None,
                failures: 0,
                not_before: None,
                last_error: None,
            }),
        })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's table.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The protocol revision the server speaks (`2026-07-28`, `2025-11-25`, …), once connected.
    pub fn revision(&self) -> Option<String> {
        self.revision.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Who answers this server's questions.
    pub(crate) fn questions(&self) -> &Questions {
        &self.questions
    }

    /// Whether the server announced `tools/list_changed` since the last call of this method.
    pub async fn take_list_changed(&self) -> bool {
        // A server being restarted by a call holds the lock; its list is looked at next time.
        let Ok(mut state) = self.state.try_lock() else { return false };
        // Not connected yet (still starting) or no longer: its next listing comes with its start.
        if state.connection.is_none() {
            return false;
        }
        if let Some(subscription) =
            state.connection.as_mut().and_then(|connection| connection.subscription.as_mut())
        {
            // Only what already arrived: the loop must not wait here.
            while let Some(Ok(Some(notification))) = subscription.next().now_or_never() {
                if matches!(notification, ServerNotification::ToolListChangedNotification(_)) {
                    self.changed.store(true, Ordering::Release);
                }
            }
        }
        self.changed.swap(false, Ordering::AcqRel)
    }

    /// The tools left out of the listings since the last call (their definitions nest too deep).
    pub(crate) fn take_dropped(&self) -> Vec<DroppedTool> {
        std::mem::take(&mut *self.dropped.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The last start or call failure, for `agent mcp list`.
    pub async fn last_error(&self) -> Option<String> {
        self.state.lock().await.last_error.clone()
    }

    /// Starts the server (within its startup timeout) and lists its tools.
    pub async fn start(&self) -> Result<Vec<rmcp::model::Tool>, StartError> {
        // The state is not locked while the server starts: the loop asks every server for
        // changes before each request and must not wait for one that is still starting.
        let connected = self.connect().await;
        let peer = {
            let mut state = self.state.lock().await;
            match connected {
                Ok(connection) => {
                    let peer = connection.service.peer().clone();
                    state.connection = Some(connection);
                    state.failures = 0;
                    peer
                }
                Err(err) => {
                    state.last_error = Some(err.reason.clone());
                    return Err(err);
                }
            }
        };
        self.list_tools(&peer).await
    }

    /// Lists the server's tools again (after `tools/list_changed`).
    pub async fn list_tools(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<Vec<rmcp::model::Tool>, StartError> {
        match tokio::time::timeout(self.config.startup_timeout(), peer.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(err)) => Err(self.start_error(format!("tools/list failed: {err}"))),
            Err(_) => Err(self.timed_out(format!(
                "tools/list did not answer within {}s (startup_timeout_sec)",
                self.config.startup_timeout_sec
            ))),
        }
    }

    /// The connection's peer, starting the server again when it died (with backoff: 1 s, 2 s,
    /// 4 s; given up after [`MAX_RESTARTS`] failures in a row).
    pub async fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        let mut state = self.state.lock().await;
        if let Some(connection) = &state.connection {
            if !connection.service.is_closed() {
                return Ok(connection.service.peer().clone());
            }
            state.connection = None;
        }
        if state.failures >= MAX_RESTARTS {
            return Err(self.unavailable(&format!(
                "it failed to start {MAX_RESTARTS} times in a row and was given up for this \
                 session{}",
                last(&state.last_error)
            )));
        }
        if let Some(at) = state.not_before
            && Instant::now() < at
        {
            let wait = at.saturating_duration_since(Instant::now()).as_secs_f64().ceil();
            return Err(self.unavailable(&format!(
                "it stopped and is restarted on a call after {wait}s{}",
                last(&state.last_error)
            )));
        }
        match self.connect().await {
            Ok(connection) => {
                let peer = connection.service.peer().clone();
                state.connection = Some(connection);
                state.failures = 0;
                state.not_before = None;
                Ok(peer)
            }
            Err(err) => {
                state.failures += 1;
                state.not_before =
                    Some(Instant::now() + Duration::from_secs(1 << (state.failures - 1).min(5)));
                state.last_error = Some(err.to_string());
                Err(self.unavailable(&format!("restarting it failed: {err}")))
            }
        }
    }

    /// Notes that a call found the connection broken: the next call restarts the server.
    pub async fn connection_lost(&self, why: &str) {
        let mut state = self.state.lock().await;
        state.connection = None;
        state.last_error = Some(why.to_owned());
        // The first restart after a crash may happen at once; repeated failures back off.
        state.not_before = None;
    }

    /// An `mcp_server_unavailable` error for a call.
    pub fn unavailable(&self, why: &str) -> ToolError {
        ToolError::new(
            ToolErrorKind::other(UNAVAILABLE),
            format!(
                "the MCP server `{}` is not available: {why}. Use another tool or try again later.",
                self.name
            ),
        )
    }

    fn start_error(&self, reason: String) -> StartError {
        StartError { server: self.name.clone(), reason, tail: self.stderr_tail(), timed_out: false }
    }

    fn timed_out(&self, reason: String) -> StartError {
        StartError { timed_out: true, ..self.start_error(reason) }
    }

    /// The last few lines of the server's stderr log.
    pub fn stderr_tail(&self) -> Option<String> {
        const TAIL: u64 = 2048;
        let path = self.env.log_path(&self.name)?;
        let mut file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        (!tail.is_empty()).then_some(tail)
    }

    async fn connect(&self) -> Result<Connection, StartError> {
        match self.connect_as(self.config.protocol).await {
            // rmcp takes any answer to `server/discover` other than a discovery result or a
            // JSON-RPC error for a failure; the official SDKs take it for a 2025 server that
            // answers what it does not know with an empty result, and so do we: the handshake
            // follows, on a new connection (the probe's is spent).
            Err(Failed { odd_discover: true, .. }) if self.config.protocol == Protocol::Auto => {
                self.connect_as(Protocol::Legacy).await.map_err(|failed| failed.error)
            }
            connected => connected.map_err(|failed| failed.error),
        }
    }

    async fn connect_as(&self, protocol: Protocol) -> Result<Connection, Failed> {
        let kind =
            self.config.check(&self.name).map_err(|err| self.start_error(err.to_string()))?;
        let handler = Handler {
            server: self.name.clone(),
            changed: self.changed.clone(),
            questions: self.questions.clone(),
        };
        let lifecycle = protocol.lifecycle();
        let timeout = self.config.startup_timeout();
        let timed_out = || {
            self.timed_out(format!(
                "it did not finish `server/discover` or `initialize` within {}s \
                 (startup_timeout_sec)",
                self.config.startup_timeout_sec
            ))
        };
        match kind {
            TransportKind::Stdio => {
                let mut child =
                    self.spawn().await.map_err(|err| self.start_error(err.to_string()))?;
                let Some((stdout, stdin)) = child.take_stdio() else {
                    return Err(self.start_error("the child has no pipes".to_owned()).into());
                };
                // rmcp reads the server's lines through the relay, which answers at once for
                // what rmcp would drop in silence (a line over its cap, a message too deep).
                let (reader, relay) = Relay::start(stdout, self.dropped.clone());
                let serving = handler.serve_with_lifecycle((reader, stdin), lifecycle);
                match tokio::time::timeout(timeout, serving).await {
                    Ok(Ok(service)) => {
                        self.note_revision(&service);
                        let (subscription, child) = (listen(&service).await, Some(child));
                        Ok(Connection { service, subscription, _child: child, _relay: Some(relay) })
                    }
                    Ok(Err(err)) => Err(self.handshake_failed(&err)),
                    Err(_) => Err(timed_out().into()),
                }
            }
            TransportKind::Http => {
                let transport =
                    self.http_transport().map_err(|err| self.start_error(err.to_string()))?;
                let serving = handler.serve_with_lifecycle(transport, lifecycle);
                match tokio::time::timeout(timeout, serving).await {
                    Ok(Ok(service)) => {
                        self.note_revision(&service);
                        let subscription = listen(&service).await;
                        Ok(Connection { service, subscription, _child: None, _relay: None })
                    }
                    Ok(Err(err)) => Err(self.handshake_failed(&err)),
                    Err(_) => Err(timed_out().into()),
                }
            }
        }
    }

    fn handshake_failed(&self, err: &ClientInitializeError) -> Failed {
        Failed {
            error: self.start_error(format!("the handshake failed: {err}")),
            odd_discover: matches!(err, ClientInitializeError::ExpectedInitResult(_)),
        }
    }

    fn note_revision(&self, service: &RunningService<RoleClient, Handler>) {
        let version = service.peer().peer_info().map(|info| info.protocol_version.to_string());
        *self.revision.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = version;
    }

    async fn spawn(&self) -> Result<ServiceChild, LaunchError> {
        let command = self.config.command.as_deref().unwrap_or_default();
        let mut spec = ProcessSpec::new(command);
        spec.args = self.config.args.iter().map(OsString::from).collect();
        spec.cwd = Some(match &self.config.cwd {
            Some(cwd) if cwd.is_absolute() => cwd.clone(),
            Some(cwd) => self.env.workspace.join(cwd),
            None => self.env.workspace.clone(),
        });
        // A missing program is the usual failure; found here, before the blocking thread, it is
        // reported at once, even in a session that ends before a thread could run.
        let path_var = match self.config.env.get("PATH") {
            Some(path) => Some(OsString::from(path)),
            None => std::env::var_os("PATH"),
        };
        if !findable(command, spec.cwd.as_deref(), path_var.as_deref()) {
            return Err(LaunchError::NoSuchProgram(command.to_owned()));
        }
        let log = self.env.log_path(&self.name);
        let env: Vec<(OsString, OsString)> =
            self.config.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        // Starting a process holds the thread until the child has exec'd (a millisecond or
        // more, several under load), and the session's first model request is being sent on
        // the same thread at that moment: on a blocking thread, it waits for no server.
        let spawned = tokio::task::spawn_blocking(move || {
            Ok(spawn_service(&spec, &env, open_log(log.as_deref())?)?)
        });
        spawned.await?
    }

    fn http_transport(
        &self,
    ) -> Result<StreamableHttpClientTransport<reqwest::Client>, LaunchError> {
        let url = self.config.url.clone().unwrap_or_default();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(var) = &self.config.bearer_token_env_var {
            // The token is read here and handed to the transport only: never logged or shown.
            match std::env::var(var) {
                Ok(token) if !token.is_empty() => config = config.auth_header(token),
                _ => return Err(LaunchError::NoToken(var.clone())),
            }
        }
        let mut headers = HashMap::new();
        for (name, value) in &self.config.http_headers {
            let name = reqwest::header::HeaderName::try_from(name.as_str())
                .map_err(|source| LaunchError::HeaderName { name: name.clone(), source })?;
            let value = reqwest::header::HeaderValue::try_from(value.as_str())
                .map_err(|source| LaunchError::HeaderValue { name: name.to_string(), source })?;
            headers.insert(name, value);
        }
        config = config.custom_headers(headers);
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().build()?;
        Ok(StreamableHttpClientTransport::with_client(client, config))
    }
}

fn last(error: &Option<String>) -> String {
    match error {
        Some(error) => format!(" (last error: {error})"),
        None => String::new(),
    }
}
