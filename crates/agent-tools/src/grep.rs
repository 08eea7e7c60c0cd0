//! `grep`: search file contents in-process with ripgrep's crates.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use agent_core::{
    Access, Boundary, CancellationToken, Effects, ToolContext, ToolError, ToolErrorKind,
    ToolOutput, TypedTool,
};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    blocking, paths, render,
    walk::{self, Skipped},
};

const DEFAULT_HEAD_LIMIT: usize = 100;
const MAX_HEAD_LIMIT: usize = 2000;
/// Matched lines are cut after this many characters.
const MAX_LINE_CHARS: usize = 500;
/// A search running longer returns what it found so far, with a notice.
const TIME_LIMIT: Duration = Duration::from_secs(30);

// What grep returns. Plain comments, not doc comments: schemars would send a doc comment to the
// model as the enum's description. The variants are described on `GrepInput::output_mode`, so the
// schema stays a plain string enum (OpenAI's strict mode has no `oneOf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub enum OutputMode {
    FilesWithMatches,
    Content,
    Count,
}

/// Input of the `grep` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct GrepInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told"). Counts are sent as plain integers
    // (`with = "Option<i64>"`: no `minimum`, a few tokens each); serde still refuses a negative one.
    // A regex (Rust syntax); for literal text with regex characters set fixed_strings.
    pub pattern: String,
    // Match the pattern as literal text.
    pub fixed_strings: Option<bool>,
    // A file or directory to search, relative to the workspace root (default: the root).
    pub path: Option<String>,
    // Only files matching this glob, e.g. `*.rs` or `src/**/*.{ts,tsx}`.
    pub glob: Option<String>,
    // A file type: `rust`, `py`, `js`…
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    // `files_with_matches` (the default), `content` (`path:line:text`, context lines
    // `path-line-text`) or `count` (`path:count`).
    pub output_mode: Option<OutputMode>,
    // Ignore case.
    pub case_insensitive: Option<bool>,
    // Context lines around each match (content mode).
    #[schemars(with = "Option<i64>")]
    pub context: Option<u32>,
    // Context lines before / after each match; each overrides context on its side.
    #[schemars(with = "Option<i64>")]
    pub before: Option<u32>,
    #[schemars(with = "Option<i64>")]
    pub after: Option<u32>,
    // Let matches span lines (`.` matches newlines too).
    pub multiline: Option<bool>,
    // Most entries (files, or lines in content mode) to return: default 100, at most 2000.
    #[schemars(with = "Option<i64>")]
    pub head_limit: Option<u32>,
    // Entries to skip, to page.
    #[schemars(with = "Option<i64>")]
    pub offset: Option<u32>,
    // Also search files ignored by .gitignore / .ignore.
    pub include_ignored: Option<bool>,
    // Also search hidden files.
    pub include_hidden: Option<bool>,
}

/// Searches file contents.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

impl TypedTool for Grep {
    type Input = GrepInput;
    const NAME: &'static str = "grep";

    fn description(&self) -> String {
        "Searches file contents for a regex (ripgrep). output_mode: files_with_matches (default), \
         content (`path:line:text`, `context` lines around) or count. Ignored and hidden files are skipped unless \
         include_ignored / include_hidden."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    fn access(&self, input: &GrepInput) -> Vec<Access> {
        vec![Access::Read(input.path.clone().unwrap_or_else(|| ".".to_owned()))]
    }

    async fn run(&self, input: GrepInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        blocking::run(move || grep(&*ctx.workspace, &input, &ctx.cancel)).await
    }
}

/// One line of a file's result.
#[derive(Debug)]
struct Line {
    number: u64,
    is_match: bool,
    text: String,
}

/// What one file contributed.
#[derive(Debug)]
struct FileHits {
    path: PathBuf,
    mtime: SystemTime,
    matched_lines: usize,
    /// Content mode: matches and context, with `None` marking a break between groups.
    lines: Vec<Option<Line>>,
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}

/// Runs grep without a runtime, for benchmarks: paths resolve through `workspace` (for example an
/// `agent_exec::Workspace` of the tree), as a call's `ToolContext::workspace` would.
#[doc(hidden)]
pub fn grep_blocking(workspace: &dyn Boundary, input: &GrepInput) -> Result<ToolOutput, ToolError> {
    grep(workspace, input, &CancellationToken::new())
}

fn grep(
    ws: &dyn Boundary,
    input: &GrepInput,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let asked = input.path.as_deref().unwrap_or(".");
    let target = ws.resolve(asked)?;
    if !target.exists() {
        return Err(paths::not_found(ws.root(), asked, &target));
    }
    let mode = input.output_mode.unwrap_or(OutputMode::FilesWithMatches);
    let multiline = input.multiline.unwrap_or(false);
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(input.case_insensitive.unwrap_or(false))
        .fixed_strings(input.fixed_strings.unwrap_or(false))
        .multi_line(true)
        .dot_matches_new_line(multiline);
    if !multiline {
        builder.line_terminator(Some(b'\n'));
    }
    let matcher = builder.build(&input.pattern).map_err(|err| {
        invalid(format!(
            "invalid regex {:?}: {err}. To search for this text literally, set fixed_strings=true",
            input.pattern
        ))
    })?;
    let glob = match &input.glob {
        Some(glob) => Some((
            !glob.contains('/'),
            globset::GlobBuilder::new(glob.trim_start_matches("./"))
                .literal_separator(true)
                .build()
                .map_err(|err| invalid(format!("invalid glob {glob:?}: {}", err.kind())))?
                .compile_matcher(),
        )),
        None => None,
    };
    let include_hidden = input.include_hidden.unwrap_or(false);
    let include_ignored = input.include_ignored.unwrap_or(false);
    let mut walker = walk::builder(&target, include_hidden, include_ignored);
    if let Some(name) = &input.file_type {
        let mut types = ignore::types::TypesBuilder::new();
        types.add_defaults();
        types.select(name);
        let types = types.build().map_err(|_| {
            invalid(format!("unknown file type {name:?}; use for example rust, py, js, ts, go, java, c, cpp, md, json, toml, yaml, or use glob instead"))
        })?;
        walker.types(types);
    }
    let context = input.context.unwrap_or(0) as usize;
    let (before, after) = if mode == OutputMode::Content {
        (input.before.map_or(context, |b| b as usize), input.after.map_or(context, |a| a as usize))
    } else {
        (0, 0)
    };

    let started = Instant::now();
    let searched = AtomicUsize::new(0);
    let binary = AtomicUsize::new(0);
    let timed_out = AtomicBool::new(false);
    let results: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    // Secret files the walk met, as (shown path, the rule that would include them).
    let secrets: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    // The `Read(…)` deny rules that left files out.
    let denied: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    walker.threads(threads).build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .multi_line(multiline)
            .before_context(before)
            .after_context(after)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build();
        let matcher = &matcher;
        let glob = &glob;
        let target = &target;
        let (searched, binary, timed_out, results) = (&searched, &binary, &timed_out, &results);
        let (secrets, denied) = (&secrets, &denied);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            if started.elapsed() > TIME_LIMIT {
                timed_out.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            // A denied file is left out wherever it is, the named `path` too: no approval lifts a
            // deny rule. The check comes before the glob's, so that the note tells nothing about
            // the names below a denied path.
            if let Some(rule) = ws.read_denied(entry.path()) {
                denied.lock().unwrap_or_else(|p| p.into_inner()).push(rule);
                return WalkState::Continue;
            }
            if let Some((by_name, glob)) = glob {
                let rel = entry.path().strip_prefix(target).unwrap_or(entry.path());
                let hit =
                    if *by_name { glob.is_match(entry.file_name()) } else { glob.is_match(rel) };
                if !hit {
                    return WalkState::Continue;
                }
            }
            // A secret file found by the walk is skipped; one named as `path` was judged by the
            // permission policy before the call ran.
            if entry.path() != target.as_path()
                && let Some(rule) = ws.secret(entry.path())
            {
                let shown = paths::display(ws.root(), entry.path());
                secrets.lock().unwrap_or_else(|p| p.into_inner()).push((shown, rule));
                return WalkState::Continue;
            }
            searched.fetch_add(1, Ordering::Relaxed);
            let mut sink = Collect { mode, hits: Vec::new(), matched_lines: 0, binary: false };
            if searcher.search_path(matcher, entry.path(), &mut sink).is_err() {
                return WalkState::Continue;
            }
            if sink.binary {
                binary.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            }
            if sink.matched_lines > 0 {
                let mtime = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let hits = FileHits {
                    path: entry.path().to_path_buf(),
                    mtime,
                    matched_lines: sink.matched_lines,
                    lines: sink.hits,
                };
                results.lock().unwrap_or_else(|p| p.into_inner()).push(hits);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::new(ToolErrorKind::Cancelled, "grep was cancelled"));
    }
    let mut files = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let searched = searched.into_inner();
    let binary = binary.into_inner();
    let mut notice = if timed_out.into_inner() {
        format!(
            "\nNote: the search stopped after {} s; results are partial. Narrow it with path, glob or type.",
            TIME_LIMIT.as_secs()
        )
    } else {
        String::new()
    };
    notice.push_str(&secret_note(secrets.into_inner().unwrap_or_else(|p| p.into_inner())));
    notice.push_str(&denied_note(denied.into_inner().unwrap_or_else(|p| p.into_inner()), "files"));
    if files.is_empty() {
        let skipped = if target.is_dir() {
            Skipped::count(&target, include_hidden, include_ignored, searched)
        } else {
            Skipped::default()
        };
        return Ok(ToolOutput::text(format!(
            "No matches for {:?} in {searched} files searched.{}{notice}",
            input.pattern,
            skipped.describe(binary)
        )));
    }
    files.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
    let head_limit =
        input.head_limit.map_or(DEFAULT_HEAD_LIMIT, |h| h as usize).clamp(1, MAX_HEAD_LIMIT);
    let offset = input.offset.map_or(0, |o| o as usize);
    let total_lines: usize = files.iter().map(|f| f.matched_lines).sum();
    let entries: Vec<String> = match mode {
        OutputMode::FilesWithMatches => {
            files.iter().map(|f| paths::display(ws.root(), &f.path)).collect()
        }
        OutputMode::Count => files
            .iter()
            .map(|f| format!("{}:{}", paths::display(ws.root(), &f.path), f.matched_lines))
            .collect(),
        OutputMode::Content => content_lines(ws.root(), &files, before + after > 0),
    };
    let total = entries.len();
    let start = offset.min(total);
    let end = (start + head_limit).min(total);
    let mut out = match mode {
        OutputMode::FilesWithMatches => {
            let verb = if files.len() == 1 { "matches" } else { "match" };
            format!("{} {verb}", render::plural(files.len(), "file", "files"))
        }
        _ => format!(
            "{} in {}",
            render::plural(total_lines, "matching line", "matching lines"),
            render::plural(files.len(), "file", "files")
        ),
    };
    if start >= end {
        let _ = write!(out, "; offset={offset} is past the {total} entries");
    } else {
        let what = if mode == OutputMode::Content { "lines" } else { "files" };
        let _ = write!(out, " (newest first; showing {what} {}–{end} of {total}", start + 1);
        if end < total {
            let _ = write!(out, "; offset={end} for more");
        }
        out.push(')');
    }
    out.push_str(":\n");
    for entry in &entries[start..end] {
        out.push_str(entry);
        out.push('\n');
    }
    Ok(ToolOutput::text(format!("{}{notice}", out.trim_end_matches('\n'))))
}

/// `Note: skipped 2 secret files (.env, certs/server.pem) …` for the (shown path, rule) pairs of
/// the secret files a walk left out, naming a rule that would include them; empty for none.
pub(crate) fn secret_note(mut skipped: Vec<(String, String)>) -> String {
    const NAMED: usize = 3;
    if skipped.is_empty() {
        return String::new();
    }
    skipped.sort();
    let mut names: Vec<&str> =
        skipped.iter().take(NAMED).map(|(shown, _)| shown.as_str()).collect();
    if skipped.len() > NAMED {
        names.push("…");
    }
    let (count, rule) = (skipped.len(), &skipped[0].1);
    if count == 1 {
        format!(
            "\nNote: skipped 1 secret file ({}); an allow rule `{rule}` includes it.",
            names.join(", ")
        )
    } else {
        format!(
            "\nNote: skipped {count} secret files ({}); allow rules such as `{rule}` include them.",
            names.join(", ")
        )
    }
}

/// `Note: left out files matched by the deny rule `Read(src/**)`.` for the rules that left
/// entries out of a walk; empty for none. It names no entry and gives no count, so that the note
/// reveals neither names nor how many files below a denied path fit a filter.
pub(crate) fn denied_note(mut rules: Vec<String>, what: &str) -> String {
    if rules.is_empty() {
        return String::new();
    }
    rules.sort();
    rules.dedup();
    let named = rules.iter().map(|rule| format!("`{rule}`")).collect::<Vec<_>>().join(", ");
    let rule_word = if rules.len() == 1 { "rule" } else { "rules" };
    format!("\nNote: left out {what} matched by the deny {rule_word} {named}.")
}

/// Content-mode lines across files: `path:n:text` for matches, `path-n-text` for context, `--`
/// between groups when context is on.
fn content_lines(root: &Path, files: &[FileHits], with_context: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let shown = paths::display(root, &file.path);
        if with_context && index > 0 {
            out.push("--".to_owned());
        }
        for line in &file.lines {
            match line {
                None if with_context => out.push("--".to_owned()),
                None => {}
                Some(line) => {
                    let sep = if line.is_match { ':' } else { '-' };
                    let mut text = format!("{shown}{sep}{}{sep}", line.number);
                    render::push_cut(&mut text, &line.text, MAX_LINE_CHARS);
                    out.push(text);
                }
            }
        }
    }
    out
}

/// Collects one file's results.
struct Collect {
    mode: OutputMode,
    hits: Vec<Option<Line>>,
    matched_lines: usize,
    binary: bool,
}

fn text_of(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.trim_end_matches(['\n', '\r']).to_owned()
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number().unwrap_or(0);
        let lines = mat.lines().count().max(1);
        self.matched_lines += lines;
        match self.mode {
            // One match is enough to list the file.
            OutputMode::FilesWithMatches => return Ok(false),
            OutputMode::Count => {}
            OutputMode::Content => {
                for (index, line) in mat.lines().enumerate() {
                    self.hits.push(Some(Line {
                        number: first + index as u64,
                        is_match: true,
                        text: text_of(line),
                    }));
                }
            }
        }
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        let number = context.line_number().unwrap_or(0);
        self.hits.push(Some(Line { number, is_match: false, text: text_of(context.bytes()) }));
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.hits.push(None);
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        self.hits.clear();
        self.matched_lines = 0;
        Ok(false)
    }
}
