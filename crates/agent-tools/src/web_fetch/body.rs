//! A response body as it arrives: decoded from its `Content-Encoding` (gzip, deflate) chunk by
//! chunk, with the download limit applied to the decoded bytes, so a small compressed body that
//! expands to gigabytes (a decompression bomb) stops at the limit having cost the limit.

use std::io::{self, Write};

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// The `Accept-Encoding` web_fetch sends: the codings [`Body`] decodes.
pub(crate) const ACCEPT_ENCODING: &str = "gzip, deflate";

/// Why a body cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The server used a content coding web_fetch does not decode.
    #[error(
        "is sent with Content-Encoding `{0}`, which web_fetch does not decode (it asks for {ACCEPT_ENCODING} only)"
    )]
    Unsupported(String),
    /// The body is not valid in its coding.
    #[error("has a body that is not valid {coding}: {source}")]
    Corrupt { coding: &'static str, source: io::Error },
}

/// The decoded bytes, never more than the limit.
struct Capped {
    out: Vec<u8>,
    max: usize,
    /// Whether bytes beyond the limit were offered.
    full: bool,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.max - self.out.len();
        if buf.len() > room {
            self.out.extend_from_slice(&buf[..room]);
            self.full = true;
            // An error stops the decoder at once: nothing past the limit is inflated.
            return Err(io::Error::other("the decoded body reached the download limit"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Decoder {
    Identity(Capped),
    Gzip(MultiGzDecoder<Capped>),
    /// `deflate` before its first two bytes said whether it is zlib-wrapped (as the standard
    /// says) or raw (as some servers send it).
    Deflate(Vec<u8>, Capped),
    Zlib(ZlibDecoder<Capped>),
    Raw(DeflateDecoder<Capped>),
}

/// A body being received.
pub(crate) struct Body {
    decoder: Decoder,
    /// Encoded bytes received.
    received: usize,
    max: usize,
}

impl Body {
    /// A body with the `Content-Encoding` header values `codings`, of at most `max` bytes both
    /// as received and as decoded.
    pub(crate) fn new<'a>(
        codings: impl IntoIterator<Item = &'a str>,
        max: usize,
    ) -> Result<Self, BodyError> {
        let named: Vec<String> = codings
            .into_iter()
            .flat_map(|v| v.split(','))
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity")
            .collect();
        let out = Capped { out: Vec::new(), max, full: false };
        let decoder = match named.as_slice() {
            [] => Decoder::Identity(out),
            [one] if one == "gzip" || one == "x-gzip" => Decoder::Gzip(MultiGzDecoder::new(out)),
            [one] if one == "deflate" => Decoder::Deflate(Vec::new(), out),
            // Codings stacked on each other are rare enough to refuse by name.
            _ => return Err(BodyError::Unsupported(named.join(", "))),
        };
        Ok(Self { decoder, received: 0, max })
    }

    /// Takes in one chunk. `Ok(false)` when the body reached the limit, received or decoded,
    /// and nothing more should be read.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<bool, BodyError> {
        let room = self.max - self.received;
        let (chunk, over) =
            if chunk.len() > room { (&chunk[..room], true) } else { (chunk, false) };
        self.received += chunk.len();
        if let Decoder::Deflate(head, out) = &mut self.decoder {
            head.extend_from_slice(chunk);
            if head.len() < 2 && !over {
                return Ok(true);
            }
            let (head, out) = (std::mem::take(head), std::mem::replace(out, Capped::empty()));
            self.decoder = if is_zlib(&head) {
                Decoder::Zlib(ZlibDecoder::new(out))
            } else {
                Decoder::Raw(DeflateDecoder::new(out))
            };
            return self.feed(&head).map(|more| more && !over);
        }
        self.feed(chunk).map(|more| more && !over)
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<bool, BodyError> {
        let written = match &mut self.decoder {
            Decoder::Identity(out) => out.write_all(bytes),
            Decoder::Gzip(d) => d.write_all(bytes),
            Decoder::Zlib(d) => d.write_all(bytes),
            Decoder::Raw(d) => d.write_all(bytes),
            Decoder::Deflate(..) => Ok(()),
        };
        self.settle(written).map(|()| !self.out().full)
    }

    /// An error of the decoder is the limit being reached, or a corrupt body.
    fn settle(&self, written: io::Result<()>) -> Result<(), BodyError> {
        match written {
            Err(_) if self.out().full => Ok(()),
            Err(source) => Err(BodyError::Corrupt { coding: self.coding(), source }),
            Ok(()) => Ok(()),
        }
    }

    fn out(&self) -> &Capped {
        match &self.decoder {
            Decoder::Identity(out) | Decoder::Deflate(_, out) => out,
            Decoder::Gzip(d) => d.get_ref(),
            Decoder::Zlib(d) => d.get_ref(),
            Decoder::Raw(d) => d.get_ref(),
        }
    }

    fn coding(&self) -> &'static str {
        match &self.decoder {
            Decoder::Identity(_) => "identity",
            Decoder::Gzip(_) => "gzip",
            Decoder::Deflate(..) | Decoder::Zlib(_) | Decoder::Raw(_) => "deflate",
        }
    }

    /// The decoded body, and whether it was cut at the limit. `complete` says whether the whole
    /// encoded body was received: a compressed body cut short is not corrupt, only cut.
    pub(crate) fn finish(mut self, complete: bool) -> Result<(Vec<u8>, bool), BodyError> {
        if let Decoder::Deflate(head, _) = &mut self.decoder {
            // A body of fewer than two bytes: whatever it is, decode it as raw deflate.
            let head = std::mem::take(head);
            if let Decoder::Deflate(_, out) =
                std::mem::replace(&mut self.decoder, Decoder::Identity(Capped::empty()))
            {
                self.decoder = Decoder::Raw(DeflateDecoder::new(out));
            }
            self.feed(&head)?;
        }
        let cut = self.out().full || !complete;
        let finished = match &mut self.decoder {
            Decoder::Identity(_) | Decoder::Deflate(..) => Ok(()),
            Decoder::Gzip(d) if cut => d.flush(),
            Decoder::Zlib(d) if cut => d.flush(),
            Decoder::Raw(d) if cut => d.flush(),
            Decoder::Gzip(d) => d.try_finish(),
            Decoder::Zlib(d) => d.try_finish(),
            Decoder::Raw(d) => d.try_finish(),
        };
        // What was inflated of a body cut short is still worth reading: the flush hands it over,
        // and its error (the missing end of the stream) is expected.
        if !cut {
            self.settle(finished)?;
        }
        let cut = cut || self.out().full;
        let out = match &mut self.decoder {
            Decoder::Identity(out) | Decoder::Deflate(_, out) => out,
            Decoder::Gzip(d) => d.get_mut(),
            Decoder::Zlib(d) => d.get_mut(),
            Decoder::Raw(d) => d.get_mut(),
        };
        Ok((std::mem::take(&mut out.out), cut))
    }
}

impl Capped {
    fn empty() -> Self {
        Self { out: Vec::new(), max: 0, full: false }
    }
}

/// Whether `head` starts a zlib stream (RFC 1950): method 8 and a header checksum that holds.
fn is_zlib(head: &[u8]) -> bool {
    match head {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// Decodes `chunks` sent with `coding` under a limit of `max`.
    #[track_caller]
    fn check(coding: &str, chunks: &[&[u8]], max: usize, expect: (&[u8], bool)) {
        let mut body = Body::new([coding], max).unwrap();
        let mut complete = true;
        for chunk in chunks {
            if !body.push(chunk).unwrap() {
                complete = false;
                break;
            }
        }
        let (out, cut) = body.finish(complete).unwrap();
        assert_eq!((&out[..], cut), expect);
    }

    #[test]
    fn codings_decode_in_any_chunking() {
        let two = [gzip(b"Hello "), gzip(b"world")].concat();
        check("gzip", &[&two], 100, (b"Hello world", false));
        // One byte at a time: headers and the zlib sniff split across chunks.
        let bytes: Vec<&[u8]> = two.chunks(1).collect();
        check("x-gzip", &bytes, 100, (b"Hello world", false));
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(b"zlib text").unwrap();
        let z = z.finish().unwrap();
        check("deflate", &z.chunks(1).collect::<Vec<_>>(), 100, (b"zlib text", false));
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(b"raw text").unwrap();
        check("deflate", &[&raw.finish().unwrap()], 100, (b"raw text", false));
        check("identity", &[b"abc", b"def"], 4, (b"abcd", true));
        // The limit holds for the bytes received and for the bytes decoded from them.
        check("gzip", &[&two], 5, (b"", true));
        let many = gzip(&b"Hello".repeat(1000));
        assert!(many.len() < 100);
        check("gzip", &[&many], 100, (&b"Hello".repeat(20), true));
    }

    #[test]
    fn a_bomb_stops_at_the_limit_having_read_little() {
        // 1 GiB of zeros as 1,024 gzip members of 1 MiB each (about 1 MB on the wire).
        let member = gzip(&vec![0u8; 1 << 20]);
        let mut body = Body::new(["gzip"], 10 << 20).unwrap();
        let mut fed = 0;
        for _ in 0..1024 {
            fed += member.len();
            if !body.push(&member).unwrap() {
                break;
            }
        }
        let (out, cut) = body.finish(false).unwrap();
        assert_eq!((out.len(), cut), (10 << 20, true));
        assert!(fed <= 11 * member.len(), "read {fed} bytes to decode 10 MiB");
    }

    #[test]
    fn unknown_codings_and_corrupt_bodies_are_named() {
        for coding in ["br", "zstd", "compress", "gzip, br"] {
            let err = Body::new([coding], 10).err().unwrap().to_string();
            assert!(err.contains(&format!("Content-Encoding `{coding}`")), "{err}");
        }
        let mut body = Body::new(["gzip"], 100).unwrap();
        let err = match body.push(b"not gzip at all") {
            Err(err) => err,
            Ok(_) => body.finish(true).unwrap_err(),
        }
        .to_string();
        assert!(err.starts_with("has a body that is not valid gzip"), "{err}");
    }
}
