//! The model's answer as a terminal shows it: Markdown rendered while it streams, one block at a
//! time, so nothing already printed is ever drawn again.
//!
//! The stream cuts the text into pieces at block boundaries that can be decided from the text
//! seen so far (a line starting in the first column after a blank line or a closing code fence,
//! outside a fence), and prints each piece once it is complete. Rendering a whole answer cuts it
//! at the same places, so streamed and whole output are the same byte for byte, however the
//! text was split into deltas. See docs/cli.md ("Rendered answers").

mod printer;
mod table;
mod wrap;

use std::io::IsTerminal;

/// Where the answer is shown: its width and whether escape codes may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Screen {
    /// Columns to wrap at.
    pub(crate) width: usize,
    /// Styles as escape codes; off with `NO_COLOR`.
    pub(crate) colour: bool,
}

/// Forces (`markdown`) or turns off (`raw`) rendering; unset, answers are rendered only when
/// stdout is a terminal. For tests that drive the binary through a pseudo-terminal or a pipe.
pub(crate) const RENDER_ENV: &str = "AGENT_RENDER";

impl Screen {
    /// The screen of stdout when answers should be rendered there, or `None` for raw text: a
    /// pipe or file gets the model's text unchanged, so scripts see exactly what it wrote.
    pub(crate) fn detect() -> Option<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let stdout = std::io::stdout();
        let render = match var(RENDER_ENV).as_deref() {
            Some("markdown") => true,
            Some("raw") => false,
            _ => stdout.is_terminal(),
        };
        if !render {
            return None;
        }
        // COLUMNS first, as `ls` does, so a user (or a test) can choose the width.
        let width = var("COLUMNS")
            .and_then(|columns| columns.parse::<usize>().ok())
            .or_else(|| {
                let size = rustix::termios::tcgetwinsize(&stdout).ok()?;
                Some(usize::from(size.ws_col))
            })
            .filter(|width| *width > 0)
            .unwrap_or(80);
        let colour = var("NO_COLOR").is_none() && var("TERM").as_deref() != Some("dumb");
        Some(Self { width, colour })
    }
}

/// Renders a whole answer: the same output as streaming it in any number of deltas.
pub(crate) fn render(text: &str, screen: Screen) -> String {
    let mut stream = MarkdownStream::new(screen);
    let mut out = stream.push(text);
    out.push_str(&stream.finish());
    out
}

/// An answer being rendered as its deltas arrive.
#[derive(Debug)]
pub(crate) struct MarkdownStream {
    screen: Screen,
    /// The text of the piece not yet printed.
    pending: String,
    /// Where the current, incomplete line starts in `pending`.
    line_start: usize,
    /// How far the current line was searched for its end.
    searched: usize,
    /// Whether the current line's first character was looked at.
    line_checked: bool,
    /// Whether the last complete line ended a block (a blank line, or a closing fence).
    after_block: bool,
    /// The open code fence: its character and length.
    fence: Option<(char, usize)>,
    /// Whether a block was printed, so the next one is set off by a blank line.
    printed: bool,
}

impl MarkdownStream {
    pub(crate) fn new(screen: Screen) -> Self {
        Self {
            screen,
            pending: String::new(),
            line_start: 0,
            searched: 0,
            line_checked: false,
            after_block: false,
            fence: None,
            printed: false,
        }
    }

    /// Takes a delta; returns what can be printed now (complete blocks), possibly nothing.
    pub(crate) fn push(&mut self, delta: &str) -> String {
        // The model's text never moves the cursor or changes colours on its own: control
        // characters other than newline and tab are dropped.
        self.pending.extend(delta.chars().filter(|c| *c == '\n' || *c == '\t' || !c.is_control()));
        let mut out = String::new();
        loop {
            let line = &self.pending[self.line_start..];
            let Some(first) = line.chars().next() else { break };
            if !self.line_checked {
                self.line_checked = true;
                if self.after_block && !first.is_whitespace() {
                    let piece: String = self.pending.drain(..self.line_start).collect();
                    self.searched -= self.line_start;
                    self.line_start = 0;
                    out.push_str(&self.print(&piece));
                }
            }
            let Some(end) = self.pending[self.searched..].find('\n') else {
                self.searched = self.pending.len();
                break;
            };
            let end = self.searched + end;
            self.after_block = ends_block(&self.pending[self.line_start..end], &mut self.fence);
            self.line_start = end + 1;
            self.searched = self.line_start;
            self.line_checked = false;
        }
        out
    }

    /// The end of the answer: prints what is left, and starts afresh for the next one.
    pub(crate) fn finish(&mut self) -> String {
        let piece = std::mem::take(&mut self.pending);
        let out = self.print(&piece);
        *self = Self::new(self.screen);
        out
    }

    fn print(&mut self, piece: &str) -> String {
        let out = printer::print(piece, self.screen, self.printed);
        self.printed |= !out.is_empty();
        out
    }
}

/// Whether `line` (without its newline) ends the block before the next line, keeping track of
/// code fences: a blank line outside a fence does, and so does a closing fence. Only fences
/// indented less than four columns count, as in CommonMark.
fn ends_block(line: &str, fence: &mut Option<(char, usize)>) -> bool {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let body = line.trim_start_matches(' ');
    let indented = line.len() - body.len() > 3;
    let run = |c: char| body.chars().take_while(|d| *d == c).count();
    if let Some((c, len)) = *fence {
        let closes = !indented && run(c) >= len && body[run(c)..].trim().is_empty();
        if closes {
            *fence = None;
        }
        return closes;
    }
    if line.trim().is_empty() {
        return true;
    }
    if !indented {
        for c in ['`', '~'] {
            let len = run(c);
            // A backtick fence's info string may not hold a backtick (it would be inline code).
            if len >= 3 && !(c == '`' && body[len..].contains('`')) {
                *fence = Some((c, len));
            }
        }
    }
    false
}

#[cfg(test)]
mod tests;
