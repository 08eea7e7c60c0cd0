//! `edit_file`: replace an exact string, tolerating only whitespace and punctuation drift, and
//! only when the match is unique.

use std::{fmt::Write as _, ops::Range, sync::Arc};

use agent_core::{
    Access, Boundary, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    blocking::{self, io_error},
    change::FileChange,
    closest,
    file_io::FileIo,
    ladder::{self, Outcome, Step},
    observe::{self, Observer},
    paths,
    render::{self, MAX_LINE_CHARS},
    text::{self, Eol},
    tracker::FileTracker,
    write_file::line_changes,
};

/// Lines of context shown around an edit.
const CONTEXT: usize = 3;

/// Input of the `edit_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct EditFileInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told").
    // The file to edit, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// Exact text, without the line-number prefix.
    pub old_string: String,
    // The replacement text (must differ from old_string).
    pub new_string: String,
    // Replace every occurrence instead of requiring a unique one. Default false.
    pub replace_all: Option<bool>,
}

/// Replaces text in a file.
#[derive(Debug, Clone)]
pub struct EditFile {
    tracker: Arc<FileTracker>,
    observer: Observer,
}

impl EditFile {
    /// An edit_file tool checking staleness against `tracker`.
    pub fn new(tracker: Arc<FileTracker>) -> Self {
        Self { tracker, observer: None }
    }

    /// The same tool telling `observer` about every file it changed (diagnostics after edits).
    #[must_use]
    pub fn with_observer(mut self, observer: Option<Arc<dyn agent_core::EditObserver>>) -> Self {
        self.observer = observer;
        self
    }
}

impl TypedTool for EditFile {
    type Input = EditFileInput;
    const NAME: &'static str = "edit_file";

    fn description(&self) -> String {
        "Replaces old_string, which must match one place (or set replace_all), with new_string \
         in a file read with read_file."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::WRITES_FILES
    }

    fn rule_name(&self) -> String {
        "Edit".to_owned()
    }

    fn access(&self, input: &EditFileInput) -> Vec<Access> {
        vec![Access::Write(input.path.clone())]
    }

    async fn run(&self, input: EditFileInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tracker = self.tracker.clone();
        let io = FileIo::of(&ctx);
        let (output, edited) =
            blocking::run(move || edit(&*ctx.workspace, &tracker, &io, input)).await?;
        Ok(observe::append(&self.observer, output, &[edited]).await)
    }
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}

impl EditFile {
    /// What `input` would change, computed exactly as the call would and written nowhere: the
    /// same matching (the relaxation ladder, line endings, re-indentation) and the same checks,
    /// so a front end can show the user the change before approving it. An `Err` is the failure
    /// the call would report.
    pub fn preview(
        &self,
        ws: &dyn Boundary,
        input: &EditFileInput,
    ) -> Result<FileChange, ToolError> {
        let plan = plan(ws, &self.tracker, &FileIo::Disk, input)?;
        Ok(FileChange {
            path: plan.path,
            shown: plan.shown,
            before: Some(plan.content),
            after: plan.updated,
        })
    }
}

/// An edit worked out and not yet written.
struct Plan {
    path: std::path::PathBuf,
    shown: String,
    /// The file's text now.
    content: String,
    /// Its text after the edit.
    updated: String,
    encoding: text::Encoding,
    ranges: Vec<Range<usize>>,
    new_ranges: Vec<Range<usize>>,
    notes: Vec<String>,
}

fn edit(
    ws: &dyn Boundary,
    tracker: &FileTracker,
    io: &FileIo,
    input: EditFileInput,
) -> Result<(ToolOutput, agent_core::EditedFile), ToolError> {
    let Plan { path, shown, content, updated, encoding, ranges, new_ranges, notes } =
        plan(ws, tracker, io, &input)?;
    let bytes = text::encode(&updated, encoding);
    let permissions = std::fs::metadata(&path).ok().map(|meta| meta.permissions());
    io.write(&path, &bytes, permissions)
        .map_err(|err| io_error(&format!("write {shown}"), &err))?;
    tracker.record(&path, &bytes);
    let output =
        ToolOutput::text(success(&shown, &content, &updated, &ranges, &new_ranges, &notes));
    Ok((output, agent_core::EditedFile::changed(path, Some(content))))
}

/// Finds what to replace and builds the new text, checking everything a write would.
fn plan(
    ws: &dyn Boundary,
    tracker: &FileTracker,
    io: &FileIo,
    input: &EditFileInput,
) -> Result<Plan, ToolError> {
    let path = ws.resolve_for_write(&input.path)?;
    let shown = paths::display(ws.root(), &path);
    if input.old_string.is_empty() {
        return Err(invalid(
            "old_string is empty; to create a file or replace all of it, use write_file",
        ));
    }
    if input.old_string == input.new_string {
        return Err(invalid("old_string and new_string are identical; nothing to do"));
    }
    let current = match io.read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(paths::not_found(ws.root(), &input.path, &path));
        }
        Err(err) if path.is_dir() => {
            return Err(invalid(format!("{shown} is a directory ({err}); give a file path")));
        }
        Err(err) => return Err(io_error(&format!("read {shown}"), &err)),
    };
    let (content, encoding) = text::decode(&current).map_err(|why| {
        ToolError::new(
            ToolErrorKind::BinaryFile,
            format!("{shown} is not editable text ({}); it was not changed", why.describe()),
        )
    })?;
    let Some(seen) = tracker.get(&path) else {
        return Err(ToolError::new(
            ToolErrorKind::StaleFile,
            format!(
                "{shown} has not been read in this session; read it with read_file first, then edit"
            ),
        ));
    };
    let fresh = seen.hash == text::content_hash(&current);

    let mut notes = Vec::new();
    let (old_string, new_string) =
        strip_line_numbers(&input.old_string, &input.new_string, &mut notes);
    let replace_all = input.replace_all.unwrap_or(false);
    let outcome = if fresh {
        ladder::find(&content, &old_string, replace_all)
    } else {
        // The file changed under us: edit only what still matches exactly, never a fuzzy guess.
        match ladder::find_at(&content, &old_string, Step::Exact) {
            ranges if ranges.len() == 1 || (replace_all && !ranges.is_empty()) => {
                notes.push("the file changed since your last read; the edit was applied to its current content".to_owned());
                Outcome::Found { step: Step::Exact, ranges }
            }
            _ => {
                let mut message = format!(
                    "{shown} changed since your last read and old_string no longer matches it exactly. Re-read it with read_file, then edit."
                );
                if let Some(candidate) = closest::find(&content, &old_string) {
                    let _ = write!(message, "\n{}", candidate.render(&content, &old_string));
                }
                return Err(ToolError::new(ToolErrorKind::StaleFile, message));
            }
        }
    };
    let (step, ranges) = match outcome {
        Outcome::Found { step, ranges } => (step, ranges),
        Outcome::Ambiguous { ranges, .. } => {
            let lines: Vec<String> =
                ranges.iter().map(|r| ladder::line_of(&content, r.start).to_string()).collect();
            return Err(ToolError::new(
                ToolErrorKind::AmbiguousMatch,
                format!(
                    "old_string matches {} places in {shown} (lines {}). Add surrounding lines to make it unique, or set replace_all=true",
                    ranges.len(),
                    lines.join(", ")
                ),
            ));
        }
        Outcome::NotFound => return Err(not_found(&shown, &content, &old_string)),
    };
    if !step.note().is_empty() {
        notes.push(step.note().to_owned());
    }

    let eol = Eol::detect(&content);
    let mut updated = content.clone();
    let mut new_ranges = Vec::with_capacity(ranges.len());
    let mut shift: isize = 0;
    for range in &ranges {
        let mut replacement = eol.apply(&new_string);
        if step == Step::Indentation {
            replacement = reindent(&content, range.start, &old_string, &replacement);
        }
        let start = (range.start as isize + shift) as usize;
        let end = (range.end as isize + shift) as usize;
        updated.replace_range(start..end, &replacement);
        new_ranges.push(start..start + replacement.len());
        shift += replacement.len() as isize - range.len() as isize;
    }
    Ok(Plan { path, shown, content, updated, encoding, ranges, new_ranges, notes })
}

/// Removes read_file's `   42→` prefixes when every non-empty line of old_string carries one (the
/// model copied them by mistake), and from new_string when it carries them too.
fn strip_line_numbers(old: &str, new: &str, notes: &mut Vec<String>) -> (String, String) {
    fn prefixed(line: &str) -> Option<&str> {
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        rest[digits..].strip_prefix('→')
    }
    fn all_prefixed(s: &str) -> bool {
        s.lines().filter(|l| !l.is_empty()).all(|l| prefixed(l).is_some())
    }
    fn strip(s: &str) -> String {
        s.split_inclusive('\n').map(|line| prefixed(line).unwrap_or(line)).collect()
    }
    if !all_prefixed(old) {
        return (old.to_owned(), new.to_owned());
    }
    notes.push("removed read_file line-number prefixes (`N→`) from old_string".to_owned());
    let new = if !new.is_empty() && all_prefixed(new) { strip(new) } else { new.to_owned() };
    (strip(old), new)
}

/// Re-indents `replacement` for a match found by ignoring indentation: its first line continues
/// the file's existing indentation, and later lines swap old_string's base indent for the file's.
fn reindent(content: &str, match_start: usize, old: &str, replacement: &str) -> String {
    let line_start = content[..match_start].rfind('\n').map_or(0, |i| i + 1);
    let file_indent = &content[line_start..match_start];
    let file_indent: &str =
        &file_indent[..file_indent.len() - file_indent.trim_start_matches([' ', '\t']).len()];
    let old_indent = leading_ws(old.lines().find(|l| !l.trim().is_empty()).unwrap_or(""));
    let tabs = file_indent.starts_with('\t');
    let mut out = String::with_capacity(replacement.len());
    for (index, line) in replacement.split_inclusive('\n').enumerate() {
        if index == 0 {
            out.push_str(line.trim_start_matches([' ', '\t']));
            continue;
        }
        if line.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        let rest = line.strip_prefix(old_indent).unwrap_or(line.trim_start_matches([' ', '\t']));
        let extra = leading_ws(rest);
        out.push_str(file_indent);
        if tabs && !extra.is_empty() && !extra.contains('\t') {
            // Spaces beyond the base indent become tabs, four columns each (the common width).
            let width = 4;
            out.push_str(&"\t".repeat(extra.len().div_ceil(width)));
            out.push_str(&rest[extra.len()..]);
        } else {
            out.push_str(rest);
        }
    }
    out
}

fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn not_found(shown: &str, content: &str, old: &str) -> ToolError {
    let message = match closest::find(content, old) {
        Some(candidate) => {
            format!("old_string not found in {shown}. {}", candidate.render(content, old))
        }
        None => format!(
            "old_string not found in {shown}, and no similar text was found. Re-read the file with read_file and copy the text exactly"
        ),
    };
    ToolError::new(ToolErrorKind::NotFound, message)
}

/// `Edited src/app.rs: 1 replacement at lines 40–47 (+3 −1)` and the first edited region ±3 lines.
fn success(
    shown: &str,
    before: &str,
    after: &str,
    old_ranges: &[Range<usize>],
    new_ranges: &[Range<usize>],
    notes: &[String],
) -> String {
    let spans: Vec<String> = new_ranges
        .iter()
        .map(|r| {
            let first = ladder::line_of(after, r.start);
            let last = ladder::line_of(after, r.end.saturating_sub(1).max(r.start));
            if first == last { first.to_string() } else { format!("{first}–{last}") }
        })
        .collect();
    let (mut added, mut removed) = (0, 0);
    for (old, new) in old_ranges.iter().zip(new_ranges) {
        let (a, r) = line_changes(&before[old.clone()], &after[new.clone()]);
        added += a;
        removed += r;
    }
    let count = new_ranges.len();
    let plural = if count == 1 { "replacement" } else { "replacements" };
    let lines = if spans.len() == 1 && !spans[0].contains('–') { "line" } else { "lines" };
    let mut out = format!(
        "Edited {shown}: {count} {plural} at {lines} {} (+{added} −{removed})",
        spans.join(", ")
    );
    for note in notes {
        let _ = write!(out, "\nNote: {note}.");
    }
    if let Some(first) = new_ranges.first() {
        let from = ladder::line_of(after, first.start).saturating_sub(CONTEXT).max(1);
        let to = ladder::line_of(after, first.end.saturating_sub(1).max(first.start)) + CONTEXT;
        if count > 1 {
            out.push_str("\nFirst edited region:");
        }
        out.push('\n');
        for (index, line) in
            after.split_inclusive('\n').enumerate().skip(from - 1).take(to + 1 - from)
        {
            render::numbered(&mut out, index + 1, line, MAX_LINE_CHARS);
        }
    }
    out.trim_end_matches('\n').to_owned()
}
