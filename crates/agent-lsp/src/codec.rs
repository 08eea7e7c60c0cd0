//! The LSP base protocol's framing (`Content-Length: N\r\n\r\n` and N bytes of JSON) as a
//! tokio-util codec, bounded: a header block over 8 KiB or a body over the cap is an error, so a
//! broken server cannot make us buffer without end.

use std::io;

use bytes::{Buf, BufMut, BytesMut};
use serde_json::Value;
use tokio_util::codec::{Decoder, Encoder};

/// The largest header block accepted.
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// Decodes and encodes one JSON-RPC message per frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LspCodec {
    /// The largest body accepted, in bytes.
    pub(crate) max_body: usize,
}

impl Decoder for LspCodec {
    type Item = Value;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Value>, io::Error> {
        let Some(end) = src.windows(4).position(|w| w == b"\r\n\r\n") else {
            if src.len() > MAX_HEADER_BYTES {
                return Err(invalid("a header block over 8 KiB"));
            }
            return Ok(None);
        };
        let headers = std::str::from_utf8(&src[..end]).map_err(|_| invalid("headers not UTF-8"))?;
        let length = headers
            .split("\r\n")
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse())
            })
            .ok_or_else(|| invalid("no Content-Length header"))?
            .map_err(|_| invalid("a Content-Length that is not a number"))?;
        if length > self.max_body {
            return Err(invalid("a message over the size cap"));
        }
        if src.len() < end + 4 + length {
            src.reserve(end + 4 + length - src.len());
            return Ok(None);
        }
        src.advance(end + 4);
        let body = src.split_to(length);
        serde_json::from_slice(&body).map(Some).map_err(|_| invalid("a body that is not JSON"))
    }
}

impl Encoder<Value> for LspCodec {
    type Error = io::Error;

    fn encode(&mut self, item: Value, dst: &mut BytesMut) -> Result<(), io::Error> {
        let body = serde_json::to_vec(&item).map_err(io::Error::other)?;
        dst.put_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        dst.put_slice(&body);
        Ok(())
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the server sent {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &[u8], expect: Result<Option<Value>, ()>) {
        let mut codec = LspCodec { max_body: 64 };
        let mut buf = BytesMut::from(input);
        assert_eq!(codec.decode(&mut buf).map_err(|_| ()), expect);
    }

    #[test]
    fn frames() {
        check(b"Content-Length: 2\r\n\r\n{}", Ok(Some(serde_json::json!({}))));
        check(b"content-length: 2\r\nContent-Type: x\r\n\r\n[]", Ok(Some(serde_json::json!([]))));
        check(b"Content-Length: 4\r\n\r\n{}", Ok(None));
        check(b"Content-Length: 2\r\n", Ok(None));
        check(b"Content-Length: 999\r\n\r\n", Err(()));
        check(b"X: 1\r\n\r\n{}", Err(()));
        check(b"Content-Length: 2\r\n\r\nno", Err(()));
    }

    #[test]
    fn round_trip() {
        let mut codec = LspCodec { max_body: 1024 };
        let mut buf = BytesMut::new();
        let value = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": null});
        codec.encode(value.clone(), &mut buf).unwrap();
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(value));
        assert!(buf.is_empty());
    }
}
