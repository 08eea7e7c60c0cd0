//! The session proxy sends a request only to the name it checked, the way an attacker would try
//! otherwise: a `Host` header naming another host, a second request on a kept-alive connection
//! (absolute and origin form), a TLS ClientHello naming another server inside an allowed
//! `CONNECT` (plain, split across records, padded past one record, too large), and plain HTTP
//! inside a tunnel. Behind every allowed name sits one "front end" on the host's loopback that
//! routes by `Host`, as a CDN or a virtual-host server does, and logs what reaches it; each
//! attack is paired with its allowed control. Every name is pinned: no resolver is asked.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use agent_sandbox::network::{DomainRules, ProxyConfig, Resolver, SessionProxy};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// What reached the front end: one line per request (`GET /path host=…`), or `tls N bytes`.
type Seen = Arc<Mutex<Vec<String>>>;

/// A front end on the host's loopback that serves every request of a connection (it ignores
/// `Connection: close`, as a pipelining front end may), answering with the `Host` it saw.
async fn front() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else { return };
            tokio::spawn(serve(socket, log.clone()));
        }
    });
    (port, seen)
}

async fn serve(mut socket: TcpStream, seen: Seen) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
            if raw[0] == 0x16 {
                // A TLS client: what matters is what arrived, up to the client's end.
                while let Ok(n @ 1..) = socket.read(&mut buf).await {
                    raw.extend_from_slice(&buf[..n]);
                }
                seen.lock().unwrap().push(format!("tls {} bytes", raw.len()));
                return;
            }
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        raw.drain(..end + 4);
        let mut lines = head.lines();
        let request: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
        let host = lines
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("host"))
            .map_or("", |(_, value)| value.trim())
            .to_owned();
        seen.lock().unwrap().push(format!("{} {} host={host}", request[0], request[1]));
        let body = format!("served {host}");
        let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        if socket.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A proxy on the host's loopback allowing `ok.test`; `ok.test` and `bad.test` are both pinned
/// to the front end's address, so only the proxy's check keeps `bad.test` out.
fn proxy() -> SessionProxy {
    let config = ProxyConfig {
        rules: DomainRules::new(["ok.test".to_owned()], []),
        resolver: Resolver::new([("ok.test", "127.0.0.1"), ("bad.test", "127.0.0.1")]).unwrap(),
        ..ProxyConfig::default()
    };
    SessionProxy::start(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), config).unwrap()
}

/// Sends `request` (with `P` replaced by the front end's port) through a fresh proxy in one
/// write, reads the answer to its end, and checks that the answer contains `answer` and that
/// exactly `reached` got to the front end.
#[track_caller]
fn check(request: &[u8], answer: &str, reached: &[&str]) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (port, seen) = front().await;
        let proxy = proxy();
        let request = String::from_utf8_lossy(request).replace(":P", &format!(":{port}"));
        let mut request = request.into_bytes();
        // A ClientHello placeholder: the bytes after `HELLO ` name the SNI and the shape. The
        // client then ends its side, so the front end knows it has all there is.
        let hello = request.windows(6).position(|w| w == b"HELLO ");
        if let Some(at) = hello {
            let spec = String::from_utf8_lossy(&request[at + 6..]).into_owned();
            request.truncate(at);
            request.extend_from_slice(&hello_from(&spec));
        }
        let mut client = TcpStream::connect(("127.0.0.1", proxy.port())).await.unwrap();
        client.write_all(&request).await.unwrap();
        if hello.is_some() {
            client.shutdown().await.unwrap();
        }
        // To the end of the connection; a tunnel cut with bytes unread ends in a reset.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let read_all = async {
            while let Ok(n @ 1..) = client.read(&mut buf).await {
                got.extend_from_slice(&buf[..n]);
            }
        };
        // The proxy ends every connection these requests open (a refusal, `Connection:
        // close`); one left open is reported below with what came back meanwhile.
        let ended = tokio::time::timeout(Duration::from_secs(10), read_all).await.is_ok();
        let got = String::from_utf8_lossy(&got);
        let reached: Vec<String> =
            reached.iter().map(|line| line.replace(":P", &format!(":{port}"))).collect();
        let sent = String::from_utf8_lossy(&request);
        assert_eq!(*seen.lock().unwrap(), reached, "what reached the front end for {sent:?}");
        let answer = answer.replace(":P", &format!(":{port}"));
        assert!(got.contains(&answer), "expected {answer:?} in {got:?}");
        assert!(ended, "the proxy left the connection open after {got:?}");
    });
}

/// `NAME RECORD PADDING`: a ClientHello naming NAME (`-` for none), cut into records of RECORD
/// bytes, with PADDING bytes of padding.
fn hello_from(spec: &str) -> Vec<u8> {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let name = Some(parts[0]).filter(|name| *name != "-");
    client_hello(name, parts[1].parse().unwrap(), parts[2].parse().unwrap())
}

#[test]
fn a_host_header_reaches_only_the_checked_name() {
    // The attack: the target is allowed, the Host names another host behind the same front end.
    check(
        b"GET http://ok.test:P/c HTTP/1.1\r\nHost: bad.test:P\r\n\r\n",
        "Host header names `bad.test:P` but the request is for `ok.test:P`",
        &[],
    );
    check(b"GET http://ok.test:P/c HTTP/1.1\r\nHost: bad.test\r\n\r\n", "403 Forbidden", &[]);
    check(
        b"GET http://ok.test:P/c HTTP/1.1\r\nHost: ok.test:P\r\nHost: bad.test:P\r\n\r\n",
        "the request carries two Host headers",
        &[],
    );
    // The controls: the same name, however spelled, and no Host at all, reach it as `ok.test:P`.
    check(
        b"GET http://ok.test:P/c HTTP/1.1\r\nHost: ok.test:P\r\nConnection: close\r\n\r\n",
        "served ok.test:P",
        &["GET /c host=ok.test:P"],
    );
    check(
        b"GET http://OK.test.:P/c HTTP/1.1\r\nHost: Ok.Test.:P\r\nConnection: close\r\n\r\n",
        "served ok.test:P",
        &["GET /c host=ok.test:P"],
    );
    check(
        b"GET http://ok.test:P/c HTTP/1.0\r\n\r\n",
        "served ok.test:P",
        &["GET /c host=ok.test:P"],
    );
}

#[test]
fn every_request_of_a_kept_alive_connection_is_checked() {
    let first = "GET http://ok.test:P/one HTTP/1.1\r\nHost: ok.test:P\r\n\r\n";
    let check2 = |second: &str, answer: &str, reached: &[&str]| {
        check(format!("{first}{second}").as_bytes(), answer, reached);
    };
    // The attacks: a second request to an unlisted name, in absolute and in origin form.
    check2(
        "GET http://bad.test:P/two HTTP/1.1\r\nHost: bad.test:P\r\n\r\n",
        "`bad.test` is not on the network allow-list",
        &["GET /one host=ok.test:P"],
    );
    check2(
        "GET /two HTTP/1.1\r\nHost: bad.test:P\r\n\r\n",
        "400 Bad Request",
        &["GET /one host=ok.test:P"],
    );
    // A body's length decides where the next request starts: the "body" below is a request.
    check2(
        "POST http://ok.test:P/form HTTP/1.1\r\nHost: ok.test:P\r\nContent-Length: 0\r\n\r\nGET http://bad.test:P/smuggled HTTP/1.1\r\nHost: bad.test:P\r\n\r\n",
        "`bad.test` is not on the network allow-list",
        &["GET /one host=ok.test:P", "POST /form host=ok.test:P"],
    );
    // The control: a second request to the allowed name goes through on the same connection.
    check2(
        "GET http://ok.test:P/two HTTP/1.1\r\nHost: ok.test:P\r\nConnection: close\r\n\r\n",
        "served ok.test:P",
        &["GET /one host=ok.test:P", "GET /two host=ok.test:P"],
    );
}

#[test]
fn a_tunnel_carries_only_the_allowed_name() {
    let connect = "CONNECT ok.test:P HTTP/1.1\r\nHost: ok.test:P\r\n\r\n";
    let tunnel = |inside: &str, answer: &str, reached: &[&str]| {
        check(format!("{connect}{inside}").as_bytes(), answer, reached);
    };
    // TLS: the server name must be the allowed host, however the ClientHello is cut.
    tunnel("HELLO bad.test 16384 0", "200", &[]);
    tunnel("HELLO bad.test 16384 20000", "200", &[]);
    tunnel("HELLO bad.test 9 0", "200", &[]);
    tunnel("HELLO ok.test 16384 40000", "200", &[]);
    tunnel("HELLO ok.test 16384 0", "200", &["tls 68 bytes"]);
    tunnel("HELLO ok.test 9 0", "200", &["tls 98 bytes"]);
    tunnel("HELLO ok.test 16384 20000", "200", &["tls 20077 bytes"]);
    tunnel("HELLO - 16384 0", "200", &["tls 52 bytes"]);
    // Plain HTTP inside the tunnel: every request is checked against the tunnel's name.
    tunnel("GET / HTTP/1.1\r\nHost: bad.test:P\r\n\r\n", "the Host header names `bad.test:P`", &[]);
    tunnel(
        "GET http://bad.test:P/ HTTP/1.1\r\n\r\n",
        "inside a tunnel opened for `ok.test:P`",
        &[],
    );
    tunnel(
        "GET / HTTP/1.1\r\nHost: ok.test:P\r\nConnection: close\r\n\r\n",
        "served ok.test:P",
        &["GET / host=ok.test:P"],
    );
}

/// A ClientHello naming `host` (or none), its handshake message cut into records of at most
/// `record` bytes, with `padding` bytes of the padding extension (RFC 7685).
fn client_hello(host: Option<&str>, record: usize, padding: usize) -> Vec<u8> {
    let mut extensions = Vec::new();
    if let Some(host) = host {
        let name = host.as_bytes();
        let mut list = vec![0u8];
        list.extend_from_slice(&(name.len() as u16).to_be_bytes());
        list.extend_from_slice(name);
        extensions.extend_from_slice(&[0, 0]);
        extensions.extend_from_slice(&(list.len() as u16 + 2).to_be_bytes());
        extensions.extend_from_slice(&(list.len() as u16).to_be_bytes());
        extensions.extend_from_slice(&list);
    }
    if padding > 0 {
        extensions.extend_from_slice(&[0, 21]);
        extensions.extend_from_slice(&(padding as u16).to_be_bytes());
        extensions.resize(extensions.len() + padding, 0);
    }
    let mut body = vec![3, 3];
    body.extend_from_slice(&[7u8; 32]);
    body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
    body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    body.extend_from_slice(&extensions);
    let len = body.len();
    let mut message = vec![1, (len >> 16) as u8, (len >> 8) as u8, len as u8];
    message.extend_from_slice(&body);
    let mut records = Vec::new();
    for fragment in message.chunks(record) {
        records.extend_from_slice(&[0x16, 3, 1]);
        records.extend_from_slice(&(fragment.len() as u16).to_be_bytes());
        records.extend_from_slice(fragment);
    }
    records
}
