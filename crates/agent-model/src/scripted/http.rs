//! Just enough HTTP/1.1 for the scripted server: one request per connection, then close.
//!
//! The server writes its own bytes instead of using hyper because fault injection needs
//! byte-level control: a TCP reset in the middle of a chunked body, a body that ends cleanly with no
//! terminal event, a deliberately broken event.

use std::io;

use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
};

/// The longest request head and body the server accepts.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 32 * 1024 * 1024;

/// A request as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path, such as `/v1/chat/completions`.
    pub path: String,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body text.
    pub body: String,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }

    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

/// Reads one request (head and a `content-length` or chunked body).
pub(crate) async fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<RecordedRequest> {
    let mut line = String::new();
    let mut head_size = reader.read_line(&mut line).await?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err(invalid("bad request line"));
    };
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        let read = reader.read_line(&mut line).await?;
        head_size += read;
        if read == 0 || head_size > MAX_HEAD {
            return Err(invalid("request head too long or cut"));
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let find = |name: &str| headers.iter().find(|(key, _)| key == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|value| value.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line).await?;
            let size =
                usize::from_str_radix(line.trim(), 16).map_err(|_| invalid("bad chunk size"))?;
            if body.len() + size > MAX_BODY {
                return Err(invalid("body too large"));
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).await?;
            line.clear();
            reader.read_line(&mut line).await?;
            if size == 0 {
                break;
            }
        }
    } else if let Some(length) = find("content-length") {
        let length: usize = length.parse().map_err(|_| invalid("bad content-length"))?;
        if length > MAX_BODY {
            return Err(invalid("body too large"));
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).await?;
    }
    Ok(RecordedRequest { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)]) -> String {
    let mut text = format!("HTTP/1.1 {status} {}\r\nconnection: close\r\n", reason(status));
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text
}

/// Writes a whole response.
pub(crate) async fn write_whole(
    stream: &mut TcpStream,
    status: u16,
    mut headers: Vec<(String, String)>,
    body: &str,
) -> io::Result<()> {
    headers.push(("content-length".into(), body.len().to_string()));
    stream.write_all(head(status, &headers).as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

/// Writes the head of a chunked (streamed) response.
pub(crate) async fn write_stream_head(
    stream: &mut TcpStream,
    mut headers: Vec<(String, String)>,
) -> io::Result<()> {
    headers.push(("content-type".into(), "text/event-stream; charset=utf-8".into()));
    headers.push(("cache-control".into(), "no-cache".into()));
    headers.push(("transfer-encoding".into(), "chunked".into()));
    stream.write_all(head(200, &headers).as_bytes()).await?;
    stream.flush().await
}

/// Writes one chunk of a streamed body.
pub(crate) async fn write_chunk(stream: &mut TcpStream, data: &str) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    stream.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes()).await?;
    stream.flush().await
}

/// Ends a streamed body cleanly.
pub(crate) async fn write_end(stream: &mut TcpStream) -> io::Result<()> {
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await
}

/// Drops the connection with a TCP reset instead of a clean close.
pub(crate) fn reset(stream: TcpStream) {
    // A zero linger makes the kernel send RST on close, which is what a crashed server or a
    // broken proxy looks like to the client.
    let _ = stream.set_zero_linger();
    drop(stream);
}
