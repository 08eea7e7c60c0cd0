//! Just enough HTTP/1.1 over a loopback socket to drive `agent serve` from the benchmarks
//! (xtask depends on no HTTP crate): one request per connection, and an SSE reader that decodes
//! the chunked body as it arrives.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use anyhow::{Context, bail};
use serde_json::Value;

/// How long any read waits before the benchmark gives up.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

fn connect(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// `method path` with the token and a JSON body; the status and the JSON answer (`null` when
/// there is none).
pub(super) fn call(
    addr: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let mut stream = connect(addr)?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut reader = BufReader::new(stream);
    let (status, chunked) = head(&mut reader)?;
    let mut text = Vec::new();
    if chunked {
        while let Some(chunk) = chunk(&mut reader)? {
            text.extend(chunk);
        }
    } else {
        reader.read_to_end(&mut text)?;
    }
    Ok((status, serde_json::from_slice(&text).unwrap_or(Value::Null)))
}

/// Reads the status line and headers: the status, and whether the body is chunked.
fn head(reader: &mut impl BufRead) -> anyhow::Result<(u16, bool)> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line.split_whitespace().nth(1).and_then(|code| code.parse().ok());
    let status = status.with_context(|| format!("a bad status line: {line:?}"))?;
    let mut chunked = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            return Ok((status, chunked));
        }
        let lower = line.to_ascii_lowercase();
        chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
    }
}

/// One chunk of a chunked body; `None` at its end.
fn chunk(reader: &mut impl BufRead) -> anyhow::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
        .with_context(|| format!("a bad chunk size: {line:?}"))?;
    let mut data = vec![0; size + 2];
    reader.read_exact(&mut data)?;
    data.truncate(size);
    Ok((size > 0).then_some(data))
}

/// An open event stream.
pub(super) struct Events {
    reader: BufReader<TcpStream>,
    /// Bytes, not text: a chunk may end inside a character.
    buffer: Vec<u8>,
}

impl Events {
    /// Opens the stream of `session` after event `after`.
    pub(super) fn open(
        addr: SocketAddr,
        token: &str,
        session: &str,
        after: u64,
    ) -> anyhow::Result<Self> {
        let mut stream = connect(addr)?;
        write!(
            stream,
            "GET /v1/sessions/{session}/events HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {token}\r\nLast-Event-ID: {after}\r\n\r\n"
        )?;
        let mut reader = BufReader::new(stream);
        let (status, chunked) = head(&mut reader)?;
        if status != 200 || !chunked {
            bail!("the event stream of {session} answered {status}");
        }
        Ok(Self { reader, buffer: Vec::new() })
    }

    /// The next event: its id and its data.
    pub(super) fn next(&mut self) -> anyhow::Result<(u64, Value)> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
                let bytes: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let block = String::from_utf8(bytes)?;
                let mut id = None;
                let mut data = "";
                for line in block.lines() {
                    if let Some(rest) = line.strip_prefix("id:") {
                        id = rest.trim().parse().ok();
                    } else if let Some(rest) = line.strip_prefix("data:") {
                        data = rest.trim_start();
                    }
                }
                let Some(id) = id else { continue };
                return Ok((id, serde_json::from_str(data)?));
            }
            let Some(chunk) = chunk(&mut self.reader)? else { bail!("the event stream ended") };
            self.buffer.extend(chunk);
        }
    }
}
