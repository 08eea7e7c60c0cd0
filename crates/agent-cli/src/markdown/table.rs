//! Laying out a Markdown table in the columns a terminal has: natural widths when they fit,
//! otherwise the widest columns shrink and their cells wrap.

use pulldown_cmark::Alignment;
use unicode_width::UnicodeWidthStr;

use super::wrap::{Span, Style, width, wrap};

/// A table as parsed: the column alignments, and rows of cells (the first row is the header
/// when `header` is set).
#[derive(Debug, Default)]
pub(super) struct Table {
    pub(super) aligns: Vec<Alignment>,
    pub(super) rows: Vec<Vec<Vec<Span>>>,
    pub(super) header: bool,
}

/// Columns narrower than this are not shrunk further; a table that still does not fit is
/// wider than the terminal, which wraps it.
const MIN_COLUMN: usize = 3;

/// Between two cells.
const SEPARATOR: &str = " │ ";

impl Table {
    /// The table's lines, at most `max` columns wide where the columns can shrink that far.
    pub(super) fn lines(&self, max: usize) -> Vec<Vec<Span>> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return Vec::new();
        }
        let widths = self.widths(columns, max);
        let rule = Style { dim: true, ..Style::default() };
        let mut lines = Vec::new();
        for (index, row) in self.rows.iter().enumerate() {
            let heading = self.header && index == 0;
            let cells: Vec<Vec<Vec<Span>>> = (0..columns)
                .map(|column| {
                    let mut cell = row.get(column).cloned().unwrap_or_default();
                    if heading {
                        cell.iter_mut().for_each(|span| span.style.bold = true);
                    }
                    wrap(&cell, widths[column])
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for line in 0..height {
                let mut spans = Vec::new();
                for (column, cell) in cells.iter().enumerate() {
                    if column > 0 {
                        spans.push(Span::new(SEPARATOR, rule));
                    }
                    let text = cell.get(line).cloned().unwrap_or_default();
                    let last = column + 1 == columns;
                    spans.extend(self.pad(text, widths[column], column, last));
                }
                lines.push(spans);
            }
            if heading {
                let dashes: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                lines.push(vec![Span::new(dashes.join("─┼─"), rule)]);
            }
        }
        lines
    }

    /// Each column's width: its widest cell when the table fits in `max`, otherwise the widest
    /// columns shrink one column at a time until it fits or none can shrink further.
    fn widths(&self, columns: usize, max: usize) -> Vec<usize> {
        let mut widths: Vec<usize> = (0..columns)
            .map(|column| {
                let cells = self.rows.iter().filter_map(|row| row.get(column));
                cells.map(|cell| width(cell)).max().unwrap_or(0).max(1)
            })
            .collect();
        let budget = max.saturating_sub(SEPARATOR.width() * (columns - 1));
        while widths.iter().sum::<usize>() > budget {
            let Some((widest, _)) = widths
                .iter()
                .enumerate()
                .filter(|(_, w)| **w > MIN_COLUMN)
                .max_by_key(|(_, w)| **w)
            else {
                break;
            };
            widths[widest] -= 1;
        }
        widths
    }

    /// A cell's line padded to `wide` columns by the column's alignment; the last column gets
    /// no trailing spaces.
    fn pad(&self, mut text: Vec<Span>, wide: usize, column: usize, last: bool) -> Vec<Span> {
        let room = wide.saturating_sub(width(&text));
        let (before, after) = match self.aligns.get(column) {
            Some(Alignment::Right) => (room, 0),
            Some(Alignment::Center) => (room / 2, room - room / 2),
            _ => (0, room),
        };
        let after = if last { 0 } else { after };
        if before > 0 {
            text.insert(0, Span::new(" ".repeat(before), Style::default()));
        }
        if after > 0 {
            text.push(Span::new(" ".repeat(after), Style::default()));
        }
        text
    }
}
