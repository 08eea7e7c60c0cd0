//! Text files as the tools see them: encoding and BOM, line endings, indentation, binary sniffing.
//!
//! Decoding is strict: a file is UTF-8 (with or without BOM) or UTF-16 with a BOM, or it is not
//! text. Nothing is ever decoded lossily, so a tool can never write U+FFFD back over bytes it did
//! not understand.

use std::hash::Hasher;

/// How a text file is encoded on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
}

impl Encoding {
    /// The name shown in read_file's header.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf8Bom => "utf-8 with BOM",
            Encoding::Utf16Le => "utf-16le",
            Encoding::Utf16Be => "utf-16be",
        }
    }
}

/// Why bytes are not shown as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotText {
    /// A known binary format, or NUL bytes near the start.
    Binary(&'static str),
    /// Looks like text but is not valid in any supported encoding.
    Undecodable { offset: usize },
}

impl NotText {
    /// A short description for error messages: `PNG image`, `not valid UTF-8 (byte 12)`.
    pub(crate) fn describe(&self) -> String {
        match self {
            NotText::Binary(kind) => (*kind).to_owned(),
            NotText::Undecodable { offset } => {
                format!("not valid UTF-8 or UTF-16 text: undecodable byte at offset {offset}")
            }
        }
    }
}

/// Decodes file bytes strictly. The BOM is dropped from the returned text and kept in the encoding.
pub(crate) fn decode(bytes: &[u8]) -> Result<(String, Encoding), NotText> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return match std::str::from_utf8(rest) {
            Ok(text) => Ok((text.to_owned(), Encoding::Utf8Bom)),
            Err(err) => Err(NotText::Undecodable { offset: err.valid_up_to() + 3 }),
        };
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return decode_utf16(rest, u16::from_le_bytes).map(|t| (t, Encoding::Utf16Le));
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return decode_utf16(rest, u16::from_be_bytes).map(|t| (t, Encoding::Utf16Be));
    }
    if let Some(kind) = binary_kind(bytes) {
        return Err(NotText::Binary(kind));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok((text.to_owned(), Encoding::Utf8)),
        Err(err) => Err(NotText::Undecodable { offset: err.valid_up_to() }),
    }
}

fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Result<String, NotText> {
    if !bytes.len().is_multiple_of(2) {
        return Err(NotText::Undecodable { offset: bytes.len() + 1 });
    }
    let units = bytes.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    let mut text = String::with_capacity(bytes.len() / 2);
    for (index, ch) in char::decode_utf16(units).enumerate() {
        match ch {
            Ok(ch) => text.push(ch),
            Err(_) => return Err(NotText::Undecodable { offset: 2 + index * 2 }),
        }
    }
    Ok(text)
}

/// Encodes text in `encoding`, adding the BOM back when the encoding has one.
pub(crate) fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf8Bom => {
            let mut out = b"\xEF\xBB\xBF".to_vec();
            out.extend_from_slice(text.as_bytes());
            out
        }
        Encoding::Utf16Le => {
            let mut out = b"\xFF\xFE".to_vec();
            text.encode_utf16().for_each(|u| out.extend_from_slice(&u.to_le_bytes()));
            out
        }
        Encoding::Utf16Be => {
            let mut out = b"\xFE\xFF".to_vec();
            text.encode_utf16().for_each(|u| out.extend_from_slice(&u.to_be_bytes()));
            out
        }
    }
}

/// The type of a binary file from its magic number, or `binary data` when the first 8 KiB hold
/// a NUL byte; `None` for what may be text.
pub(crate) fn binary_kind(bytes: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xFF\xD8\xFF", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\0asm", "WebAssembly module"),
        (b"BZh", "bzip2 archive"),
        (b"\xFD7zXZ\0", "xz archive"),
        (b"7z\xBC\xAF\x27\x1C", "7-zip archive"),
        (b"\x28\xB5\x2F\xFD", "zstd archive"),
        (b"SQLite format 3\0", "SQLite database"),
    ];
    if let Some((_, kind)) = MAGIC.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(kind);
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some("WebP image");
    }
    let head = &bytes[..bytes.len().min(8192)];
    head.contains(&0).then_some("binary data")
}

/// The line-ending style of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eol {
    Lf,
    Crlf,
    Mixed,
    /// A single line without a line ending.
    None,
}

impl Eol {
    pub(crate) fn detect(text: &str) -> Eol {
        let newlines = text.bytes().filter(|&b| b == b'\n').count();
        let crlf = text.matches("\r\n").count();
        match (newlines, crlf) {
            (0, _) => Eol::None,
            (n, c) if c == n => Eol::Crlf,
            (_, 0) => Eol::Lf,
            _ => Eol::Mixed,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Eol::Lf => "LF",
            Eol::Crlf => "CRLF",
            Eol::Mixed => "mixed LF/CRLF",
            Eol::None => "no line ending",
        }
    }

    /// Rewrites the line endings of `text` to this style; mixed or unknown styles keep `text`.
    pub(crate) fn apply(self, text: &str) -> String {
        match self {
            Eol::Crlf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
            Eol::Lf => text.replace("\r\n", "\n"),
            Eol::Mixed | Eol::None => text.to_owned(),
        }
    }
}

/// The indentation style of a text, judged on up to its first 10 000 lines: `tabs`, `4 spaces`,
/// `mixed (tabs and spaces)`, or `none`.
pub(crate) fn indent_style(text: &str) -> String {
    let (mut tabs, mut spaces) = (0usize, Vec::new());
    for line in text.lines().take(10_000) {
        if line.starts_with('\t') {
            tabs += 1;
        } else if line.starts_with(' ') {
            let width = line.len() - line.trim_start_matches(' ').len();
            if line[width..].trim().is_empty() {
                continue;
            }
            spaces.push(width);
        }
    }
    if tabs == 0 && spaces.is_empty() {
        return "none".to_owned();
    }
    if tabs > 0 && !spaces.is_empty() {
        // A few space-indented continuation lines in a tab file (or the reverse) are common; only
        // call it mixed when the minority is more than a tenth.
        let minority = tabs.min(spaces.len());
        if minority * 10 > tabs + spaces.len() {
            return "mixed (tabs and spaces)".to_owned();
        }
        if tabs > spaces.len() {
            return "tabs".to_owned();
        }
    } else if tabs > 0 {
        return "tabs".to_owned();
    }
    let width = [8, 4, 2]
        .into_iter()
        .find(|unit| spaces.iter().filter(|w| *w % unit == 0).count() * 10 >= spaces.len() * 9)
        .unwrap_or(1);
    if width == 1 { "spaces".to_owned() } else { format!("{width} spaces") }
}

/// A hash of file content for staleness checks (not cryptographic: it only has to notice change).
pub(crate) fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// The number of lines in a text: a final line ending does not start another line.
pub(crate) fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    if text.ends_with('\n') { newlines } else { newlines + 1 }
}

/// A byte count for people: `812 B`, `3.4 KB`, `1.2 MB`.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_indent(text: &str, expect: &str) {
        assert_eq!(indent_style(text), expect);
    }

    #[test]
    fn indentation() {
        check_indent("a\n\tb\n\t\tc\n", "tabs");
        check_indent("a\n    b\n        c\n", "4 spaces");
        check_indent("a\n  b\n    c\n", "2 spaces");
        check_indent("a\nb\n", "none");
        check_indent("\ta\n  b\n\tc\n  d\n", "mixed (tabs and spaces)");
    }

    #[test]
    fn round_trips_every_encoding() {
        for encoding in [Encoding::Utf8, Encoding::Utf8Bom, Encoding::Utf16Le, Encoding::Utf16Be] {
            let bytes = encode("straße\r\n", encoding);
            assert_eq!(decode(&bytes), Ok(("straße\r\n".to_owned(), encoding)));
        }
    }

    #[test]
    fn refuses_binary_and_invalid_utf8() {
        assert_eq!(decode(b"\x89PNG\r\n\x1a\n\0\0"), Err(NotText::Binary("PNG image")));
        assert_eq!(decode(b"ab\0c"), Err(NotText::Binary("binary data")));
        assert_eq!(decode(b"caf\xe9 au lait"), Err(NotText::Undecodable { offset: 3 }));
    }

    #[test]
    fn line_endings() {
        assert_eq!(Eol::detect("a\r\nb\r\n"), Eol::Crlf);
        assert_eq!(Eol::detect("a\nb\r\n"), Eol::Mixed);
        assert_eq!(Eol::Crlf.apply("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("a\nb\n"), 2);
    }
}
