//! The TLS ClientHello a tunnel's client sends first, read strictly: the handshake message is
//! reassembled from however many records carry it (TLS allows a ClientHello split across
//! records, and a padded one must be), within [`MAX_CLIENT_HELLO`] bytes, and its server name
//! (SNI) is taken from a fully parsed message. Anything that is not a well-formed ClientHello
//! within that size is [`Hello::Broken`], and the tunnel is refused: a hello the proxy cannot
//! read would be a hello whose name nobody checked.

/// The largest ClientHello the proxy reads (handshake body). Real ones are a few KiB: about
/// 1.8 KiB with a post-quantum key share, 512 bytes of padding at most from the padding extension.
pub const MAX_CLIENT_HELLO: usize = 32 * 1024;

/// The most bytes of records read to assemble a ClientHello (record headers included), so a
/// hello cut into tiny records is bounded too.
pub(crate) const MAX_FIRST_FLIGHT: usize = 2 * MAX_CLIENT_HELLO;

/// What the first bytes of a TLS tunnel say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Hello {
    /// More bytes are needed to see the whole ClientHello.
    Incomplete,
    /// A complete ClientHello, with its server name if it has one.
    Name(Option<String>),
    /// Not a ClientHello the proxy accepts, and why.
    Broken(&'static str),
}

/// Reads the ClientHello at the start of `data` (which starts with a handshake record).
pub(crate) fn read(data: &[u8]) -> Hello {
    let mut message = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = data.get(at..at + 5) else {
            return more(data);
        };
        if header[0] != 0x16 {
            return Hello::Broken(
                "a record other than a handshake came before the ClientHello ended",
            );
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        // RFC 8446 §5.1: at most 2^14 bytes a record, and no empty handshake fragment.
        if len == 0 || len > 16 * 1024 {
            return Hello::Broken("a handshake record of a length TLS does not allow");
        }
        let Some(fragment) = data.get(at + 5..at + 5 + len) else {
            return more(data);
        };
        message.extend_from_slice(fragment);
        at += 5 + len;
        if message.len() < 4 {
            continue;
        }
        if message[0] != 1 {
            return Hello::Broken("the first handshake message is not a ClientHello");
        }
        let body_len = u32::from_be_bytes([0, message[1], message[2], message[3]]) as usize;
        if body_len > MAX_CLIENT_HELLO {
            return Hello::Broken("the ClientHello is larger than the proxy reads");
        }
        if message.len() >= 4 + body_len {
            return match server_name(&message[4..4 + body_len]) {
                Ok(name) => Hello::Name(name),
                Err(Malformed(why)) => Hello::Broken(why),
            };
        }
    }
}

fn more(data: &[u8]) -> Hello {
    if data.len() > MAX_FIRST_FLIGHT {
        Hello::Broken("the ClientHello is larger than the proxy reads")
    } else {
        Hello::Incomplete
    }
}

struct Malformed(&'static str);

/// A cursor over the ClientHello's body that fails on any length running past its end.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.data.len() {
            return Err(Malformed("a length in the ClientHello runs past its end"));
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    fn len8(&mut self) -> Result<&'a [u8], Malformed> {
        let n = usize::from(self.take(1)?[0]);
        self.take(n)
    }

    fn len16(&mut self) -> Result<&'a [u8], Malformed> {
        let bytes = self.take(2)?;
        self.take(usize::from(u16::from_be_bytes([bytes[0], bytes[1]])))
    }

    fn u16(&mut self) -> Result<u16, Malformed> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }
}

/// The server name of a ClientHello body (RFC 8446 §4.1.2, RFC 6066 §3), every field checked.
fn server_name(body: &[u8]) -> Result<Option<String>, Malformed> {
    let mut hello = Reader { data: body };
    hello.take(2 + 32)?; // legacy version, random
    if hello.len8()?.len() > 32 {
        return Err(Malformed("the ClientHello's session id is longer than 32 bytes"));
    }
    let suites = hello.len16()?;
    if suites.is_empty() || suites.len() % 2 != 0 {
        return Err(Malformed("the ClientHello's cipher suite list is malformed"));
    }
    if hello.len8()?.is_empty() {
        return Err(Malformed("the ClientHello lists no compression method"));
    }
    if hello.data.is_empty() {
        return Ok(None);
    }
    let mut extensions = Reader { data: hello.len16()? };
    if !hello.data.is_empty() {
        return Err(Malformed("bytes follow the ClientHello's extensions"));
    }
    let mut name = None;
    let mut seen = Vec::new();
    while !extensions.data.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.len16()?;
        if seen.contains(&kind) {
            return Err(Malformed("the ClientHello repeats an extension"));
        }
        seen.push(kind);
        if kind == 0 {
            name = host_name(data)?;
        }
    }
    Ok(name)
}

/// The `host_name` entry of a `server_name` extension; one at most (RFC 6066 §3).
fn host_name(data: &[u8]) -> Result<Option<String>, Malformed> {
    let mut outer = Reader { data };
    let mut list = Reader { data: outer.len16()? };
    if !outer.data.is_empty() {
        return Err(Malformed("bytes follow the server name list"));
    }
    let mut name = None;
    while !list.data.is_empty() {
        let kind = list.take(1)?[0];
        let entry = list.len16()?;
        if kind != 0 {
            continue;
        }
        if name.is_some() {
            return Err(Malformed("the ClientHello names two servers"));
        }
        if entry.is_empty() || !entry.iter().all(|b| b.is_ascii_graphic()) {
            return Err(Malformed("the ClientHello's server name is not a host name"));
        }
        name = Some(String::from_utf8_lossy(entry).into_owned());
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello naming `host` (or none), its handshake message cut into records of at most
    /// `record` bytes, with `padding` bytes of the padding extension.
    fn client_hello(host: Option<&str>, padding: usize, record: usize) -> Vec<u8> {
        let mut extensions = Vec::new();
        if let Some(host) = host {
            let name = host.as_bytes();
            let mut entry = vec![0u8];
            entry.extend_from_slice(&u16_len(name.len()));
            entry.extend_from_slice(name);
            let mut list = u16_len(entry.len()).to_vec();
            list.extend_from_slice(&entry);
            extensions.extend_from_slice(&[0, 0]);
            extensions.extend_from_slice(&u16_len(list.len()));
            extensions.extend_from_slice(&list);
        }
        if padding > 0 {
            extensions.extend_from_slice(&[0, 21]);
            extensions.extend_from_slice(&u16_len(padding));
            extensions.resize(extensions.len() + padding, 0);
        }
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7u8; 32]);
        body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&u16_len(extensions.len()));
        body.extend_from_slice(&extensions);
        let len = body.len();
        let mut message = vec![1, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        message.extend_from_slice(&body);
        let mut records = Vec::new();
        for fragment in message.chunks(record.max(1)) {
            records.extend_from_slice(&[0x16, 3, 1]);
            records.extend_from_slice(&u16_len(fragment.len()));
            records.extend_from_slice(fragment);
        }
        records
    }

    fn u16_len(len: usize) -> [u8; 2] {
        u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes()
    }

    #[track_caller]
    fn check(bytes: &[u8], expect: Hello) {
        assert_eq!(read(bytes), expect);
    }

    #[test]
    fn hellos_are_read_whole_or_refused() {
        let name = |n: &str| Hello::Name(Some(n.to_owned()));
        check(&client_hello(Some("ok.test"), 0, 16384), name("ok.test"));
        check(&client_hello(None, 0, 16384), Hello::Name(None));
        // Split across records, and padded past one record: still read whole.
        check(&client_hello(Some("ok.test"), 0, 7), name("ok.test"));
        check(&client_hello(Some("bad.test"), 20_000, 16384), name("bad.test"));
        let whole = client_hello(Some("ok.test"), 0, 16384);
        check(&whole[..whole.len() - 1], Hello::Incomplete);
        check(&whole[..3], Hello::Incomplete);
        let huge = client_hello(Some("ok.test"), 40_000, 16384);
        check(&huge, Hello::Broken("the ClientHello is larger than the proxy reads"));
        let mut alert = whole.clone();
        alert[0] = 0x15;
        check(
            &alert,
            Hello::Broken("a record other than a handshake came before the ClientHello ended"),
        );
        let mut cut = whole;
        cut[8] = cut[8].wrapping_sub(1); // the body claims one byte less than its fields need
        cut[4] = cut[4].wrapping_sub(1);
        check(
            &cut[..cut.len() - 1],
            Hello::Broken("a length in the ClientHello runs past its end"),
        );
    }
}
