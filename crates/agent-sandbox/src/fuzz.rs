//! Entry points for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): the proxy's reading
//! of a TLS ClientHello (its server name) and of a request's `Host` header.

use hyper::header::{HOST, HeaderMap, HeaderValue};

use crate::network::proxy::{Hello, Target, host_matches, read_hello, split_host_port};

/// What the proxy makes of the first bytes of a TLS tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloVerdict {
    /// More bytes are needed.
    Incomplete,
    /// A whole ClientHello, with its server name if it has one.
    Name(Option<String>),
    /// Refused, and why.
    Broken(&'static str),
}

/// The proxy's verdict on `data`, the first bytes of a tunnel (starting with a handshake record).
pub fn client_hello(data: &[u8]) -> HelloVerdict {
    match read_hello(data) {
        Hello::Incomplete => HelloVerdict::Incomplete,
        Hello::Name(name) => HelloVerdict::Name(name),
        Hello::Broken(why) => HelloVerdict::Broken(why),
    }
}

/// `host:port` (or `[v6]:port`) split as the proxy splits an authority.
pub fn authority(text: &str, default_port: u16) -> Option<(String, u16)> {
    split_host_port(text, default_port)
}

/// Whether a request carrying these `Host` header values (those HTTP allows in a header) may go
/// to `host:port`, and how many of the values were kept.
pub fn host_allowed(values: &[&[u8]], host: &str, port: u16) -> (bool, usize) {
    let mut headers = HeaderMap::new();
    for value in values {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append(HOST, value);
        }
    }
    let kept = headers.get_all(HOST).iter().count();
    (host_matches(&headers, &Target::new(host, port)).is_ok(), kept)
}
