//! Which addresses are off limits to the agent's own network clients, and every way of spelling
//! one.
//!
//! `web_fetch` and the session proxy refuse, unless the user opened them, every address that is
//! not a public unicast one: a page must not be able to send the agent to the metadata service,
//! the router or a database on the user's loopback. The check runs on the address a connection
//! goes to, after resolution, so a name that resolves to `127.0.0.1` is refused like the literal.

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
};

/// What kind of address an IP is, for the SSRF guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// A public unicast address: the only kind reachable without a rule.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`).
    Private,
    /// `169.254/16` (cloud metadata services live here), `fe80::/10`.
    LinkLocal,
    /// `100.64/10`, carrier-grade NAT (RFC 6598).
    SharedNat,
    /// `fc00::/7`.
    UniqueLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// Everything else that is not globally routable: `255.255.255.255`, `240/4`, the
    /// documentation and benchmarking ranges, `192.0.0/24`, `2001:db8::/32`, discard `100::/64`.
    Reserved,
}

impl AddressClass {
    /// Whether a connection may go there without the user's rule.
    pub fn is_public(self) -> bool {
        self == AddressClass::Public
    }

    /// A stable identifier (`loopback`, `private`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AddressClass::Public => "public",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::LinkLocal => "link-local",
            AddressClass::SharedNat => "carrier-grade NAT",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::Multicast => "multicast",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Reserved => "reserved",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of `ip`. IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
/// IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4
/// address inside, since that is where the packets end up.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        (0, _, _) => AddressClass::Unspecified,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => AddressClass::Private,
        (169, 254, _) => AddressClass::LinkLocal,
        (100, 64..=127, _) => AddressClass::SharedNat,
        (224..=239, _, _) => AddressClass::Multicast,
        (240..=255, _, _)
        | (192, 0, 0)
        | (192, 0, 2)
        | (198, 51, 100)
        | (203, 0, 113)
        | (198, 18..=19, _)
        | (192, 88, 99) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let segments = ip.segments();
    if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if segments[0] & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if segments[0] & 0xfe00 == 0xfc00 {
        AddressClass::UniqueLocal
    } else if segments[0] & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else if segments[0] == 0x2001 && segments[1] == 0x0db8
        || segments[..4] == [0x100, 0, 0, 0]
        || segments[0] & 0xffc0 == 0xfec0
    {
        AddressClass::Reserved
    } else if segments[0] & 0xe000 == 0x2000 {
        AddressClass::Public
    } else {
        // Outside 2000::/3 nothing is assigned for global unicast.
        AddressClass::Reserved
    }
}

/// The IPv4 address an IPv6 address stands for, where it stands for one.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // IPv4-mapped and the deprecated IPv4-compatible form (`::1` itself is loopback, `::`
        // unspecified: both are left to the IPv6 rules).
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        // NAT64 well-known prefix.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        // 6to4: the IPv4 address is in bits 16..48.
        [0x2002, hi, lo, ..] => {
            Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8))
        }
        _ => None,
    }
}

/// The address a host name spells, in any of the forms URL parsers and `inet_aton` accept:
/// dotted quads, fewer parts (`127.1`), one number (`2130706433`), hex and octal parts
/// (`0x7f.0.0.1`, `0177.0.0.1`), a trailing dot, and IPv6 in brackets or not
/// (`[::ffff:127.0.0.1]`). `None` for a name.
pub fn parse_host_ip(host: &str) -> Option<IpAddr> {
    let host = host.trim();
    let unbracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    // A zone index (`fe80::1%eth0`) does not change the class.
    let without_zone = unbracketed.split('%').next().unwrap_or(unbracketed);
    if let Ok(v6) = without_zone.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(v6));
    }
    parse_ipv4_loose(host.strip_suffix('.').unwrap_or(host)).map(IpAddr::V4)
}

/// `inet_aton`'s grammar: one to four parts, each decimal, `0x` hex or `0` octal; the last part
/// fills the remaining bytes.
fn parse_ipv4_loose(text: &str) -> Option<Ipv4Addr> {
    if text.is_empty() {
        return None;
    }
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        numbers.push(parse_part(part)?);
    }
    let (last, head) = numbers.split_last()?;
    if head.iter().any(|&n| n > 255) {
        return None;
    }
    let room = 8 * (4 - head.len() as u32);
    if room < 32 && *last >= 1u64 << room {
        return None;
    }
    if *last > u64::from(u32::MAX) {
        return None;
    }
    let mut value: u64 = *last;
    for (index, &n) in head.iter().enumerate() {
        value |= n << (24 - 8 * index as u32);
    }
    Some(Ipv4Addr::from(u32::try_from(value).ok()?))
}

fn parse_part(part: &str) -> Option<u64> {
    let lower = part.to_ascii_lowercase();
    let (digits, radix) = if let Some(hex) = lower.strip_prefix("0x") {
        (hex.to_owned(), 16)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (lower[1..].to_owned(), 8)
    } else {
        (lower, 10)
    };
    if digits.is_empty() {
        // `0x` alone is zero for `inet_aton`.
        return (radix == 16).then_some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) || digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(&digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(host: &str, expect: Option<AddressClass>) {
        assert_eq!(parse_host_ip(host).map(classify), expect, "{host}");
    }

    #[test]
    fn every_spelling_of_an_internal_address_is_caught() {
        use AddressClass::*;
        check("127.0.0.1", Some(Loopback));
        check("127.1", Some(Loopback));
        check("2130706433", Some(Loopback));
        check("0x7f.0.0.1", Some(Loopback));
        check("0x7f000001", Some(Loopback));
        check("0177.0.0.1", Some(Loopback));
        check("127.0.0.1.", Some(Loopback));
        check("[::1]", Some(Loopback));
        check("[::ffff:127.0.0.1]", Some(Loopback));
        check("[::ffff:7f00:1]", Some(Loopback));
        check("[::127.0.0.1]", Some(Loopback));
        check("[64:ff9b::7f00:1]", Some(Loopback));
        check("[2002:7f00:1::]", Some(Loopback));
        check("10.1.2.3", Some(Private));
        check("172.31.0.1", Some(Private));
        check("192.168.1.1", Some(Private));
        check("[::ffff:192.168.1.1]", Some(Private));
        check("169.254.169.254", Some(LinkLocal));
        check("[fe80::1%25eth0]", Some(LinkLocal));
        check("100.64.0.1", Some(SharedNat));
        check("[fd00::1]", Some(UniqueLocal));
        check("224.0.0.1", Some(Multicast));
        check("[ff02::1]", Some(Multicast));
        check("0.0.0.0", Some(Unspecified));
        check("0", Some(Unspecified));
        check("[::]", Some(Unspecified));
        check("255.255.255.255", Some(Reserved));
        check("192.0.2.1", Some(Reserved));
    }

    #[test]
    fn public_addresses_and_names_are_told_apart() {
        use AddressClass::*;
        check("93.184.215.14", Some(Public));
        check("172.32.0.1", Some(Public));
        check("[2606:4700::1111]", Some(Public));
        check("docs.rs", None);
        check("127.0.0.1.example.com", None);
        check("1.2.3.4.5", None);
        check("256.1.1.1", None);
        check("1.2.65536", None);
        check("0x", Some(Unspecified));
        check("09.1.1.1", None);
    }
}
