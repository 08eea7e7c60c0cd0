//! The proxy's HTTP side. hyper frames every request on a client connection, so each request of
//! a kept-alive connection is judged on its own: its target against the lists, and its `Host`
//! header against its target. A request whose `Host` names another host is refused (`403`,
//! naming both), and the server always gets the checked `host[:port]` as `Host`, so a shared
//! front end (a CDN, a virtual-host server) can route it to the checked name only.
//!
//! The same code serves plain HTTP inside a `CONNECT` tunnel (`curl -p http://…`), where the
//! one target is the tunnel's and requests go over the tunnel's connection.

use std::{convert::Infallible, sync::Arc};

use http_body_util::Either;
use hyper::{
    Method, Request, Response, StatusCode, Uri, Version,
    body::Incoming,
    client::conn::http1::SendRequest,
    header::{self, HeaderMap, HeaderName, HeaderValue},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpStream,
    sync::Mutex,
};

use super::{MAX_HEAD_BYTES, Refused, Shared, Via, connect, decide, tunnel, wire};
use crate::network::resolver::normalize_host;

type Body = Either<Incoming, String>;

/// A host and port, as judged: the name normalized (lower case, no trailing dot or brackets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(super) host: String,
    pub(super) port: u16,
}

impl Target {
    pub(crate) fn new(host: &str, port: u16) -> Self {
        Self { host: normalize_host(host), port }
    }

    /// The `Host` the server gets: the checked name, with the port unless it is 80.
    fn authority(&self) -> String {
        let host =
            if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == 80 { host } else { format!("{host}:{}", self.port) }
    }
}

/// Where the requests of one client connection go.
#[derive(Clone)]
pub(super) enum Mode {
    /// The proxy's own port: absolute-form requests, each to the host it names, and `CONNECT`.
    Proxy,
    /// Plain HTTP inside a tunnel allowed for `target`: every request must be for that target,
    /// and goes over the tunnel's one connection.
    Tunnel { target: Target, upstream: Arc<Mutex<SendRequest<Incoming>>> },
}

/// Serves the HTTP requests of one client connection until it ends.
pub(super) async fn serve(
    io: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    shared: Arc<Shared>,
    mode: Mode,
) {
    let service = service_fn(move |request| {
        let (shared, mode) = (shared.clone(), mode.clone());
        async move { Ok::<_, Infallible>(handle(request, &shared, &mode).await) }
    });
    let _ = http1::Builder::new()
        .max_buf_size(MAX_HEAD_BYTES)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades()
        .await;
}

/// A tunnel's plain HTTP: a client connection over the tunnel's `upstream`.
pub(super) async fn serve_tunnel(
    io: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    upstream: TcpStream,
    shared: Arc<Shared>,
    target: Target,
) -> std::io::Result<()> {
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(upstream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    let upstream = Arc::new(Mutex::new(sender));
    serve(io, shared, Mode::Tunnel { target, upstream }).await;
    Ok(())
}

async fn handle(request: Request<Incoming>, shared: &Arc<Shared>, mode: &Mode) -> Response<Body> {
    if request.method() == Method::CONNECT {
        return match mode {
            Mode::Proxy => open_tunnel(request, shared).await,
            Mode::Tunnel { .. } => reply(StatusCode::BAD_REQUEST, "CONNECT inside a tunnel"),
        };
    }
    let via = match mode {
        Mode::Proxy => Via::Http,
        Mode::Tunnel { .. } => Via::Connect,
    };
    let target = match (absolute(request.uri()), mode) {
        (Some(Ok(target)), Mode::Proxy) => target,
        (Some(Ok(asked)), Mode::Tunnel { target, .. }) if asked == *target => asked,
        (Some(Ok(asked)), Mode::Tunnel { target, .. }) => {
            let reason = format!(
                "the request is for `{}` inside a tunnel opened for `{}`",
                asked.authority(),
                target.authority()
            );
            shared.log.record(via, &asked.host, asked.port, false, reason.clone());
            return forbidden(&reason);
        }
        (None, Mode::Tunnel { target, .. }) => target.clone(),
        (Some(Err(text)), _) => return reply(StatusCode::BAD_REQUEST, text),
        (None, Mode::Proxy) => {
            return reply(
                StatusCode::BAD_REQUEST,
                "this is the session's network proxy: send absolute-form requests (http://host/path) or CONNECT",
            );
        }
    };
    if let Err(mismatch) = host_matches(request.headers(), &target) {
        let reason = mismatch.to_string();
        shared.log.record(via, &target.host, target.port, false, reason.clone());
        return forbidden(&reason);
    }
    let outgoing = outgoing(request, &target);
    let answer = match mode {
        Mode::Proxy => {
            let addrs = match decide(shared, via, &target.host, target.port).await {
                Ok(addrs) => addrs,
                Err(Refused(reason)) => return forbidden(&reason),
            };
            let Ok(stream) = connect(&addrs).await else {
                return cannot_connect(&target);
            };
            let Ok((mut sender, connection)) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
            else {
                return cannot_connect(&target);
            };
            tokio::spawn(connection);
            sender.send_request(outgoing).await
        }
        Mode::Tunnel { upstream, .. } => {
            let mut sender = upstream.lock().await;
            match sender.ready().await {
                Ok(()) => sender.send_request(outgoing).await,
                Err(err) => Err(err),
            }
        }
    };
    match answer {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Either::Left(body))
        }
        Err(_) => cannot_connect(&target),
    }
}

/// `CONNECT host:port`: judged, connected, answered `200`, then relayed by [`tunnel::relay`].
async fn open_tunnel(request: Request<Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    let authority = request.uri().authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
    let Some((host, port)) = wire::split_host_port(&authority, 443) else {
        return reply(StatusCode::BAD_REQUEST, "bad CONNECT target");
    };
    let addrs = match decide(shared, Via::Connect, &host, port).await {
        Ok(addrs) => addrs,
        Err(Refused(reason)) => return forbidden(&reason),
    };
    let target = Target::new(&host, port);
    let Ok(upstream) = connect(&addrs).await else {
        return cannot_connect(&target);
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(request).await {
            let _ =
                tunnel::relay(TokioIo::new(upgraded), upstream, target, shared, Via::Connect).await;
        }
    });
    Response::new(Either::Right(String::new()))
}

/// The target of an absolute-form request (`http://host[:port]/…`); `None` for origin form.
fn absolute(uri: &Uri) -> Option<Result<Target, &'static str>> {
    let authority = uri.authority()?;
    if uri.scheme_str().is_some_and(|scheme| !scheme.eq_ignore_ascii_case("http")) {
        return Some(Err("only http:// requests come as requests; open https:// with CONNECT"));
    }
    Some(Ok(Target::new(authority.host(), authority.port_u16().unwrap_or(80))))
}

/// Why a request's `Host` does not name the target that was checked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HostMismatch {
    #[error("the request carries two Host headers")]
    Two,
    #[error(
        "the Host header names `{named}` but the request is for `{target}`; a request reaches only the host that was checked"
    )]
    Other { named: String, target: String },
}

/// Whether the request's `Host` (if it has one) names its target.
pub(crate) fn host_matches(headers: &HeaderMap, target: &Target) -> Result<(), HostMismatch> {
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(value), None) = (hosts.next(), hosts.next()) else {
        if headers.contains_key(header::HOST) {
            return Err(HostMismatch::Two);
        }
        return Ok(());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let named = wire::split_host_port(text.trim(), 80).map(|(host, port)| Target::new(&host, port));
    if named.as_ref() == Some(target) {
        return Ok(());
    }
    Err(HostMismatch::Other { named: text.replace(['\r', '\n'], " "), target: target.authority() })
}

/// The request as the server gets it: origin form, the checked `Host`, no hop-by-hop headers.
fn outgoing(request: Request<Incoming>, target: &Target) -> Request<Incoming> {
    let (parts, body) = request.into_parts();
    let mut headers = parts.headers;
    strip_hop_by_hop(&mut headers);
    headers.remove(header::HOST);
    if let Ok(host) = HeaderValue::from_str(&target.authority()) {
        headers.insert(header::HOST, host);
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = Request::new(body);
    *out.method_mut() = parts.method;
    *out.uri_mut() = path.parse().unwrap_or_else(|_| Uri::from_static("/"));
    *out.version_mut() = Version::HTTP_11;
    *out.headers_mut() = headers;
    out
}

/// Drops the headers that belong to one hop (RFC 9110 §7.6.1), those `Connection` names, and the
/// proxy's own. `Upgrade` goes with them: a connection upgraded through the proxy would leave
/// HTTP, and with it the per-request check.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
    ] {
        headers.remove(name);
    }
    for name in ["keep-alive", "proxy-connection"] {
        headers.remove(name);
    }
}

/// A refusal: `403`, the reason in the body and in `x-agent-proxy-error`.
fn forbidden(reason: &str) -> Response<Body> {
    let mut response = reply(StatusCode::FORBIDDEN, &format!("refused: {reason}"));
    let header = reason.replace(['\r', '\n'], " ");
    if let Ok(value) = HeaderValue::from_str(&header) {
        response.headers_mut().insert("x-agent-proxy-error", value);
    }
    response
}

fn cannot_connect(target: &Target) -> Response<Body> {
    reply(StatusCode::BAD_GATEWAY, &format!("cannot connect to {}", target.authority()))
}

/// The proxy's own answer; the connection closes after it.
fn reply(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Either::Right(format!("agent network proxy: {text}\n")));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
