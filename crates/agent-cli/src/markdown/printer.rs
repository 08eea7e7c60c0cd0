//! Prints one piece of Markdown (a run of complete blocks) for a terminal, from pulldown-cmark's
//! events: styles instead of markers, wrapped to the width, lists and quotes with their own
//! prefixes, code indented, tables laid out.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{
    Screen,
    table::Table,
    wrap::{Span, Style, paint, width, wrap},
};

/// A block that gives the lines inside it a prefix.
#[derive(Debug)]
enum Container {
    /// `│ ` before each line.
    Quote,
    /// A list item: its marker on the first line, as many spaces on the others.
    Item { marker: Option<String>, indent: usize },
}

/// The printer's state while it walks the events of one piece.
struct Printer {
    screen: Screen,
    out: String,
    containers: Vec<Container>,
    /// For each open list, the next item's number (`None` for bullets).
    lists: Vec<Option<u64>>,
    /// The inline text of the block being collected.
    inline: Vec<Span>,
    /// Inline styles open at this point (emphasis, links, …), innermost last.
    styles: Vec<Style>,
    /// For each open link, its target and where its text starts in `inline`.
    links: Vec<(String, usize)>,
    /// The text of the code or HTML block being collected, and whether it is code.
    verbatim: Option<(String, bool)>,
    heading: Option<HeadingLevel>,
    table: Option<Table>,
    /// A blank line is owed before the next block.
    blank: bool,
    /// Whether the last block at the top level was a list.
    last_was_list: bool,
}

/// What printing a piece gave.
pub(super) struct Printed {
    pub(super) text: String,
    /// Whether its last top-level block was a list, so a next piece that starts with an item of
    /// the same list follows it without a blank line.
    pub(super) ends_in_list: bool,
}

const BULLETS: [&str; 3] = ["•", "◦", "▪"];

/// Renders `text` (complete blocks) for `screen`; `blank_first` asks for a blank line before
/// the first block, when something was printed before this piece.
pub(super) fn print(text: &str, screen: Screen, blank_first: bool) -> Printed {
    let mut printer = Printer {
        screen,
        out: String::new(),
        containers: Vec::new(),
        lists: Vec::new(),
        inline: Vec::new(),
        styles: Vec::new(),
        links: Vec::new(),
        verbatim: None,
        heading: None,
        table: None,
        blank: blank_first,
        last_was_list: false,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        printer.event(event);
    }
    printer.flush_inline();
    Printed { text: printer.out, ends_in_list: printer.last_was_list }
}

impl Printer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Html(text) => match &mut self.verbatim {
                Some((block, _)) => block.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(code) => {
                let style = Style { code: true, ..self.style() };
                let text =
                    if self.screen.colour { code.into_string() } else { format!("`{code}`") };
                self.inline.push(Span::new(text, style));
            }
            Event::InlineHtml(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
            | Event::FootnoteReference(text) => self.text(&text),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.open_block();
                let rule = "─".repeat(self.room().min(80));
                self.line(vec![Span::new(rule, Style { dim: true, ..Style::default() })]);
                self.close_block();
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::FootnoteDefinition(_) | Tag::MetadataBlock(_) => {
                self.open_block();
            }
            Tag::Heading { level, .. } => {
                self.open_block();
                self.heading = Some(level);
            }
            Tag::BlockQuote(_) => {
                self.open_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(_) => {
                self.open_block();
                self.verbatim = Some((String::new(), true));
            }
            Tag::HtmlBlock => {
                self.open_block();
                self.verbatim = Some((String::new(), false));
            }
            Tag::List(start) => {
                // A nested list's item text comes first, without a paragraph of its own.
                if self.lists.is_empty() {
                    self.open_block();
                } else {
                    self.flush_inline();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_inline();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        *number += 1;
                        format!("{}. ", *number - 1)
                    }
                    _ => format!("{} ", BULLETS[depth % BULLETS.len()]),
                };
                let indent = width(&[Span::new(marker.clone(), Style::default())]);
                self.containers.push(Container::Item { marker: Some(marker), indent });
            }
            Tag::Table(aligns) => {
                self.open_block();
                self.table = Some(Table { aligns, ..Table::default() });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(|style| style.italic = true),
            Tag::Strong => self.push_style(|style| style.bold = true),
            Tag::Strikethrough => self.push_style(|style| style.strike = true),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links.push((dest_url.into_string(), self.inline.len()));
                self.push_style(|style| style.underline = true);
            }
            Tag::Superscript
            | Tag::Subscript
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::FootnoteDefinition | TagEnd::MetadataBlock(_) => {
                self.flush_inline();
                self.close_block();
            }
            TagEnd::Heading(level) => {
                self.flush_heading(level);
                self.close_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.close_block();
            }
            TagEnd::CodeBlock | TagEnd::HtmlBlock => {
                if let Some((text, code)) = self.verbatim.take() {
                    self.print_verbatim(&text, code);
                }
                self.close_block();
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                self.close_block();
                self.last_was_list = true;
            }
            TagEnd::Item => {
                self.flush_inline();
                // An empty item still shows its marker.
                if let Some(Container::Item { marker: Some(_), .. }) = self.containers.last() {
                    self.line(Vec::new());
                }
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    for line in table.lines(self.room()) {
                        self.line(line);
                    }
                }
                self.close_block();
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header = true;
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(row) = self.table.as_mut().and_then(|table| table.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some((url, start)) = self.links.pop() {
                    let shown: String = self.inline[start.min(self.inline.len())..]
                        .iter()
                        .map(|s| &*s.text)
                        .collect();
                    let same = shown == url || url.strip_prefix("mailto:") == Some(&shown);
                    if !same && !url.is_empty() {
                        let style = Style { dim: true, ..self.style() };
                        self.inline.push(Span::new(format!(" ({url})"), style));
                    }
                }
            }
            TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => {}
        }
    }

    /// The style of text at this point: every open inline style combined.
    fn style(&self) -> Style {
        let mut style = Style::default();
        for open in &self.styles {
            style.bold |= open.bold;
            style.italic |= open.italic;
            style.strike |= open.strike;
            style.underline |= open.underline;
        }
        if self.heading.is_some() {
            style.bold = true;
        }
        style
    }

    fn push_style(&mut self, set: impl FnOnce(&mut Style)) {
        let mut style = Style::default();
        set(&mut style);
        self.styles.push(style);
    }

    fn text(&mut self, text: &str) {
        let style = self.style();
        self.inline.push(Span::new(text, style));
    }

    /// Starts a block: the blank line owed after the previous one.
    fn open_block(&mut self) {
        self.flush_inline();
        if std::mem::take(&mut self.blank) {
            self.blank_line();
        }
    }

    /// Ends a block: a blank line follows it, except between the blocks of a list, which stay
    /// compact.
    fn close_block(&mut self) {
        self.blank = self.lists.is_empty();
        self.last_was_list = false;
    }

    /// Columns left for text after the prefixes of the open containers.
    fn room(&self) -> usize {
        let prefix: usize = self
            .containers
            .iter()
            .map(|container| match container {
                Container::Quote => 2,
                Container::Item { indent, .. } => *indent,
            })
            .sum();
        self.screen.width.saturating_sub(prefix).max(10)
    }

    /// The prefix of the next line; the first line of an item takes its marker.
    fn prefix(&mut self) -> Vec<Span> {
        let bar = Style { dim: true, ..Style::default() };
        let mut spans = Vec::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => spans.push(Span::new("│ ", bar)),
                Container::Item { marker, indent } => match marker.take() {
                    Some(marker) => spans.push(Span::new(marker, Style::default())),
                    None => spans.push(Span::new(" ".repeat(*indent), Style::default())),
                },
            }
        }
        spans
    }

    /// Prints one line after the containers' prefix.
    fn line(&mut self, content: Vec<Span>) {
        let mut spans = self.prefix();
        spans.extend(content);
        self.paint_line(spans);
    }

    /// Paints a line without its trailing spaces (whatever their style).
    fn paint_line(&mut self, spans: Vec<Span>) {
        self.out.push_str(&finish_line(spans, self.screen.colour));
    }

    /// A blank line inside the open quotes (item indents are left out).
    fn blank_line(&mut self) {
        let quotes = self.containers.iter().filter(|c| matches!(c, Container::Quote)).count();
        let bar = Style { dim: true, ..Style::default() };
        self.paint_line((0..quotes).map(|_| Span::new("│ ", bar)).collect());
    }

    /// Prints the collected inline text, wrapped to the room left.
    fn flush_inline(&mut self) {
        if self.inline.is_empty() || self.table.is_some() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        for line in wrap(&spans, self.room()) {
            self.line(line);
        }
    }

    /// Prints a heading: bold (and underlined for the first level) in colour; without colour
    /// the first two levels are underlined with a rule of their own width.
    fn flush_heading(&mut self, level: HeadingLevel) {
        self.heading = None;
        let mut spans = std::mem::take(&mut self.inline);
        if level == HeadingLevel::H1 {
            spans.iter_mut().for_each(|span| span.style.underline = true);
        }
        let lines = wrap(&spans, self.room());
        let widest = lines.iter().map(|line| width(line)).max().unwrap_or(0);
        for line in lines {
            self.line(line);
        }
        if !self.screen.colour {
            let rule = match level {
                HeadingLevel::H1 => "═",
                HeadingLevel::H2 => "─",
                _ => return,
            };
            self.line(vec![Span::new(rule.repeat(widest), Style::default())]);
        }
    }

    /// A code block, indented by four columns and never wrapped (so it copies as it was), or
    /// an HTML block as it was written.
    fn print_verbatim(&mut self, text: &str, code: bool) {
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            let spans = if code {
                code_spans(line)
            } else {
                vec![Span::new(line.replace('\t', "    "), Style::default())]
            };
            self.line(spans);
        }
    }
}

/// One line of a code block: indented by four columns, tabs as four spaces, in the code style.
fn code_spans(line: &str) -> Vec<Span> {
    let style = Style { code: true, ..Style::default() };
    vec![Span::new("    ", Style::default()), Span::new(line.replace('\t', "    "), style)]
}

/// One line of a top-level code block, printed as it streams.
pub(super) fn code_line(line: &str, screen: Screen) -> String {
    finish_line(code_spans(line), screen.colour)
}

/// A line painted without its trailing spaces (whatever their style), and its newline.
fn finish_line(mut spans: Vec<Span>, colour: bool) -> String {
    while let Some(last) = spans.last_mut() {
        let kept = last.text.trim_end_matches(' ').len();
        last.text.truncate(kept);
        if kept > 0 {
            break;
        }
        spans.pop();
    }
    let mut line = paint(&spans, colour);
    line.push('\n');
    line
}
