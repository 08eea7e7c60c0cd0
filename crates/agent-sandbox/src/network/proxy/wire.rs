//! The bytes the proxy reads: an HTTP request head, a SOCKS5 greeting and request, and the
//! server name of a TLS ClientHello.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest request head the proxy reads.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// An HTTP request head as the proxy needs it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) version: String,
    /// The header lines after the request line, as sent (without the final blank line).
    pub(crate) headers: Vec<String>,
}

/// Reads up to the end of a request head; returns the head and any bytes read past it.
pub(crate) async fn read_head(
    stream: &mut (impl AsyncRead + Unpin),
    mut buf: Vec<u8>,
) -> std::io::Result<Option<(Head, Vec<u8>)>> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok(parse_head(&buf[..end]).map(|head| (head, rest)));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse_head(bytes: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    Some(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers: lines.map(str::to_owned).collect(),
    })
}

/// `host:port` (with `[v6]:port`), the port defaulting to `default`.
pub(crate) fn split_host_port(authority: &str, default: u16) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => default,
            None => return None,
        };
        return Some((format!("[{host}]"), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host.to_owned(), port.parse().ok()?)),
        Some(_) => None,
        None => Some((authority.to_owned(), default)),
    }
}

/// An absolute-form `http://host[:port]/path` target: (host, port, origin-form path).
pub(crate) fn absolute_target(target: &str) -> Option<(String, u16, String)> {
    let rest = target.strip_prefix("http://").or_else(|| {
        target.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &target[7..])
    })?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], rest[at..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    // Credentials in the authority are not ours to judge; the host is what follows them.
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let (host, port) = split_host_port(authority, 80)?;
    let path = if path.starts_with('?') { format!("/{path}") } else { path };
    Some((host, port, path))
}

/// The server name (SNI) of a TLS ClientHello at the start of `data`: `Some(None)` for a
/// ClientHello without one, `None` when `data` is not a (complete) ClientHello.
pub(crate) fn client_hello_sni(data: &[u8]) -> Option<Option<String>> {
    // Record header: type 22 (handshake), version, length.
    if data.len() < 5 || data[0] != 0x16 {
        return None;
    }
    let body = data.get(5..5 + usize::from(u16::from_be_bytes([data[3], data[4]])))?;
    // Handshake header: type 1 (ClientHello), 3-byte length.
    if body.first()? != &1 {
        return None;
    }
    let mut at = 4 + 2 + 32; // header, client version, random
    let session = usize::from(*body.get(at)?);
    at += 1 + session;
    let suites = usize::from(u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]));
    at += 2 + suites;
    let methods = usize::from(*body.get(at)?);
    at += 1 + methods;
    if at == body.len() {
        return Some(None);
    }
    let ext_len = usize::from(u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]));
    at += 2;
    let end = at + ext_len;
    while at + 4 <= end {
        let kind = u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]);
        let len = usize::from(u16::from_be_bytes([*body.get(at + 2)?, *body.get(at + 3)?]));
        at += 4;
        if kind == 0 {
            // server_name: list length (2), then entries of type (1), length (2), name.
            let entry = body.get(at + 2..at + len)?;
            if entry.first()? == &0 {
                let name_len = usize::from(u16::from_be_bytes([*entry.get(1)?, *entry.get(2)?]));
                let name = entry.get(3..3 + name_len)?;
                return Some(Some(String::from_utf8_lossy(name).into_owned()));
            }
            return Some(None);
        }
        at += len;
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_split() {
        assert_eq!(split_host_port("docs.rs:443", 80), Some(("docs.rs".into(), 443)));
        assert_eq!(split_host_port("[::1]:8080", 80), Some(("[::1]".into(), 8080)));
        assert_eq!(split_host_port("docs.rs", 80), Some(("docs.rs".into(), 80)));
        assert_eq!(
            absolute_target("http://user:pw@a.test:8080/x?y"),
            Some(("a.test".into(), 8080, "/x?y".into()))
        );
        assert_eq!(absolute_target("http://a.test?q"), Some(("a.test".into(), 80, "/?q".into())));
        assert_eq!(absolute_target("/relative"), None);
    }
}
