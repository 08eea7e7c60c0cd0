//! Styled text and greedy word wrapping to a display width, for the Markdown printer.

use unicode_width::UnicodeWidthStr;

/// How a piece of text looks. Painted with SGR escape codes only when colour is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Style {
    pub(super) bold: bool,
    pub(super) italic: bool,
    pub(super) strike: bool,
    pub(super) underline: bool,
    pub(super) dim: bool,
    /// Inline code and code blocks.
    pub(super) code: bool,
}

impl Style {
    /// The escape codes that start this style (empty for plain text).
    fn to_anstyle(self) -> anstyle::Style {
        let mut style = anstyle::Style::new();
        if self.bold {
            style = style.bold();
        }
        if self.italic {
            style = style.italic();
        }
        if self.strike {
            style = style.strikethrough();
        }
        if self.underline {
            style = style.underline();
        }
        if self.dim {
            style = style.dimmed();
        }
        if self.code {
            style = style.fg_color(Some(anstyle::AnsiColor::Cyan.into()));
        }
        style
    }
}

/// Text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) text: String,
    pub(super) style: Style,
}

impl Span {
    pub(super) fn new(text: impl Into<String>, style: Style) -> Self {
        Self { text: text.into(), style }
    }
}

/// The display width of `spans` on one line (wide characters count two columns).
pub(super) fn width(spans: &[Span]) -> usize {
    spans.iter().map(|span| span.text.width()).sum()
}

/// One line of spans as text: with escape codes when `colour`, plain otherwise. Neighbours in
/// the same style share one pair of codes.
pub(super) fn paint(spans: &[Span], colour: bool) -> String {
    let mut merged: Vec<Span> = Vec::new();
    for span in spans.iter().filter(|span| !span.text.is_empty()) {
        match merged.last_mut() {
            Some(last) if last.style == span.style => last.text.push_str(&span.text),
            _ => merged.push(span.clone()),
        }
    }
    let mut line = String::new();
    for span in merged {
        let style = span.style.to_anstyle();
        if colour && style != anstyle::Style::new() {
            line.push_str(&format!("{}{}{}", style.render(), span.text, style.render_reset()));
        } else {
            line.push_str(&span.text);
        }
    }
    line
}

/// A piece of a paragraph between the places where it may wrap.
#[derive(Debug)]
enum Token {
    /// Text that stays together (it may hold several styles, as in `**bold**,`).
    Word(Vec<Span>),
    /// A run of spaces, shown as one space unless the line breaks there.
    Space(Style),
    /// A hard line break.
    Break,
}

fn tokens(spans: &[Span]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word: Vec<Span> = Vec::new();
    let end_word = |word: &mut Vec<Span>, tokens: &mut Vec<Token>| {
        if !word.is_empty() {
            tokens.push(Token::Word(std::mem::take(word)));
        }
    };
    for span in spans {
        for c in span.text.chars() {
            match c {
                '\n' => {
                    end_word(&mut word, &mut tokens);
                    tokens.push(Token::Break);
                }
                ' ' | '\t' => {
                    end_word(&mut word, &mut tokens);
                    if !matches!(tokens.last(), Some(Token::Space(_))) {
                        tokens.push(Token::Space(span.style));
                    }
                }
                c => match word.last_mut() {
                    Some(last) if last.style == span.style => last.text.push(c),
                    _ => word.push(Span::new(c, span.style)),
                },
            }
        }
    }
    end_word(&mut word, &mut tokens);
    tokens
}

/// Wraps `spans` into lines at most `max` columns wide, breaking at spaces; a word wider than a
/// line is cut. Spaces at the start and end of a line are dropped.
pub(super) fn wrap(spans: &[Span], max: usize) -> Vec<Vec<Span>> {
    let max = max.max(1);
    let mut lines = vec![Vec::new()];
    let mut used = 0;
    let mut space: Option<Style> = None;
    for token in tokens(spans) {
        match token {
            Token::Break => {
                lines.push(Vec::new());
                used = 0;
                space = None;
            }
            Token::Space(style) => space = Some(style),
            Token::Word(word) => {
                let wide = width(&word);
                let gap = usize::from(space.is_some() && used > 0);
                if used > 0 && used + gap + wide > max {
                    lines.push(Vec::new());
                    used = 0;
                } else if gap == 1
                    && let (Some(style), Some(line)) = (space, lines.last_mut())
                {
                    line.push(Span::new(" ", style));
                    used += 1;
                }
                space = None;
                for span in word {
                    for c in span.text.chars() {
                        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                        if used > 0 && used + w > max {
                            lines.push(Vec::new());
                            used = 0;
                        }
                        let Some(line) = lines.last_mut() else { continue };
                        match line.last_mut() {
                            Some(last) if last.style == span.style => last.text.push(c),
                            _ => line.push(Span::new(c, span.style)),
                        }
                        used += w;
                    }
                }
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Span {
        Span::new(text, Style::default())
    }

    #[track_caller]
    fn check(spans: &[Span], max: usize, expect: &[&str]) {
        let lines: Vec<String> = wrap(spans, max).iter().map(|line| paint(line, false)).collect();
        assert_eq!(lines, expect);
    }

    #[test]
    fn wraps_at_spaces_and_cuts_long_words() {
        check(&[plain("one two three")], 7, &["one two", "three"]);
        check(&[plain("one  two")], 20, &["one two"]);
        check(&[plain("abcdefghij")], 4, &["abcd", "efgh", "ij"]);
        check(&[plain("a\nb")], 20, &["a", "b"]);
        check(&[plain("日本語の文")], 4, &["日本", "語の", "文"]);
        let bold = Style { bold: true, ..Style::default() };
        check(&[plain("say "), Span::new("bold", bold), plain(", ok")], 9, &["say bold,", "ok"]);
    }

    #[test]
    fn paint_merges_styles_and_is_plain_without_colour() {
        let bold = Style { bold: true, ..Style::default() };
        let spans = [Span::new("a", bold), Span::new(" b", bold), plain(" c")];
        assert_eq!(paint(&spans, false), "a b c");
        assert_eq!(paint(&spans, true), "\u{1b}[1ma b\u{1b}[0m c");
    }
}
