//! `glob`: files whose path matches a glob pattern, newest first.

use std::{fmt::Write as _, path::PathBuf, time::SystemTime};

use agent_core::{
    Access, Boundary, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    blocking, grep, paths, render,
    walk::{self, Skipped},
};

const DEFAULT_LIMIT: usize = 200;
const MAX_LIMIT: usize = 1000;

/// Input of the `glob` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct GlobInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told"). Counts are sent as plain integers
    // (`with = "Option<i64>"`: no `minimum`, a few tokens each); serde still refuses a negative one.
    // The glob, such as `**/*.rs` or `src/**/test_*.py`. A pattern without `/` matches file
    // names at any depth (`*.toml`). `*` does not cross `/`; `**` does; `{a,b}` alternates.
    pub pattern: String,
    // The directory to search, relative to the workspace root. Default: the root.
    pub path: Option<String>,
    // The most paths to return. Default 200, at most 1000.
    #[schemars(with = "Option<i64>")]
    pub limit: Option<u32>,
    // Also match files ignored by .gitignore / .ignore. Default false.
    pub include_ignored: Option<bool>,
    // Also match hidden files (names starting with a dot). Default false.
    pub include_hidden: Option<bool>,
}

/// Finds files by name pattern.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

impl TypedTool for Glob {
    type Input = GlobInput;
    const NAME: &'static str = "glob";

    fn description(&self) -> String {
        "Finds files by glob pattern (`src/**/*.rs`), newest first, skipping ignored and hidden \
         files unless include_ignored / include_hidden."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    fn access(&self, input: &GlobInput) -> Vec<Access> {
        vec![Access::Read(input.path.clone().unwrap_or_else(|| ".".to_owned()))]
    }

    async fn run(&self, input: GlobInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        blocking::run(move || glob(&*ctx.workspace, &input, &ctx)).await
    }
}

fn glob(ws: &dyn Boundary, input: &GlobInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let asked = input.path.as_deref().unwrap_or(".");
    let dir = ws.resolve(asked)?;
    let shown = paths::display(ws.root(), &dir);
    if !dir.exists() {
        return Err(paths::not_found(ws.root(), asked, &dir));
    }
    let by_name = !input.pattern.contains('/');
    let pattern = input.pattern.trim_start_matches("./");
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|err| {
            ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("invalid glob {:?}: {}", input.pattern, err.kind()),
            )
        })?
        .compile_matcher();
    let include_hidden = input.include_hidden.unwrap_or(false);
    let include_ignored = input.include_ignored.unwrap_or(false);
    let mut walked = 0;
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    let mut denied = Vec::new();
    for entry in walk::builder(&dir, include_hidden, include_ignored).build() {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new(ToolErrorKind::Cancelled, "glob was cancelled"));
        }
        // An unreadable directory should not hide everything else: skip it, as ripgrep does.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // A file a `Read(…)` deny rule matches is not listed: its name is under the denied path.
        if let Some(rule) = ws.read_denied(entry.path()) {
            denied.push(rule);
            continue;
        }
        walked += 1;
        let rel = entry.path().strip_prefix(&dir).unwrap_or(entry.path());
        let hit = if by_name { matcher.is_match(entry.file_name()) } else { matcher.is_match(rel) };
        if hit {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((mtime, entry.path().to_path_buf()));
        }
    }
    let notice = grep::denied_note(denied, "files");
    if found.is_empty() {
        let skipped = Skipped::count(&dir, include_hidden, include_ignored, walked);
        return Ok(ToolOutput::text(format!(
            "No files match {:?} under {shown} ({walked} files checked).{}{notice}",
            input.pattern,
            skipped.describe(0).replace("to search them", "to include them")
        )));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let limit = input.limit.map_or(DEFAULT_LIMIT, |l| l as usize).clamp(1, MAX_LIMIT);
    let shown_count = total.min(limit);
    let verb = if total == 1 { "matches" } else { "match" };
    let mut out = format!(
        "{} {verb} {:?} under {shown} (newest first",
        render::plural(total, "file", "files"),
        input.pattern
    );
    if shown_count < total {
        let _ = write!(out, "; showing {shown_count}, raise limit or narrow the pattern for more");
    }
    out.push_str("):\n");
    for (_, path) in found.iter().take(shown_count) {
        out.push_str(&paths::display(ws.root(), path));
        out.push('\n');
    }
    Ok(ToolOutput::text(format!("{}{notice}", out.trim_end_matches('\n'))))
}
