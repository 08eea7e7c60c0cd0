//! The network proxy's reading of what a sandboxed program sends: a TLS ClientHello's server
//! name, and a plain HTTP request's `Host`.

use agent_sandbox::fuzz::{HelloVerdict, authority, client_hello, host_allowed};

use crate::cuts;

/// Read a byte at a time as the tunnel reads it, the verdict is `Incomplete` until it is reached
/// and then never changes; a server name is a non-empty run of printable ASCII.
pub(super) fn hello(data: &[u8]) {
    let whole = client_hello(data);
    if let HelloVerdict::Name(Some(name)) = &whole {
        assert!(!name.is_empty() && name.bytes().all(|byte| byte.is_ascii_graphic()), "{name:?}");
    }
    let mut reached: Option<(usize, HelloVerdict)> = None;
    for at in cuts::points(data.len(), 256) {
        let verdict = client_hello(&data[..at]);
        match &reached {
            Some((when, first)) => {
                assert_eq!(&verdict, first, "decided at {when} bytes, changed at {at}");
            }
            None if verdict != HelloVerdict::Incomplete => reached = Some((at, verdict)),
            None => {}
        }
    }
}

/// An authority the proxy splits prints back to one it splits the same way; a lone `Host` that
/// names the target matches it, the same with another port does not, and two `Host` headers
/// never match.
pub(super) fn host(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Some((host, port)) = authority(text.trim(), 80) else { return };
    let printed = format!("{host}:{port}");
    assert_eq!(authority(&printed, 1), Some((host.clone(), port)), "reprinted as {printed:?}");
    let (allowed, kept) = host_allowed(&[data], &host, port);
    if kept == 1 {
        assert!(allowed, "Host {text:?} refused for {host}:{port}");
        let (other, _) = host_allowed(&[data], &host, port.wrapping_add(1));
        assert!(!other, "Host {text:?} allowed for port {}", port.wrapping_add(1));
        let (twice, _) = host_allowed(&[data, data], &host, port);
        assert!(!twice, "two Host headers allowed");
    }
}
