//! How previews look on this terminal: colour or not (`NO_COLOR`, `TERM=dumb`, output that is not
//! a terminal), the width lines are fitted to, and a block of lines capped with a count of what
//! is hidden.

use std::io::IsTerminal as _;

/// Colour and width for text written to stderr, where previews go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    /// Whether to write ANSI colours.
    pub(crate) color: bool,
    /// Columns a line may take.
    pub(crate) width: usize,
    /// Rows of the terminal (a long preview is capped to fit).
    pub(crate) rows: usize,
}

/// Width and height when the terminal does not say (or there is no terminal).
const DEFAULT_WIDTH: usize = 100;
const DEFAULT_ROWS: usize = 30;

impl Style {
    /// The style for stderr now: colours only on a terminal without `NO_COLOR` (any non-empty
    /// value, per no-color.org) or `TERM=dumb`; the width and height the terminal reports.
    pub(crate) fn stderr() -> Self {
        let stderr = std::io::stderr();
        let terminal = stderr.is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|term| term == "dumb");
        let size = terminal.then(|| rustix::termios::tcgetwinsize(&stderr).ok()).flatten();
        let (width, rows) = match size {
            Some(size) if size.ws_col > 0 => (usize::from(size.ws_col), usize::from(size.ws_row)),
            _ => (DEFAULT_WIDTH, DEFAULT_ROWS),
        };
        Self { color: terminal && !no_color && !dumb, width, rows: rows.max(10) }
    }

    /// No colour, `width` columns.
    #[cfg(test)]
    pub(crate) fn plain(width: usize) -> Self {
        Self { color: false, width, rows: DEFAULT_ROWS }
    }

    /// `text` in the colour of `tone`, when colours are on.
    pub(crate) fn paint(&self, tone: Tone, text: &str) -> String {
        let code = match tone {
            Tone::Plain => return text.to_owned(),
            Tone::Added => "32",
            Tone::Removed => "31",
            Tone::Hunk => "36",
            Tone::Header | Tone::Command => "1",
            Tone::Dim => "2",
            Tone::Error => "31;1",
        };
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }
}

/// What a line of a preview is, which decides its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Plain,
    /// A line a change adds (`+`).
    Added,
    /// A line a change removes (`-`).
    Removed,
    /// A diff's `@@` line.
    Hunk,
    /// A diff's `---`/`+++` lines.
    Header,
    /// A command line.
    Command,
    /// Secondary information.
    Dim,
    /// A failure.
    Error,
}

/// Lines of a preview, each with its tone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Block {
    lines: Vec<(Tone, String)>,
}

impl Block {
    pub(crate) fn push(&mut self, tone: Tone, line: String) {
        self.lines.push((tone, line));
    }

    /// Appends the lines of `other`.
    pub(crate) fn extend(&mut self, other: &Block) {
        self.lines.extend(other.lines.iter().cloned());
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The lines indented by two columns, each cut to the width; with `limit`, at most that
    /// many, then a line saying how many are hidden and `hint` (how to see them).
    pub(crate) fn render(&self, style: &Style, limit: Option<usize>, hint: &str) -> String {
        let shown = limit.filter(|&limit| self.lines.len() > limit + 1).unwrap_or(self.lines.len());
        let mut out = String::new();
        for (tone, line) in &self.lines[..shown] {
            out.push_str("  ");
            out.push_str(&style.paint(*tone, &fit(line, style.width.saturating_sub(2))));
            out.push('\n');
        }
        let hidden = self.lines.len() - shown;
        if hidden > 0 {
            let more = format!("… {hidden} more lines ({hint})");
            out.push_str("  ");
            out.push_str(&style.paint(Tone::Dim, &more));
            out.push('\n');
        }
        out
    }

    /// Whether [`Block::render`] with `limit` hides lines.
    pub(crate) fn is_capped(&self, limit: usize) -> bool {
        self.lines.len() > limit + 1
    }
}

/// `line` cut to `width` characters with an ellipsis; tabs become four spaces and other control
/// characters (an escape sequence in a file must not drive the terminal) are made visible
/// ([`crate::terminal`]'s one rule).
pub(crate) fn fit(line: &str, width: usize) -> String {
    let width = width.max(1);
    let mut clean = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\t' => clean.push_str("    "),
            c if c.is_control() => crate::terminal::push_visible(&mut clean, c),
            c => clean.push(c),
        }
    }
    match clean.char_indices().nth(width) {
        None => clean,
        Some(_) => {
            let cut = clean.char_indices().nth(width - 1).map_or(clean.len(), |(i, _)| i);
            format!("{}…", &clean[..cut])
        }
    }
}

/// The first `max` characters of `text` on one line, with an ellipsis when cut: line breaks and
/// tabs become spaces, other control characters are made visible.
pub(crate) fn short(text: &str, max: usize) -> String {
    let mut flat = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => flat.push(' '),
            c => crate::terminal::push_visible(&mut flat, c),
        }
    }
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// `line` broken into pieces of at most `width` characters, at spaces where it can be (a word
/// longer than the width is cut).
pub(crate) fn wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut pieces = Vec::new();
    let mut current = String::new();
    for word in line.split(' ') {
        let extra = usize::from(!current.is_empty());
        if !current.is_empty() && current.chars().count() + extra + word.chars().count() > width {
            pieces.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
        while current.chars().count() > width {
            let cut = current.char_indices().nth(width).map_or(current.len(), |(i, _)| i);
            pieces.push(current[..cut].to_owned());
            current = current[cut..].to_owned();
        }
    }
    if !current.is_empty() || pieces.is_empty() {
        pieces.push(current);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_fitted_and_wrapped() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abcd", 4), "abcd");
        assert_eq!(fit("a\tb\x1b[2J", 20), "a    b␛[2J");
        assert_eq!(wrap("cargo test --all", 10), ["cargo test", "--all"]);
        assert_eq!(wrap("abcdefghij-long", 5), ["abcde", "fghij", "-long"]);
        assert_eq!(wrap("", 5), [""]);
    }

    #[test]
    fn short_flattens_and_cuts() {
        assert_eq!(short(r#"{"path":"a"}"#, 100), r#"{"path":"a"}"#);
        assert_eq!(short("abcdef", 3), "abc…");
        assert_eq!(short("a\nb", 10), "a b");
        assert_eq!(short("a\x1b]0;t\x07", 10), "a␛]0;t␇");
        assert_eq!(short("ßßßß", 2), "ßß…");
    }

    #[test]
    fn long_blocks_say_what_is_hidden() {
        let mut block = Block::default();
        for n in 0..10 {
            block.push(Tone::Added, format!("line {n}"));
        }
        let text = block.render(&Style::plain(80), Some(3), "v shows all");
        assert_eq!(text, "  line 0\n  line 1\n  line 2\n  … 7 more lines (v shows all)\n");
        // Hiding one line would take as much room as showing it.
        assert_eq!(block.render(&Style::plain(80), Some(9), "").lines().count(), 10);
        let colored = Style { color: true, ..Style::plain(80) };
        assert!(block.render(&colored, None, "").starts_with("  \x1b[32mline 0\x1b[0m\n"));
    }
}
