//! The loopback web site `web_fetch` reads during the soak: `/page/N` answers a small HTML page
//! at once, `/slow/N` after a pause (a slow server), `/drop/N` closes the connection without
//! answering (a dropped connection).

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    time::Duration,
};

/// How long `/slow/…` waits before it answers: long enough that the fetch is in flight while
/// the server stalls, short enough for hundreds of sessions.
const SLOW: Duration = Duration::from_millis(1500);

/// A running site; its thread lives as long as the soak.
pub(crate) struct Site {
    pub(crate) port: u16,
}

impl Site {
    pub(crate) fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || serve(stream));
            }
        });
        Ok(Self { port })
    }
}

fn serve(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    if path.starts_with("/drop/") {
        return;
    }
    if path.starts_with("/slow/") {
        std::thread::sleep(SLOW);
    }
    let body = format!(
        "<!doctype html><html><head><title>soak {path}</title></head><body><nav>menu</nav>\
         <main><h1>Soak page</h1><p>This is {path}, served on the loopback.</p></main></body></html>"
    );
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}
