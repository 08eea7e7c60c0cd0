//! A tunnel (`CONNECT`, SOCKS5) after its target was allowed: the client's first bytes say what
//! it carries. A TLS ClientHello must name the allowed host (or no host), read whole within a
//! bounded size ([`hello::read`]); plain HTTP is served request by request with the tunnel's
//! target as the only one ([`http::serve_tunnel`]), so its `Host` headers are checked as on the
//! proxy's own port; anything else (SSH, a database protocol) is relayed as it comes. When the
//! server speaks first, before the client sent anything, the tunnel is relayed as it comes too.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::TcpStream,
};

use super::{
    Shared, Via,
    hello::{self, Hello},
    http::{self, Target},
};

/// What the first bytes of a tunnel are.
#[derive(Debug, PartialEq, Eq)]
enum Flight {
    /// Too few bytes to tell.
    Unknown,
    /// A TLS handshake record.
    Tls,
    /// What could be an HTTP/1 request line: a token, then a space.
    Http,
    /// Anything else.
    Other,
}

/// How far into a first line the proxy looks for the space after an HTTP method; longer runs of
/// token characters are taken for HTTP, which hyper then judges (the stricter reading).
const MAX_METHOD: usize = 8 * 1024;

fn flight(data: &[u8]) -> Flight {
    if data.first() == Some(&0x16) {
        return Flight::Tls;
    }
    // Servers skip empty lines before a request line (RFC 9112 §2.2).
    let start = data.iter().position(|b| !matches!(b, b'\r' | b'\n')).unwrap_or(data.len());
    let line = &data[start..];
    let token = line.iter().take_while(|b| is_tchar(**b)).count();
    match line.get(token) {
        Some(b' ') if token > 0 => Flight::Http,
        Some(_) => Flight::Other,
        None if token >= MAX_METHOD => Flight::Http,
        None => Flight::Unknown,
    }
}

/// A token character (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Relays `client` ⇄ `upstream` for `target`, after checking what the client sends first.
/// (Boxed: a tunnel's plain HTTP is served by code that opens tunnels, and the compiler needs a
/// named future type to see that the cycle is `Send`.)
pub(super) fn relay(
    client: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    upstream: TcpStream,
    target: Target,
    shared: Arc<Shared>,
    via: Via,
) -> Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> {
    Box::pin(checked_relay(client, upstream, target, shared, via))
}

async fn checked_relay(
    mut client: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    mut upstream: TcpStream,
    target: Target,
    shared: Arc<Shared>,
    via: Via,
) -> std::io::Result<()> {
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match flight(&pending) {
            Flight::Unknown => {}
            Flight::Other => break,
            Flight::Http => {
                let client = Prefixed { prefix: pending, at: 0, inner: client };
                return http::serve_tunnel(client, upstream, shared, target).await;
            }
            Flight::Tls => match hello::read(&pending) {
                Hello::Incomplete => {}
                Hello::Name(None) => break,
                Hello::Name(Some(name)) if normalize(&name) == target.host => break,
                Hello::Name(Some(name)) => {
                    let reason = format!(
                        "the TLS server name `{}` is not the allowed host `{}`",
                        normalize(&name),
                        target.host
                    );
                    shared.log.record(via, &target.host, target.port, false, reason);
                    return Ok(());
                }
                Hello::Broken(why) => {
                    let reason = format!("the tunnel's TLS ClientHello was refused: {why}");
                    shared.log.record(via, &target.host, target.port, false, reason);
                    return Ok(());
                }
            },
        }
        tokio::select! {
            read = client.read(&mut buf) => {
                let n = read?;
                if n == 0 {
                    // The client ended before saying what it carries: nothing is sent.
                    return Ok(());
                }
                pending.extend_from_slice(&buf[..n]);
            }
            // A server that speaks first (SSH, SMTP) is relayed as it comes.
            _ = upstream.readable(), if pending.is_empty() => break,
        }
    }
    upstream.write_all(&pending).await?;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

fn normalize(name: &str) -> String {
    crate::network::resolver::normalize_host(name)
}

/// A stream whose first bytes were already read: they are read again, then the stream's own.
struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at < this.prefix.len() {
            let n = buf.remaining().min(this.prefix.len() - this.at);
            buf.put_slice(&this.prefix[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(data: &[u8], expect: Flight) {
        assert_eq!(flight(data), expect);
    }

    #[test]
    fn first_bytes_are_told_apart() {
        check(b"", Flight::Unknown);
        check(b"\x16\x03\x01", Flight::Tls);
        check(b"GET / HTTP/1.1\r\n", Flight::Http);
        check(b"\r\nget /", Flight::Http);
        check(b"PRI * HTTP/2.0\r\n", Flight::Http);
        check(b"GE", Flight::Unknown);
        check(b"SSH-2.0-OpenSSH_9.6\r\n", Flight::Other);
        check(b"*1\r\n$4\r\nPING\r\n", Flight::Other);
        check(&[b'A'; MAX_METHOD], Flight::Http);
    }
}
