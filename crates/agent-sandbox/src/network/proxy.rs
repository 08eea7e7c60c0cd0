//! The session proxy of allow-list mode: the only way out of the session's network namespace.
//!
//! It listens on `127.0.0.1` inside the namespace (commands reach it on their own loopback) and
//! connects out from the agent's side. It speaks HTTP (absolute-form requests of every method),
//! `CONNECT` tunnels (the TLS server name, when there is one, must be the name that was allowed)
//! and SOCKS5 with remote resolution, on one port: the first byte tells them apart. Names are
//! judged by the `[network]` lists (deny wins), resolved here only (commands have no DNS), and
//! every address is vetted after resolution, so a listed name that resolves to a private or
//! loopback address is refused unless the user pinned it. A refusal answers `403` with the
//! reason in the body and an `x-agent-proxy-error` header (SOCKS: reply `0x02`, "not allowed by
//! ruleset"); every decision goes to the [`NetLog`].

mod hello;
mod http;
mod log;
mod tunnel;
mod wire;

use std::{
    net::SocketAddr,
    sync::{Arc, RwLock},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

pub use self::hello::MAX_CLIENT_HELLO;
pub use self::log::{MAX_LOG_ENTRIES, NetDecision, NetLog, Via};
pub use self::wire::MAX_HEAD_BYTES;
#[cfg(feature = "fuzz")]
pub(crate) use self::{
    hello::{Hello, read as read_hello},
    http::{Target, host_matches},
    wire::split_host_port,
};
use super::{
    address::parse_host_ip,
    domains::{DomainRules, Verdict},
    resolver::{Resolver, Source, normalize_host},
};
use crate::sandbox::{NetNamespace, SandboxError};

/// What the proxy enforces.
#[derive(Debug, Clone, Default)]
pub struct ProxyConfig {
    /// `[network] allow` / `deny`.
    pub rules: DomainRules,
    /// Resolution, with the user's pins (shared with web_fetch).
    pub resolver: Resolver,
    /// Where decisions go.
    pub log: NetLog,
    /// The Node.js preload that points `fetch` at the proxy, written to this path and named in
    /// `NODE_OPTIONS` (see `docs/network.md`); `None` leaves Node's `fetch` to
    /// `NODE_USE_ENV_PROXY`.
    pub node_preload: Option<std::path::PathBuf>,
}

struct Shared {
    rules: RwLock<DomainRules>,
    resolver: Resolver,
    log: NetLog,
}

/// A running session proxy; it stops when dropped.
#[derive(Debug)]
pub struct SessionProxy {
    port: u16,
    shared: Arc<Shared>,
    node_preload: Option<std::path::PathBuf>,
    task: tokio::task::JoinHandle<()>,
    /// The proxy's own runtime when it was started outside one (`agent tools call` is
    /// synchronous): each proxy then serves on its own thread, so no caller needs a runtime.
    runtime: Option<OwnRuntime>,
}

/// A runtime of the proxy's own, driven on one thread of its own, for callers without one.
/// A current-thread runtime blocks on a stop signal there, so the proxy's tasks run until the
/// proxy is dropped; dropping only sends the signal, which is allowed inside async code too.
#[derive(Debug)]
struct OwnRuntime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl OwnRuntime {
    fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new().name("agent-session-proxy".into()).spawn(move || {
            runtime.block_on(async move {
                let _ = stopped.await;
            });
        })?;
        Ok(Self { handle, stop: Some(stop) })
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Drop for SessionProxy {
    fn drop(&mut self) {
        self.task.abort();
        // Stops the proxy's own runtime, if it has one (its thread then ends).
        self.runtime.take();
    }
}

/// The script Node.js loads first (`NODE_OPTIONS=--require …`): Node 20's built-in `fetch`
/// ignores the proxy variables and `NODE_USE_ENV_PROXY`, so this replaces the global dispatcher
/// of its bundled undici with an agent whose connections are tunnelled through the proxy.
pub const NODE_PRELOAD: &str = include_str!("proxy/node-preload.cjs");

impl SessionProxy {
    /// Starts the proxy on a listener inside `namespace`, with or without a tokio runtime.
    pub fn start_in(namespace: &NetNamespace, config: ProxyConfig) -> Result<Self, SandboxError> {
        let listener = namespace.listen_loopback()?;
        Self::start(listener, config)
            .map_err(|err| SandboxError::Setup(format!("session proxy: {err}")))
    }

    /// Starts the proxy on `listener` (any listener: tests and the host-side bench use one on
    /// the host's loopback). Inside a tokio runtime it serves on that runtime; outside one it
    /// starts its own, on one thread, which stops when the proxy is dropped.
    pub fn start(listener: std::net::TcpListener, config: ProxyConfig) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        if let Some(path) = &config.node_preload {
            std::fs::write(path, NODE_PRELOAD)?;
        }
        let runtime = match tokio::runtime::Handle::try_current() {
            Ok(_) => None,
            Err(_) => Some(OwnRuntime::start()?),
        };
        let handle = match &runtime {
            Some(runtime) => runtime.handle.clone(),
            None => tokio::runtime::Handle::current(),
        };
        let _entered = handle.enter();
        let listener = TcpListener::from_std(listener)?;
        let shared = Arc::new(Shared {
            rules: RwLock::new(config.rules),
            resolver: config.resolver,
            log: config.log,
        });
        let accept = shared.clone();
        let task = handle.spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else { continue };
                tokio::spawn(serve(client, accept.clone()));
            }
        });
        Ok(Self { port, shared, node_preload: config.node_preload, task, runtime })
    }

    /// The port, on `127.0.0.1` inside the namespace.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The decision log.
    pub fn log(&self) -> &NetLog {
        &self.shared.log
    }

    /// Allows `pattern` from now on (the REPL's answer to a refusal).
    pub fn allow(&self, pattern: &str) {
        if let Ok(mut rules) = self.shared.rules.write() {
            rules.allow(pattern);
        }
    }

    /// The lists in force.
    pub fn rules(&self) -> DomainRules {
        self.shared.rules.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// The environment every command gets, so that every runtime finds the proxy without being
    /// told: the proxy variables in both cases, `NO_PROXY` for the session's own loopback, and
    /// the settings of npm, pip, cargo and Node (see `docs/network.md`).
    pub fn env(&self) -> Vec<(String, String)> {
        let http = format!("http://127.0.0.1:{}", self.port);
        let socks = format!("socks5h://127.0.0.1:{}", self.port);
        let no_proxy = "localhost,127.0.0.1,::1".to_owned();
        let mut env = Vec::new();
        for (name, value) in [
            ("HTTP_PROXY", &http),
            ("HTTPS_PROXY", &http),
            ("ALL_PROXY", &socks),
            ("NO_PROXY", &no_proxy),
        ] {
            env.push((name.to_owned(), value.clone()));
            env.push((name.to_ascii_lowercase(), value.clone()));
        }
        for (name, value) in [
            ("NODE_USE_ENV_PROXY", "1".to_owned()),
            ("npm_config_proxy", http.clone()),
            ("npm_config_https_proxy", http.clone()),
            ("npm_config_noproxy", no_proxy.clone()),
            ("PIP_PROXY", http.clone()),
            ("CARGO_HTTP_PROXY", http.clone()),
            ("YARN_HTTP_PROXY", http.clone()),
            ("YARN_HTTPS_PROXY", http.clone()),
            ("AGENT_NETWORK_PROXY", http.clone()),
        ] {
            env.push((name.to_owned(), value));
        }
        if let Some(path) = &self.node_preload {
            env.push(("NODE_OPTIONS".to_owned(), format!("--require {}", path.display())));
        }
        env
    }
}

/// A refusal: the reason, for the body, the header and the log.
struct Refused(String);

/// Judges `host:port` and returns the addresses to connect to.
async fn decide(
    shared: &Shared,
    via: Via,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, Refused> {
    let name = normalize_host(host);
    let verdict = shared.rules.read().map(|r| r.judge(&name)).unwrap_or(Verdict::Unlisted);
    let refuse = |reason: String| {
        shared.log.record(via, &name, port, false, reason.clone());
        Err(Refused(reason))
    };
    let pattern = match verdict {
        Verdict::Denied(rule) => {
            return refuse(format!("`{name}` is denied by the [network] deny pattern `{rule}`"));
        }
        Verdict::Unlisted => {
            return refuse(format!(
                "`{name}` is not on the network allow-list; to allow it, add it to [network] allow (allow = [\"{name}\"])"
            ));
        }
        Verdict::Allowed(rule) => rule,
    };
    let resolved = match shared.resolver.resolve(&name, port).await {
        Ok(resolved) => resolved,
        Err(refusal) => return refuse(refusal.to_string()),
    };
    // An address the user wrote in the allow list is opened by that; a name is not, unless
    // pinned: the check after resolution is what stops a listed name pointing inwards.
    let named_literal = resolved.source == Source::Literal && parse_host_ip(&pattern).is_some();
    match Resolver::vet(&resolved, named_literal) {
        Ok(addrs) => {
            shared.log.record(via, &name, port, true, format!("allowed by `{pattern}`"));
            Ok(addrs)
        }
        Err(refusal) => refuse(format!(
            "{refusal}; the proxy does not reach internal addresses unless the name is pinned in [network] resolve"
        )),
    }
}

async fn connect(addrs: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no address");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = err,
        }
    }
    Err(last)
}

/// One client connection: SOCKS5 when its first byte is 5, HTTP (with `CONNECT`) otherwise.
async fn serve(client: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let mut first = [0u8; 1];
    if client.peek(&mut first).await? == 0 {
        return Ok(());
    }
    if first[0] == 5 {
        return socks(client, shared).await;
    }
    http::serve(client, shared, http::Mode::Proxy).await;
    Ok(())
}

/// SOCKS5 (RFC 1928): no authentication, `CONNECT` only, names resolved here.
async fn socks(mut client: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    client.read_u8().await?; // the version, 5
    let count = client.read_u8().await?;
    let mut methods = vec![0u8; usize::from(count)];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        return client.write_all(&[5, 0xff]).await;
    }
    client.write_all(&[5, 0]).await?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => {
            let len = client.read_u8().await?;
            let mut name = vec![0u8; usize::from(len)];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).await?;
            format!("[{}]", std::net::Ipv6Addr::from(ip))
        }
        _ => return client.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let port = client.read_u16().await?;
    if request[1] != 1 {
        // Only CONNECT: BIND and UDP ASSOCIATE would open other ways out.
        return client.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    }
    let addrs = match decide(&shared, Via::Socks, &host, port).await {
        Ok(addrs) => addrs,
        Err(Refused(_)) => return client.write_all(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let Ok(upstream) = connect(&addrs).await else {
        return client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    };
    client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    tunnel::relay(client, upstream, http::Target::new(&host, port), shared, Via::Socks).await
}
