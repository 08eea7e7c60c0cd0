//! The proxy's reading of an authority (`host:port`, `[v6]:port`) and its bound on a request head.

/// The longest request head the proxy reads (hyper's read buffer on a client connection).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_split() {
        assert_eq!(split_host_port("docs.rs:443", 80), Some(("docs.rs".into(), 443)));
        assert_eq!(split_host_port("[::1]:8080", 80), Some(("[::1]".into(), 8080)));
        assert_eq!(split_host_port("docs.rs", 80), Some(("docs.rs".into(), 80)));
        assert_eq!(split_host_port("a.test:x", 80), None);
    }
}
