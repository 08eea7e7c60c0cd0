//! The door's lock: which address the server may listen on, and what every request must show
//! before it reaches a route: a `Host` this server answers to (DNS rebinding), no foreign
//! `Origin` (another site's page in the user's browser), and the bearer token. It also writes
//! the access log, which never holds a header's value.

use std::{net::SocketAddr, sync::Arc, time::Instant};

use axum::{
    extract::{ConnectInfo, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{TOKEN_VAR, api::Problem};

/// Why the server may not listen where it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BindRefusal {
    /// A non-loopback address without a token set in the environment.
    NoToken(SocketAddr),
    /// A non-loopback address without `--exposed`.
    NotAcknowledged(SocketAddr),
}

impl std::fmt::Display for BindRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (Self::NoToken(addr) | Self::NotAcknowledged(addr)) = self;
        write!(
            f,
            "refusing to listen on {addr}, which other machines can reach: listen on 127.0.0.1 \
             (the default), or set a long random token in ${TOKEN_VAR} and pass --exposed to \
             acknowledge that the API is reachable from the network (put a TLS proxy in front \
             of it: the server speaks plain HTTP); "
        )?;
        match self {
            Self::NoToken(_) => write!(f, "${TOKEN_VAR} is not set"),
            Self::NotAcknowledged(_) => f.write_str("--exposed was not passed"),
        }
    }
}

/// Whether the server may listen on `addr`: a loopback address always; any other only with a
/// token set explicitly and `--exposed`. The refusal says how.
pub(crate) fn check_bind(
    addr: SocketAddr,
    explicit_token: bool,
    exposed: bool,
) -> Result<(), BindRefusal> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    match (explicit_token, exposed) {
        (true, true) => Ok(()),
        (false, _) => Err(BindRefusal::NoToken(addr)),
        (true, false) => Err(BindRefusal::NotAcknowledged(addr)),
    }
}

/// What every request is checked against.
#[derive(Debug)]
pub(crate) struct Guard {
    token: String,
    port: u16,
    /// Host names (without port) the server answers to, lowercase.
    names: Vec<String>,
    /// Origins allowed cross-site (CORS), exactly as configured.
    cors: Vec<String>,
}

impl Guard {
    pub(crate) fn new(token: String, addr: SocketAddr, hosts: &[String], cors: &[String]) -> Self {
        let mut names: Vec<String> = ["127.0.0.1", "localhost", "[::1]"].map(String::from).into();
        if !addr.ip().is_unspecified() {
            names.push(match addr {
                SocketAddr::V4(v4) => v4.ip().to_string(),
                SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
            });
        }
        names.extend(hosts.iter().map(|host| host.to_ascii_lowercase()));
        Self { token, port: addr.port(), names, cors: cors.to_vec() }
    }

    /// Whether `Host` names this server: one of its names, with its port.
    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => (name, port.parse::<u16>().ok()),
            _ => (host.as_str(), Some(80)),
        };
        port == Some(self.port) && self.names.iter().any(|allowed| allowed == name)
    }

    /// Whether `origin` is the server's own page (same origin).
    fn own_origin(&self, origin: &str) -> bool {
        self.names.iter().any(|name| origin == format!("http://{name}:{}", self.port))
    }

    /// Whether the request carries the token, compared in constant time.
    fn token_ok(&self, headers: &HeaderMap) -> bool {
        let Some(given) = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
        else {
            return false;
        };
        let (given, token) = (given.trim().as_bytes(), self.token.as_bytes());
        given.len() == token.len()
            && given.iter().zip(token).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

fn refuse(status: StatusCode, error: &str) -> Response {
    (status, axum::Json(Problem { error: error.to_owned() })).into_response()
}

/// Checks a request, passes it on, and logs it.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = decide(&guard, request, next).await;
    // The path alone: a query string could carry something a client should not have put there.
    eprintln!(
        "agent serve: {peer} \"{method} {}\" {} {}ms",
        crate::terminal::visible(&path),
        response.status().as_u16(),
        start.elapsed().as_millis()
    );
    response
}

async fn decide(guard: &Guard, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !guard.host_ok(headers) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "the Host header does not name this server (use http://127.0.0.1:PORT, or start it \
             with --allow-host NAME)",
        );
    }
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_owned);
    let cors = origin.as_ref().filter(|origin| guard.cors.iter().any(|c| c == *origin)).cloned();
    if let Some(origin) = &origin
        && cors.is_none()
        && !guard.own_origin(origin)
    {
        return refuse(
            StatusCode::FORBIDDEN,
            "requests from other sites' pages are refused (start the server with \
             --allow-origin ORIGIN to allow one)",
        );
    }
    if let Some(origin) = &cors
        && request.method() == Method::OPTIONS
    {
        return with_cors(StatusCode::NO_CONTENT.into_response(), origin);
    }
    let open = matches!(request.uri().path(), "/" | "/health");
    if !open && !guard.token_ok(headers) {
        let mut response = refuse(
            StatusCode::UNAUTHORIZED,
            "this API needs the server's token: `Authorization: Bearer TOKEN`, the token being \
             in the file `agent serve` printed at start (or in $AGENT_SERVE_TOKEN)",
        );
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    let response = next.run(request).await;
    match cors {
        Some(origin) => with_cors(response, &origin),
        None => response,
    }
}

/// Allows `origin` to read the answer and to send the token and JSON.
fn with_cors(mut response: Response, origin: &str) -> Response {
    let headers = response.headers_mut();
    if let Ok(origin) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, last-event-id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds_need_nothing() {
        let check = |addr: &str, token, exposed| check_bind(addr.parse().unwrap(), token, exposed);
        assert!(check("127.0.0.1:1", false, false).is_ok());
        assert!(check("[::1]:1", false, false).is_ok());
        let text = |refusal: BindRefusal| refusal.to_string();
        assert!(text(check("0.0.0.0:1", false, true).unwrap_err()).ends_with("is not set"));
        assert!(text(check("0.0.0.0:1", true, false).unwrap_err()).contains("--exposed was not"));
        assert!(check("192.168.1.2:1", true, true).is_ok());
    }

    #[test]
    fn hosts_must_name_this_server_with_its_port() {
        let guard = Guard::new("t".into(), "127.0.0.1:4848".parse().unwrap(), &[], &[]);
        let check = |host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            guard.host_ok(&headers)
        };
        assert!(check("127.0.0.1:4848"));
        assert!(check("LOCALHOST:4848"));
        assert!(check("[::1]:4848"));
        assert!(!check("127.0.0.1:4849"));
        assert!(!check("evil.example:4848"));
        assert!(!check("localhost"));
        assert!(!check("localhost.evil.example:4848"));
    }
}
