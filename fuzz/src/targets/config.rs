//! Config files: the CLI reads them with `toml` and edits them (`agent mcp add/remove`) with
//! `toml_edit`.

/// The two parsers accept the same files; an accepted file, printed by the editor unchanged,
/// is the same text (up to line ends and a final newline), and parses to the same table.
pub(super) fn toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let read = ::toml::from_str::<::toml::Table>(text);
    let edited = text.parse::<toml_edit::DocumentMut>();
    assert_eq!(read.is_ok(), edited.is_ok(), "toml: {read:?}\ntoml_edit: {edited:?}");
    let (Ok(table), Ok(document)) = (read, edited) else { return };
    // toml_edit writes LF line ends and a final newline (the campaign's five config "crashes",
    // docs/BENCHMARKS.md): the text is otherwise kept byte for byte.
    let printed = document.to_string();
    let plain = |text: &str| {
        let mut text = text.replace("\r\n", "\n");
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    };
    assert_eq!(plain(&printed), plain(text), "the editor changed a file it did not edit");
    assert_eq!(::toml::from_str::<::toml::Table>(&printed).ok(), Some(table));
}
