//! Config files: the CLI reads them with `toml` and edits them (`agent mcp add/remove`) with
//! `toml_edit`.

/// The two parsers accept the same files; an accepted file, printed by the editor unchanged,
/// is the same text, and parses to the same table.
pub(super) fn toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let read = ::toml::from_str::<::toml::Table>(text);
    let edited = text.parse::<toml_edit::DocumentMut>();
    assert_eq!(read.is_ok(), edited.is_ok(), "toml: {read:?}\ntoml_edit: {edited:?}");
    let (Ok(table), Ok(document)) = (read, edited) else { return };
    let printed = document.to_string();
    assert_eq!(printed, text, "the editor changed a file it did not edit");
    assert_eq!(::toml::from_str::<::toml::Table>(&printed).ok(), Some(table));
}
