//! `read_file`: numbered lines of a text file, with a header that lets the model edit exactly.

use std::{fmt::Write as _, sync::Arc};

use agent_core::{
    Access, Boundary, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    blocking::{self, io_error},
    file_io::FileIo,
    paths,
    render::{self, MAX_LINE_CHARS},
    text::{self, Eol},
    tracker::FileTracker,
};

/// Lines shown when the call gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;
/// The largest `limit` honoured.
const MAX_LIMIT: usize = 5000;
/// The most bytes of numbered lines one result holds (about 16k tokens).
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Input of the `read_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct ReadFileInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told"). Counts are sent as plain integers
    // (`with = "Option<i64>"`: no `minimum`, a few tokens each); serde still refuses a negative one.
    // The file, relative to the workspace root (or absolute inside it).
    pub path: String,
    // The first line, 1-based.
    #[schemars(with = "Option<i64>")]
    pub offset: Option<u32>,
    // How many lines to show. Default 2000, at most 5000.
    #[schemars(with = "Option<i64>")]
    pub limit: Option<u32>,
}

/// Reads a text file and shows numbered lines.
#[derive(Debug, Clone)]
pub struct ReadFile {
    tracker: Arc<FileTracker>,
}

impl ReadFile {
    /// A read_file tool recording what it shows in `tracker`.
    pub fn new(tracker: Arc<FileTracker>) -> Self {
        Self { tracker }
    }
}

impl TypedTool for ReadFile {
    type Input = ReadFileInput;
    const NAME: &'static str = "read_file";

    fn description(&self) -> String {
        "Reads a text file as numbered lines `N→text` (the prefix is not part of the file), in \
         pages of `limit` lines (default 2000) from `offset`."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    fn rule_name(&self) -> String {
        "Read".to_owned()
    }

    fn access(&self, input: &ReadFileInput) -> Vec<Access> {
        vec![Access::Read(input.path.clone())]
    }

    async fn run(&self, input: ReadFileInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tracker = self.tracker.clone();
        let io = FileIo::of(&ctx);
        blocking::run(move || read_with(&*ctx.workspace, &tracker, &io, &input)).await
    }
}

fn read(
    ws: &dyn Boundary,
    tracker: &FileTracker,
    input: &ReadFileInput,
) -> Result<ToolOutput, ToolError> {
    read_with(ws, tracker, &FileIo::Disk, input)
}

fn read_with(
    ws: &dyn Boundary,
    tracker: &FileTracker,
    io: &FileIo,
    input: &ReadFileInput,
) -> Result<ToolOutput, ToolError> {
    let path = ws.resolve(&input.path)?;
    let shown = paths::display(ws.root(), &path);
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(paths::not_found(ws.root(), &input.path, &path));
        }
        Err(err) => return Err(io_error(&format!("read {shown}"), &err)),
    };
    if meta.is_dir() {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("{shown} is a directory; use list_dir to see its entries"),
        ));
    }
    let bytes = io.read(&path).map_err(|err| io_error(&format!("read {shown}"), &err))?;
    // Hash before decoding takes the bytes; the file is recorded only if it turns out to be text.
    let seen = tracker.seen_of(&bytes);
    let size = bytes.len() as u64;
    let (content, encoding) = text::decode_owned(bytes).map_err(|why| {
        ToolError::new(
            ToolErrorKind::BinaryFile,
            format!(
                "{shown} is not a text file ({}, {}); not shown",
                why.describe(),
                text::human_size(size)
            ),
        )
    })?;
    tracker.insert(&path, seen);
    if content.is_empty() {
        return Ok(ToolOutput::text(format!("{shown} · (file exists and is empty)")));
    }
    let total = text::line_count(&content);
    let offset = input.offset.map_or(1, |o| o as usize).max(1);
    if offset > total {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "offset {offset} is past the end of {shown}, which has {}",
                render::plural(total, "line", "lines")
            ),
        ));
    }
    let limit = input.limit.map_or(DEFAULT_LIMIT, |l| l as usize).clamp(1, MAX_LIMIT);
    let mut body = String::new();
    let mut last = offset - 1;
    let mut capped = false;
    let mut line_buf = String::new();
    for (index, line) in content.split_inclusive('\n').enumerate().skip(offset - 1).take(limit) {
        line_buf.clear();
        render::numbered(&mut line_buf, index + 1, line, MAX_LINE_CHARS);
        if body.len() + line_buf.len() > MAX_OUTPUT_BYTES && last >= offset {
            capped = true;
            break;
        }
        body.push_str(&line_buf);
        last = index + 1;
    }
    let mut out = format!(
        "{shown} · lines {offset}–{last} of {total} · {} · {} · indent: {}\n",
        encoding.label(),
        Eol::detect(&content).label(),
        text::indent_style(&content),
    );
    out.push_str(&body);
    if last < total {
        let reason = if capped { "PARTIAL (64 KB output cap)" } else { "PARTIAL" };
        let _ = write!(
            out,
            "{reason}: lines {offset}–{last} of {total}; continue with offset={}",
            last + 1
        );
    }
    Ok(ToolOutput::text(out.trim_end_matches('\n')))
}

/// Reads `path` for tests and benchmarks without a runtime: paths resolve through `workspace`, as
/// a call's `ToolContext::workspace` would.
#[doc(hidden)]
pub fn read_blocking(
    workspace: &dyn Boundary,
    tracker: &FileTracker,
    input: &ReadFileInput,
) -> Result<ToolOutput, ToolError> {
    read(workspace, tracker, input)
}
