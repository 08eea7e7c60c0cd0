//! The model's answer as a terminal shows it: Markdown rendered while it streams, one block at a
//! time, so nothing already printed is ever drawn again.
//!
//! The stream cuts the text into pieces at block boundaries that can be decided from the text
//! seen so far (outside a code fence: a line starting in the first column after a blank line or
//! a closing fence, a list item in the first column, a fence in the first column), and prints
//! each piece once it is complete; a code block fenced in the first column prints line by line.
//! Rendering a whole answer cuts it at the same places, so streamed and whole output are the
//! same byte for byte, however the text was split into deltas. See docs/cli.md ("Rendered
//! answers").

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
    /// The text of the piece not yet printed (in a streamed code block: its unfinished line).
    pending: String,
    /// Where the current, incomplete line starts in `pending`.
    line_start: usize,
    /// How far the current line was searched for its end.
    searched: usize,
    /// Whether the current line's first character was looked at.
    line_checked: bool,
    /// Whether the last complete line ended a block (a blank line, or a closing fence).
    after_block: bool,
    /// The open code fence inside the piece: its character and length.
    fence: Option<Fence>,
    /// The open code fence of a block printed line by line (one opened in the first column,
    /// which nothing can contain).
    code: Option<Fence>,
    /// Whether a block was printed, so the next one is set off by a blank line.
    printed: bool,
    /// Whether the last piece printed ended with a list.
    ended_in_list: bool,
    /// Whether the next piece continues the list the last one ended with (no blank line).
    join_next: bool,
}

/// A code fence: its character (`` ` `` or `~`) and length.
type Fence = (char, usize);

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
            code: None,
            printed: false,
            ended_in_list: false,
            join_next: false,
        }
    }

    /// Takes a delta; returns what can be printed now (complete blocks, and complete lines of
    /// a code block), possibly nothing.
    pub(crate) fn push(&mut self, delta: &str) -> String {
        // The model's text never moves the cursor or changes colours on its own: control
        // characters other than newline and tab are made visible (`crate::terminal`); a carriage
        // return, which a model may send before its newlines, is dropped.
        let delta = delta.replace('\r', "");
        self.pending.push_str(&crate::terminal::visible(&delta));
        let mut out = String::new();
        while let Some(first) = self.pending[self.line_start..].chars().next() {
            if !self.line_checked && self.code.is_none() {
                self.line_checked = true;
                if self.after_block && !first.is_whitespace() {
                    let piece: String = self.pending.drain(..self.line_start).collect();
                    self.searched -= self.line_start;
                    self.line_start = 0;
                    out.push_str(&self.print(&piece));
                }
            }
            let Some(found) = self.pending[self.searched..].find('\n') else {
                self.searched = self.pending.len();
                break;
            };
            let end = self.searched + found;
            let start = self.line_start;
            let text = &self.pending[start..end];
            let line = text.strip_suffix('\r').unwrap_or(text).to_owned();
            self.line_checked = false;
            if let Some(fence) = self.code {
                // A streamed code block keeps only its unfinished line pending.
                self.pending.drain(..=end);
                self.line_start = 0;
                self.searched = 0;
                if closes(&line, fence) {
                    self.code = None;
                    self.after_block = true;
                } else {
                    out.push_str(&printer::code_line(&line, self.screen));
                }
            } else if self.fence.is_none()
                && let Some(fence) = opener(&line).filter(|(_, indent)| *indent == 0)
            {
                // A fence in the first column ends whatever came before (it may interrupt a
                // paragraph or a list), and nothing contains it: its lines print as they come.
                let rest = self.pending.split_off(end + 1);
                self.pending.truncate(start);
                let piece = std::mem::replace(&mut self.pending, rest);
                out.push_str(&self.print(&piece));
                self.line_start = 0;
                self.searched = 0;
                if std::mem::replace(&mut self.printed, true) {
                    out.push('\n');
                }
                self.code = Some(fence.0);
                self.after_block = false;
            } else {
                let mut end = end;
                if self.fence.is_none() && start > 0 && starts_item(&line) {
                    // An item in the first column starts a new item of a top-level list: what
                    // came before is complete, so a list prints an item at a time.
                    let rest = self.pending.split_off(start);
                    let piece = std::mem::replace(&mut self.pending, rest);
                    out.push_str(&self.print(&piece));
                    self.join_next = self.ended_in_list;
                    end -= start;
                }
                self.after_block = ends_block(&line, &mut self.fence);
                self.line_start = end + 1;
                self.searched = end + 1;
            }
        }
        out
    }

    /// The end of the answer: prints what is left, and starts afresh for the next one.
    pub(crate) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let out = match self.code {
            // An unclosed code block ends with the answer, as in CommonMark.
            Some(fence) => {
                let line = rest.strip_suffix('\r').unwrap_or(&rest);
                if line.is_empty() || closes(line, fence) {
                    String::new()
                } else {
                    printer::code_line(line, self.screen)
                }
            }
            None => self.print(&rest),
        };
        *self = Self::new(self.screen);
        out
    }

    fn print(&mut self, piece: &str) -> String {
        let printed = printer::print(piece, self.screen, self.printed && !self.join_next);
        if !printed.text.is_empty() {
            self.printed = true;
            self.ended_in_list = printed.ends_in_list;
            self.join_next = false;
        }
        printed.text
    }
}

/// The fence `line` opens and its indent, if it opens one (up to three spaces of indent, as in
/// CommonMark; a backtick fence's info string may not hold a backtick).
fn opener(line: &str) -> Option<(Fence, usize)> {
    let body = line.trim_start_matches(' ');
    let indent = line.len() - body.len();
    if indent > 3 {
        return None;
    }
    ['`', '~'].into_iter().find_map(|c| {
        let len = body.chars().take_while(|d| *d == c).count();
        let info = &body[len..];
        (len >= 3 && !(c == '`' && info.contains('`'))).then_some(((c, len), indent))
    })
}

/// Whether `line` starts a list item in the first column (`- `, `* `, `+ `, `1. `, `1) `).
/// A line holding `|` may be a table's row, and is left to the parser.
fn starts_item(line: &str) -> bool {
    if line.contains('|') {
        return false;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let marker = match line[digits..].chars().next() {
        Some('.' | ')') if (1..=9).contains(&digits) => digits + 1,
        Some('-' | '*' | '+') if digits == 0 => 1,
        _ => return false,
    };
    line[marker..].is_empty() || line[marker..].starts_with([' ', '\t'])
}

/// Whether `line` closes `fence`: the same character, at least as many, nothing else after.
fn closes(line: &str, (c, len): Fence) -> bool {
    let body = line.trim_start_matches(' ');
    let run = body.chars().take_while(|d| *d == c).count();
    line.len() - body.len() <= 3 && run >= len && body[run..].trim().is_empty()
}

/// Whether `line` (without its newline) ends the block before the next line, keeping track of
/// code fences inside a piece: a blank line outside a fence does, and so does a closing fence.
fn ends_block(line: &str, fence: &mut Option<Fence>) -> bool {
    if let Some(open) = *fence {
        let closed = closes(line, open);
        if closed {
            *fence = None;
        }
        return closed;
    }
    if line.trim().is_empty() {
        return true;
    }
    if let Some((open, _)) = opener(line) {
        *fence = Some(open);
    }
    false
}

#[cfg(test)]
mod tests;
