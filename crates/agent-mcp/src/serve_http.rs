//! `HttpServer`: a [`ToolServer`] over streamable HTTP (`agent mcp serve --http ADDR`).
//!
//! The transport is rmcp's own `StreamableHttpService` (sessions, SSE streams, the protocol
//! headers), served by hyper's HTTP/1 server without a web framework. Around it this module
//! decides only who may talk to it:
//!
//! - the endpoint is `/mcp`; any other path is 404;
//! - with a bearer token, a request without exactly that token is 401, before anything else;
//! - rmcp refuses with 403, before any MCP handling, a `Host` that is not one of the names the
//!   server was bound under and a browser `Origin` that is not the server's own. That is what
//!   stops DNS rebinding: a page on `http://evil.example` that makes its name resolve to
//!   127.0.0.1 still sends `Host: evil.example` and `Origin: http://evil.example`.

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::net::TcpListener;

use crate::serve::{ServeError, ToolServer};

/// The one path the server answers on.
pub(crate) const ENDPOINT: &str = "/mcp";

/// How long to wait before accepting again after `accept` failed (out of file descriptors, say):
/// long enough not to spin, short enough that the server answers again as soon as it can.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Who may use an [`HttpServer`], beside the clients that reach it under its bound address.
#[derive(Clone, Default)]
pub struct HttpAccess {
    /// The token every request must carry as `Authorization: Bearer TOKEN`; `None` asks none.
    pub bearer_token: Option<String>,
    /// More `Host` values clients may use (`name` or `name:port`), for a server bound to a
    /// non-loopback address that clients reach under a name.
    pub extra_hosts: Vec<String>,
    /// More browser origins allowed (`https://app.example:443`), beside the server's own.
    pub extra_origins: Vec<String>,
}

impl std::fmt::Debug for HttpAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: a debug print says only whether there is one.
        f.debug_struct("HttpAccess")
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<set>"))
            .field("extra_hosts", &self.extra_hosts)
            .field("extra_origins", &self.extra_origins)
            .finish()
    }
}

/// A bound, not yet serving, streamable HTTP endpoint.
#[derive(Debug)]
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    access: HttpAccess,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port; [`HttpServer::local_addr`] says which).
    pub async fn bind(addr: SocketAddr, access: HttpAccess) -> Result<Self, ServeError> {
        let listen = |source| ServeError::Listen { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(listen)?;
        let addr = listener.local_addr().map_err(listen)?;
        Ok(Self { listener, addr, access })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, for the user to give their client.
    pub fn url(&self) -> String {
        format!("http://{}{ENDPOINT}", self.addr)
    }

    /// Serves `server`'s tools to every client that connects, until the task is dropped. Each MCP
    /// session gets a clone of `server`, so they share one executor (and its permission grants).
    pub async fn serve(self, server: ToolServer) -> Result<(), ServeError> {
        let (hosts, origins) = allowed(self.addr, &self.access);
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation();
        let mcp = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let gate = Arc::new(Gate { mcp, token: self.access.bearer_token });
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::warn!(%err, "mcp serve: accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let gate = Arc::clone(&gate);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let gate = Arc::clone(&gate);
                    async move { Ok::<_, Infallible>(gate.answer(request).await) }
                });
                let connection =
                    http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                if let Err(err) = connection.await {
                    tracing::debug!(%err, "mcp serve: connection ended with an error");
                }
            });
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// What stands before rmcp's service: the path and the bearer token.
struct Gate {
    mcp: StreamableHttpService<ToolServer, LocalSessionManager>,
    token: Option<String>,
}

impl Gate {
    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != ENDPOINT {
            return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
        }
        if let Some(token) = &self.token
            && !carries(request.headers(), token)
        {
            let mut response =
                plain(StatusCode::UNAUTHORIZED, "unauthorized: a valid bearer token is required");
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
            return response;
        }
        self.mcp.handle(request).await
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// Whether the request carries exactly `token` as a bearer token (one `Authorization` header).
fn carries(headers: &HeaderMap, token: &str) -> bool {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else { return false };
    let value = value.as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return false;
    }
    same(&value[scheme.len()..], token.as_bytes())
}

/// Compares in time independent of where the first difference is, so response times do not
/// reveal a token byte by byte.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// The `Host` values and browser origins the server accepts: the bound address itself, the
/// loopback names when it is bound to loopback (or to every interface), and the extras.
fn allowed(addr: SocketAddr, access: &HttpAccess) -> (Vec<String>, Vec<String>) {
    let port = addr.port();
    let ip = addr.ip();
    let mut hosts = Vec::new();
    if ip.is_loopback() || ip.is_unspecified() {
        hosts.push(format!("localhost:{port}"));
        if ip.is_ipv4() || ip.is_unspecified() {
            hosts.push(format!("127.0.0.1:{port}"));
        }
        if ip.is_ipv6() || ip.is_unspecified() {
            hosts.push(format!("[::1]:{port}"));
        }
    }
    if !ip.is_unspecified() && !ip.is_loopback() {
        hosts.push(addr.to_string());
    }
    let mut origins: Vec<String> = hosts.iter().map(|host| format!("http://{host}")).collect();
    hosts.extend(access.extra_hosts.iter().cloned());
    origins.extend(access.extra_origins.iter().cloned());
    (hosts, origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(addr: &str, hosts: &[&str], origins: &[&str]) {
        let addr: SocketAddr = addr.parse().unwrap();
        let (got_hosts, got_origins) = allowed(addr, &HttpAccess::default());
        assert_eq!(got_hosts, hosts, "{addr}");
        assert_eq!(got_origins, origins, "{addr}");
    }

    #[test]
    fn a_server_accepts_only_the_names_it_is_bound_under() {
        check(
            "127.0.0.1:8080",
            &["localhost:8080", "127.0.0.1:8080"],
            &["http://localhost:8080", "http://127.0.0.1:8080"],
        );
        check(
            "[::1]:81",
            &["localhost:81", "[::1]:81"],
            &["http://localhost:81", "http://[::1]:81"],
        );
        check("192.168.1.5:9000", &["192.168.1.5:9000"], &["http://192.168.1.5:9000"]);
        check(
            "0.0.0.0:7",
            &["localhost:7", "127.0.0.1:7", "[::1]:7"],
            &["http://localhost:7", "http://127.0.0.1:7", "http://[::1]:7"],
        );
    }

    fn bearer(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::AUTHORIZATION, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn only_exactly_the_token_passes() {
        assert!(carries(&bearer(&["Bearer s3cret"]), "s3cret"));
        assert!(carries(&bearer(&["bearer s3cret"]), "s3cret"));
        for refused in [
            &[][..],
            &["Bearer s3cre"],
            &["Bearer s3cret "],
            &["Bearer S3CRET"],
            &["Basic s3cret"],
            &["s3cret"],
            &["Bearer s3cret", "Bearer s3cret"],
        ] {
            assert!(!carries(&bearer(refused), "s3cret"), "{refused:?}");
        }
    }

    #[test]
    fn a_debug_print_never_shows_the_token() {
        let access =
            HttpAccess { bearer_token: Some("s3cret".to_owned()), ..HttpAccess::default() };
        assert!(!format!("{access:?}").contains("s3cret"));
    }
}
