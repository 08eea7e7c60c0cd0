//! Entry point for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): the LSP framing codec
//! fed a server's output in chunks.

use bytes::BytesMut;
use serde_json::Value;
use tokio_util::codec::Decoder as _;

use crate::codec::LspCodec;

/// The messages `chunks` (appended one after another) decode to under a body cap of `max_body`,
/// then the error that ended decoding, if one did; and the largest capacity the read buffer
/// reached, which the cap bounds.
pub fn decode(chunks: &[&[u8]], max_body: usize) -> (Vec<Value>, Option<std::io::Error>, usize) {
    let mut codec = LspCodec { max_body };
    let mut buffer = BytesMut::new();
    let mut messages = Vec::new();
    let mut largest = 0;
    for chunk in chunks {
        buffer.extend_from_slice(chunk);
        loop {
            let decoded = codec.decode(&mut buffer);
            largest = largest.max(buffer.capacity());
            match decoded {
                Ok(Some(message)) => messages.push(message),
                Ok(None) => break,
                Err(error) => return (messages, Some(error), largest),
            }
        }
    }
    (messages, None, largest)
}
