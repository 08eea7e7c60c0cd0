//! `list_dir`: a directory tree with type markers, where nothing is left out silently.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
};

use agent_core::{
    Access, Boundary, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    blocking::{self, io_error},
    grep, paths, render,
};

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 6;
const DEFAULT_LIMIT: usize = 200;
const MAX_LIMIT: usize = 1000;
/// The walk stops collecting after this many entries, so a huge tree cannot stall the call.
const MAX_COLLECTED: usize = 20_000;
/// Counting the entries of a collapsed (ignored or too deep) directory stops here.
const MAX_COUNTED: usize = 10_000;

/// Input of the `list_dir` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct ListDirInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told"). Counts are sent as plain integers
    // (`with = "Option<i64>"`: no `minimum`, a few tokens each); serde still refuses a negative one.
    // The directory to list, relative to the workspace root. Default: the root.
    pub path: Option<String>,
    // How many levels to descend (1 = only direct entries). Default 2, at most 6.
    #[schemars(with = "Option<i64>")]
    pub depth: Option<u32>,
    // The most entries to show. Default 200, at most 1000.
    #[schemars(with = "Option<i64>")]
    pub limit: Option<u32>,
    // How many entries to skip, to page through a long listing. Default 0.
    #[schemars(with = "Option<i64>")]
    pub offset: Option<u32>,
    // List hidden entries (names starting with a dot). Default false.
    pub include_hidden: Option<bool>,
    // List entries ignored by .gitignore / .ignore files. Default false.
    pub include_ignored: Option<bool>,
}

/// Lists a directory as a tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListDir;

impl TypedTool for ListDir {
    type Input = ListDirInput;
    const NAME: &'static str = "list_dir";

    fn description(&self) -> String {
        "Lists a directory as a tree, `depth` levels deep (default 2). Hidden and ignored entries \
         are only counted unless include_hidden / include_ignored."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    fn access(&self, input: &ListDirInput) -> Vec<Access> {
        vec![Access::Read(input.path.clone().unwrap_or_else(|| ".".to_owned()))]
    }

    async fn run(&self, input: ListDirInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        blocking::run(move || list(&*ctx.workspace, &input)).await
    }
}

struct Walk<'a> {
    root: &'a Path,
    boundary: &'a dyn Boundary,
    /// The `Read(…)` deny rules that left entries out.
    denied: Vec<String>,
    include_hidden: bool,
    include_ignored: bool,
    max_depth: usize,
    lines: Vec<String>,
    hidden: usize,
    ignored_files: usize,
    ignored_dirs: usize,
    truncated: bool,
    ignores: Vec<Gitignore>,
}

fn list(ws: &dyn Boundary, input: &ListDirInput) -> Result<ToolOutput, ToolError> {
    let asked = input.path.as_deref().unwrap_or(".");
    let dir = ws.resolve(asked)?;
    let shown = paths::display(ws.root(), &dir);
    match std::fs::metadata(&dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("{shown} is a file, not a directory; use read_file to read it"),
            ));
        }
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(paths::not_found(ws.root(), asked, &dir));
        }
        Err(err) => return Err(io_error(&format!("list {shown}"), &err)),
    }
    let mut walk = Walk {
        root: ws.root(),
        boundary: ws,
        denied: Vec::new(),
        include_hidden: input.include_hidden.unwrap_or(false),
        include_ignored: input.include_ignored.unwrap_or(false),
        max_depth: input.depth.map_or(DEFAULT_DEPTH, |d| d as usize).clamp(1, MAX_DEPTH),
        lines: Vec::new(),
        hidden: 0,
        ignored_files: 0,
        ignored_dirs: 0,
        truncated: false,
        ignores: Vec::new(),
    };
    // Ignore files above the listed directory (up to the root) apply to it too.
    let mut ancestors: Vec<PathBuf> = dir
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(ws.root()))
        .map(Path::to_path_buf)
        .collect();
    ancestors.reverse();
    for ancestor in ancestors {
        if let Some(gi) = ignore_file(&ancestor) {
            walk.ignores.push(gi);
        }
    }
    walk.visit(&dir, 1).map_err(|err| io_error(&format!("list {shown}"), &err))?;

    let total = walk.lines.len();
    let offset = input.offset.map_or(0, |o| o as usize).min(total);
    let limit = input.limit.map_or(DEFAULT_LIMIT, |l| l as usize).clamp(1, MAX_LIMIT);
    let end = (offset + limit).min(total);
    let mut out = if shown == "." { "./\n".to_owned() } else { format!("{shown}/\n") };
    for line in &walk.lines[offset..end] {
        out.push_str(line);
        out.push('\n');
    }
    if total == 0 {
        out.push_str("(empty directory)\n");
    }
    if offset > 0 || end < total {
        let _ = write!(out, "Showing entries {}–{end} of {total}", offset + 1);
        if end < total {
            let _ = write!(out, " (offset={end} for more)");
        }
        out.push_str(".\n");
    }
    if walk.truncated {
        let _ = writeln!(
            out,
            "Stopped after {MAX_COLLECTED} entries; list a subdirectory or lower depth."
        );
    }
    let mut hidden_parts = Vec::new();
    if walk.hidden > 0 {
        hidden_parts.push(format!("{} hidden", walk.hidden));
    }
    if walk.ignored_files > 0 {
        hidden_parts.push(render::plural(walk.ignored_files, "ignored file", "ignored files"));
    }
    if !hidden_parts.is_empty() || walk.ignored_dirs > 0 {
        let mut note = String::new();
        if !hidden_parts.is_empty() {
            let _ = write!(note, "Not shown: {}", hidden_parts.join(", "));
        }
        if walk.ignored_dirs > 0 {
            if !note.is_empty() {
                note.push_str("; ");
            }
            let dirs =
                render::plural(walk.ignored_dirs, "ignored directory", "ignored directories");
            let _ = write!(note, "{dirs} shown collapsed");
        }
        let mut flags = Vec::new();
        if walk.hidden > 0 {
            flags.push("include_hidden=true");
        }
        if walk.ignored_files + walk.ignored_dirs > 0 {
            flags.push("include_ignored=true");
        }
        let _ = writeln!(out, "{note}. Set {} to list them.", flags.join(" / "));
    }
    let notice = grep::denied_note(std::mem::take(&mut walk.denied), "entries");
    Ok(ToolOutput::text(format!("{}{notice}", out.trim_end_matches('\n'))))
}

impl Walk<'_> {
    fn visit(&mut self, dir: &Path, depth: usize) -> std::io::Result<()> {
        let pushed = match ignore_file(dir) {
            Some(gi) => {
                self.ignores.push(gi);
                true
            }
            None => false,
        };
        let mut entries: Vec<(bool, String, PathBuf, std::fs::FileType)> = std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let kind = e.file_type().ok()?;
                Some((!kind.is_dir(), e.file_name().to_string_lossy().into_owned(), e.path(), kind))
            })
            .collect();
        entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let indent = "  ".repeat(depth - 1);
        for (_, name, path, kind) in entries {
            if self.lines.len() >= MAX_COLLECTED {
                self.truncated = true;
                break;
            }
            // An entry a `Read(…)` deny rule matches is not listed, nor is anything below it.
            if let Some(rule) = self.boundary.read_denied(&path) {
                self.denied.push(rule);
                continue;
            }
            if name.starts_with('.') && !self.include_hidden {
                self.hidden += 1;
                continue;
            }
            if !self.include_ignored && self.is_ignored(&path, kind.is_dir()) {
                if kind.is_dir() {
                    self.ignored_dirs += 1;
                    self.lines.push(format!("{indent}{name}/ (ignored, {})", count_entries(&path)));
                } else {
                    self.ignored_files += 1;
                }
                continue;
            }
            if kind.is_symlink() {
                let target =
                    std::fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_default();
                let outside = match std::fs::canonicalize(&path) {
                    Ok(real) => !real.starts_with(self.root),
                    Err(_) => false,
                };
                let note = if outside { " (outside workspace)" } else { "" };
                self.lines.push(format!("{indent}{name}@ → {target}{note}"));
            } else if kind.is_dir() {
                if depth < self.max_depth {
                    self.lines.push(format!("{indent}{name}/"));
                    self.visit(&path, depth + 1)?;
                } else {
                    self.lines.push(format!("{indent}{name}/ ({})", count_children(&path)));
                }
            } else if kind.is_file() {
                self.lines.push(format!("{indent}{name}"));
            } else {
                self.lines.push(format!("{indent}{name}?"));
            }
        }
        if pushed {
            self.ignores.pop();
        }
        Ok(())
    }

    /// The deepest ignore file with an opinion decides, as git does.
    fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        for gi in self.ignores.iter().rev() {
            let verdict = gi.matched(path, is_dir);
            if verdict.is_ignore() {
                return true;
            }
            if verdict.is_whitelist() {
                return false;
            }
        }
        false
    }
}

/// The `.gitignore` and `.ignore` rules of `dir`, if it has any. Honoured outside git repositories
/// too: users expect their ignore files to count wherever they are.
fn ignore_file(dir: &Path) -> Option<Gitignore> {
    let files: Vec<PathBuf> =
        [".gitignore", ".ignore"].iter().map(|n| dir.join(n)).filter(|p| p.is_file()).collect();
    if files.is_empty() {
        return None;
    }
    let mut builder = GitignoreBuilder::new(dir);
    for file in files {
        let _ = builder.add(file);
    }
    builder.build().ok()
}

/// `N entries` directly inside `dir`.
fn count_children(dir: &Path) -> String {
    let count = std::fs::read_dir(dir).map(|it| it.take(MAX_COUNTED).count()).unwrap_or(0);
    plural_entries(count, count >= MAX_COUNTED)
}

/// `N entries` anywhere below `dir`, counted up to a cap.
fn count_entries(dir: &Path) -> String {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.filter_map(Result::ok) {
            count += 1;
            if count >= MAX_COUNTED {
                return plural_entries(count, true);
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    plural_entries(count, false)
}

fn plural_entries(count: usize, capped: bool) -> String {
    let plus = if capped { "+" } else { "" };
    if count == 1 { "1 entry".to_owned() } else { format!("{count}{plus} entries") }
}
