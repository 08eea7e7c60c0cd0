//! `write_file`: create or overwrite a whole file, atomically, never over unseen changes.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    sync::Arc,
};

use agent_core::{
    Access, Boundary, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    blocking::{self, io_error},
    change::FileChange,
    file_io::FileIo,
    observe::{self, Observer},
    paths, render,
    text::{self, Encoding, Eol},
    tracker::FileTracker,
};

/// The largest `content` accepted, in bytes.
const MAX_CONTENT_BYTES: usize = 1024 * 1024;

/// Input of the `write_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct WriteFileInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told").
    // The file to create or overwrite, relative to the workspace root (or absolute inside it).
    pub path: String,
    // The complete new content of the file (at most 1 MB).
    pub content: String,
}

/// Creates or overwrites a file.
#[derive(Debug, Clone)]
pub struct WriteFile {
    tracker: Arc<FileTracker>,
    observer: Observer,
}

impl WriteFile {
    /// A write_file tool checking staleness against `tracker`.
    pub fn new(tracker: Arc<FileTracker>) -> Self {
        Self { tracker, observer: None }
    }

    /// The same tool telling `observer` about every file it wrote (diagnostics after edits).
    #[must_use]
    pub fn with_observer(mut self, observer: Option<Arc<dyn agent_core::EditObserver>>) -> Self {
        self.observer = observer;
        self
    }
}

impl TypedTool for WriteFile {
    type Input = WriteFileInput;
    const NAME: &'static str = "write_file";

    fn description(&self) -> String {
        "Creates a file or replaces it whole; an existing file must be read with read_file first."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::WRITES_FILES
    }

    fn rule_name(&self) -> String {
        "Edit".to_owned()
    }

    fn access(&self, input: &WriteFileInput) -> Vec<Access> {
        vec![Access::Write(input.path.clone())]
    }

    async fn run(&self, input: WriteFileInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tracker = self.tracker.clone();
        let io = FileIo::of(&ctx);
        let (output, edited) =
            blocking::run(move || write(&*ctx.workspace, &tracker, &io, &input)).await?;
        Ok(observe::append(&self.observer, output, &[edited]).await)
    }
}

impl WriteFile {
    /// What `input` would change, computed exactly as the call would and written nowhere (the
    /// same checks, line endings and encoding), so a front end can show the user the change
    /// before approving it. An `Err` is the failure the call would report.
    pub fn preview(
        &self,
        ws: &dyn Boundary,
        input: &WriteFileInput,
    ) -> Result<FileChange, ToolError> {
        let plan = plan(ws, &self.tracker, &FileIo::Disk, input)?;
        let before = plan.existing.map(|existing| existing.old_text);
        Ok(FileChange { path: plan.path, shown: plan.shown, before, after: plan.new_text })
    }
}

/// A write worked out and not yet done.
struct Plan {
    path: PathBuf,
    shown: String,
    /// The text to write, with the existing file's line endings.
    new_text: String,
    /// The file being replaced; `None` for a new file.
    existing: Option<Existing>,
}

/// The file a write replaces.
struct Existing {
    old_text: String,
    encoding: Encoding,
    permissions: std::fs::Permissions,
}

fn write(
    ws: &dyn Boundary,
    tracker: &FileTracker,
    io: &FileIo,
    input: &WriteFileInput,
) -> Result<(ToolOutput, agent_core::EditedFile), ToolError> {
    let Plan { path, shown, new_text, existing } = plan(ws, tracker, io, input)?;
    let Some(existing) = existing else {
        let parent = path.parent().unwrap_or(ws.root());
        if io.is_disk() {
            std::fs::create_dir_all(parent)
                .map_err(|err| io_error(&format!("create the directories of {shown}"), &err))?;
        }
        let bytes = new_text.as_bytes();
        io.write(&path, bytes, None).map_err(|err| io_error(&format!("write {shown}"), &err))?;
        tracker.record(&path, bytes);
        let output = ToolOutput::text(format!(
            "Created {shown} ({} lines, {})",
            text::line_count(&new_text),
            text::human_size(bytes.len() as u64)
        ));
        // A new file is compared with an empty one: every error in it is new.
        return Ok((output, agent_core::EditedFile::changed(path, Some(String::new()))));
    };
    let bytes = text::encode(&new_text, existing.encoding);
    io.write(&path, &bytes, Some(existing.permissions))
        .map_err(|err| io_error(&format!("write {shown}"), &err))?;
    tracker.record(&path, &bytes);
    let (added, removed) = line_changes(&existing.old_text, &new_text);
    let output = ToolOutput::text(format!(
        "Overwrote {shown}: {} → {} (+{added} −{removed})",
        text::line_count(&existing.old_text),
        render::plural(text::line_count(&new_text), "line", "lines")
    ));
    Ok((output, agent_core::EditedFile::changed(path, Some(existing.old_text))))
}

/// Checks a write as the call would and works out the text it would write.
fn plan(
    ws: &dyn Boundary,
    tracker: &FileTracker,
    io: &FileIo,
    input: &WriteFileInput,
) -> Result<Plan, ToolError> {
    if input.content.len() > MAX_CONTENT_BYTES {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "content is {}; the limit is 1 MB. Write a smaller file or generate it with a command",
                text::human_size(input.content.len() as u64)
            ),
        ));
    }
    let path = ws.resolve_for_write(&input.path)?;
    let shown = paths::display(ws.root(), &path);
    let meta = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("{shown} is a directory; give a file path"),
            ));
        }
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Plan { path, shown, new_text: input.content.clone(), existing: None });
        }
        Err(err) => return Err(io_error(&format!("inspect {shown}"), &err)),
    };
    let current = io.read(&path).map_err(|err| io_error(&format!("read {shown}"), &err))?;
    check_fresh(tracker, &path, &shown, &current)?;
    // The file was read, so it decoded; decoding again gives its encoding and line endings.
    let (old_text, encoding) = text::decode(&current).unwrap_or((String::new(), Encoding::Utf8));
    let new_text = Eol::detect(&old_text).apply(&input.content);
    let new_text = new_text.strip_prefix('\u{FEFF}').unwrap_or(&new_text).to_owned();
    let existing = Existing { old_text, encoding, permissions: meta.permissions() };
    Ok(Plan { path, shown, new_text, existing: Some(existing) })
}

/// Fails with `stale_file` unless `current` is what the model last saw of `path`.
pub(crate) fn check_fresh(
    tracker: &FileTracker,
    path: &Path,
    shown: &str,
    current: &[u8],
) -> Result<(), ToolError> {
    match tracker.get(path) {
        None => Err(ToolError::new(
            ToolErrorKind::StaleFile,
            format!(
                "{shown} exists and has not been read in this session; read it with read_file first, then write again"
            ),
        )),
        Some(seen) if seen.hash != text::content_hash(current) => Err(ToolError::new(
            ToolErrorKind::StaleFile,
            format!(
                "{shown} changed since your last read ({} → {}); re-read it with read_file, then write again",
                text::human_size(seen.len),
                text::human_size(current.len() as u64)
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// Lines added and removed between two texts.
pub(crate) fn line_changes(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// Writes `bytes` to a temporary file next to `path` and renames it over `path`, so readers see
/// the old or the new content, never half of it. `permissions` are those of the file replaced;
/// new files get `rw-r--r--`.
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".agent-write-").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    let permissions = match permissions {
        Some(permissions) => permissions,
        None => default_permissions(temp.as_file())?,
    };
    temp.as_file().set_permissions(permissions)?;
    temp.persist(path).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(unix)]
fn default_permissions(_file: &std::fs::File) -> std::io::Result<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    Ok(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions(file: &std::fs::File) -> std::io::Result<std::fs::Permissions> {
    Ok(file.metadata()?.permissions())
}
