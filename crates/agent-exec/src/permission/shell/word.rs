//! Shell words as the shell will see them: quotes removed, expansions noted.

/// A shell word with its quotes removed and what it expands.
pub(crate) struct ScannedWord {
    pub(crate) text: String,
    /// `$( … )` or backticks: another command runs to produce the word.
    pub(crate) substitution: bool,
    /// `$VAR` or a leading `~`: the value is known only when the line runs.
    pub(crate) expands: bool,
}

/// Removes quotes the way the shell does and notes `$( … )`, backticks, `$VAR` and `~`.
pub(crate) fn scan_word(raw: &str) -> ScannedWord {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut out =
        ScannedWord { text: String::with_capacity(raw.len()), substitution: false, expands: false };
    let mut quote = Quote::None;
    let mut chars = raw.chars().peekable();
    if raw.starts_with('~') {
        out.expands = true;
    }
    while let Some(c) = chars.next() {
        match (&quote, c) {
            (Quote::Single, '\'') => quote = Quote::None,
            (Quote::Single, c) => out.text.push(c),
            (Quote::None, '\'') => quote = Quote::Single,
            (Quote::None, '"') => quote = Quote::Double,
            (Quote::Double, '"') => quote = Quote::None,
            (Quote::None, '\\') => {
                if let Some(next) = chars.next() {
                    out.text.push(next);
                }
            }
            (Quote::Double, '\\') => match chars.peek() {
                Some(&next) if matches!(next, '$' | '`' | '"' | '\\' | '\n') => {
                    chars.next();
                    out.text.push(next);
                }
                _ => out.text.push('\\'),
            },
            (_, '`') => {
                out.substitution = true;
                out.text.push(c);
            }
            (_, '$') => {
                match chars.peek() {
                    Some('(') => out.substitution = true,
                    _ => out.expands = true,
                }
                out.text.push(c);
            }
            (_, c) => out.text.push(c),
        }
    }
    out
}
