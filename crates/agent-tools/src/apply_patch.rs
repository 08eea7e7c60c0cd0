//! `apply_patch`: Codex's patch format (add, delete, update and move files in one call), applied
//! all or nothing.
//!
//! [`grammar`] reads the patch, [`matching`] places each hunk with the tolerance ladder, [`plan`]
//! works the whole patch out before anything is written, and [`commit`] writes it as one
//! transaction. The
//! tool takes `{"patch": "<text>"}`; [`ApplyPatch::run_text`] and [`access_for`] serve the
//! shapes whose input is the raw text (a custom tool with [`LARK_GRAMMAR`], the Responses API's
//! built-in `apply_patch`).

mod commit;
pub(crate) mod grammar;
mod matching;
mod plan;

use std::{fmt::Write as _, path::PathBuf, sync::Arc};

use agent_core::{
    Access, Boundary, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;

pub use self::grammar::LARK_GRAMMAR;
use self::{
    grammar::FileOp,
    plan::{Done, Failure, Plan},
};
use crate::{
    blocking, closest,
    observe::{self, Observer},
    render, text,
    tracker::FileTracker,
};

/// The largest patch text accepted, in bytes (write_file's limit for one file's content).
pub const MAX_PATCH_BYTES: usize = 1024 * 1024;
/// The most file sections one patch may hold.
pub const MAX_PATCH_FILES: usize = 500;

/// Input of the `apply_patch` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct ApplyPatchInput {
    // The whole patch, from `*** Begin Patch` to `*** End Patch`.
    pub patch: String,
}

/// Applies a patch in Codex's format to the workspace.
#[derive(Debug, Clone)]
pub struct ApplyPatch {
    tracker: Arc<FileTracker>,
    observer: Observer,
}

/// One file as a patch would leave it, for a front end to show before approving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchChange {
    /// The file, resolved inside the workspace as the call would resolve it.
    pub path: PathBuf,
    /// The path as the tools show it.
    pub shown: String,
    /// The file a `*** Move to:` took this content from, when it did.
    pub moved_from: Option<String>,
    /// The text now (of `moved_from` for a move); `None` when the file does not exist yet.
    pub before: Option<String>,
    /// The text after the patch; `None` when the patch deletes the file.
    pub after: Option<String>,
}

impl ApplyPatch {
    /// An apply_patch tool recording what it writes in `tracker`, so read_file, write_file and
    /// edit_file know the files' new content.
    pub fn new(tracker: Arc<FileTracker>) -> Self {
        Self { tracker, observer: None }
    }

    /// The same tool telling `observer` about every file a patch changed (diagnostics after
    /// edits).
    #[must_use]
    pub fn with_observer(mut self, observer: Option<Arc<dyn agent_core::EditObserver>>) -> Self {
        self.observer = observer;
        self
    }

    /// Applies raw patch text in `ws`, blocking: the call behind every shape of the tool.
    pub fn apply_text(&self, ws: &dyn Boundary, patch: &str) -> Result<ToolOutput, ToolError> {
        self.apply_and_list(ws, patch).map(|(output, _)| output)
    }

    /// [`ApplyPatch::apply_text`], with the files the patch changed.
    fn apply_and_list(
        &self,
        ws: &dyn Boundary,
        patch: &str,
    ) -> Result<(ToolOutput, Vec<agent_core::EditedFile>), ToolError> {
        let plan = plan(ws, patch)?;
        commit::commit(&plan)?;
        let mut edited = Vec::with_capacity(plan.changes.len());
        for change in &plan.changes {
            if let Some(bytes) = &change.after {
                self.tracker.record(&change.path, bytes);
            }
            // A new file is compared with an empty one, so every error in it is new.
            let before = match &change.before {
                Some(bytes) => text::decode(bytes).ok().map(|(text, _)| text),
                None => Some(String::new()),
            };
            edited.push(agent_core::EditedFile {
                path: change.path.clone(),
                before,
                deleted: change.after.is_none(),
            });
        }
        Ok((ToolOutput::text(success(&plan)), edited))
    }

    /// [`ApplyPatch::apply_text`] off the async runtime, as the function shape runs it: the door
    /// for the shapes whose call carries the raw text (a custom tool, the Responses built-in).
    pub async fn run_text(&self, patch: String, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.clone();
        let (output, edited) =
            blocking::run(move || tool.apply_and_list(&*ctx.workspace, &patch)).await?;
        Ok(observe::append(&self.observer, output, &edited).await)
    }

    /// What `patch` would do to each file, worked out exactly as the call would and written
    /// nowhere; an `Err` is the failure the call would report.
    pub fn preview(&self, ws: &dyn Boundary, patch: &str) -> Result<Vec<PatchChange>, ToolError> {
        let plan = plan(ws, patch)?;
        let lossy = |bytes: &Option<Vec<u8>>| {
            bytes.as_ref().map(|b| match text::decode(b) {
                Ok((text, _)) => text,
                Err(_) => String::from_utf8_lossy(b).into_owned(),
            })
        };
        // A move shows as one change of the destination from the source's text.
        let moved: Vec<&str> =
            plan.changes.iter().filter_map(|c| c.moved_from.as_deref()).collect();
        let changes = plan
            .changes
            .iter()
            .filter(|c| !(c.after.is_none() && moved.contains(&c.shown.as_str())));
        Ok(changes
            .map(|change| {
                let source = change.moved_from.as_ref().and_then(|from| {
                    plan.changes.iter().find(|c| &c.shown == from).map(|c| lossy(&c.before))
                });
                PatchChange {
                    path: change.path.clone(),
                    shown: change.shown.clone(),
                    moved_from: change.moved_from.clone(),
                    before: source.unwrap_or_else(|| lossy(&change.before)),
                    after: lossy(&change.after),
                }
            })
            .collect())
    }
}

/// What a call with this patch text touches, for the permission policy: every path it creates,
/// changes or deletes, and both ends of a move. A text that does not parse names nothing (the
/// call then fails without writing).
pub fn access_for(patch: &str) -> Vec<Access> {
    if patch.len() > MAX_PATCH_BYTES {
        return Vec::new();
    }
    let Ok(parsed) = grammar::parse(patch) else { return Vec::new() };
    let mut access = Vec::new();
    for op in &parsed.ops {
        access.push(Access::Write(op.path().trim().to_owned()));
        if let FileOp::Update { move_to: Some(to), .. } = op {
            access.push(Access::Write(to.trim().to_owned()));
        }
    }
    access.dedup();
    access
}

impl TypedTool for ApplyPatch {
    type Input = ApplyPatchInput;
    const NAME: &'static str = "apply_patch";

    fn description(&self) -> String {
        "Edits files with a patch: `*** Begin Patch`, then per file `*** Add File: PATH` (every \
         line `+text`), `*** Delete File: PATH` or `*** Update File: PATH` (optionally `*** Move \
         to: NEW_PATH`) with hunks: an `@@` line (may name a nearby line to search after), about 3 \
         unchanged lines around each change prefixed with a space, removed lines with `-`, added \
         lines with `+`; `*** End of File` after a hunk that ends the file; then `*** End Patch`. \
         All or nothing: if a hunk does not match, no file changes and the closest text is shown."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::WRITES_FILES
    }

    fn rule_name(&self) -> String {
        "Edit".to_owned()
    }

    // Offered as a custom tool, the model writes the patch itself as raw text that follows the
    // grammar, so code is never escaped inside a JSON string.
    fn text_input(&self) -> Option<agent_core::TextInput> {
        Some(agent_core::TextInput::grammar("patch", agent_core::GrammarSyntax::Lark, LARK_GRAMMAR))
    }

    fn access(&self, input: &ApplyPatchInput) -> Vec<Access> {
        access_for(&input.patch)
    }

    async fn run(&self, input: ApplyPatchInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.run_text(input.patch, ctx).await
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}

/// Parses and plans `patch`, turning every failure into the error the model reads.
fn plan(ws: &dyn Boundary, patch: &str) -> Result<Plan, ToolError> {
    if patch.len() > MAX_PATCH_BYTES {
        return Err(invalid(format!(
            "the patch is {}; the limit is 1 MB. Split it into several patches; no file was changed",
            text::human_size(patch.len() as u64)
        )));
    }
    let parsed = grammar::parse(patch).map_err(|err| {
        invalid(format!("invalid patch (line {}): {}; no file was changed", err.line, err.message))
    })?;
    if parsed.ops.is_empty() {
        return Err(invalid("the patch names no file; nothing to do".to_owned()));
    }
    if parsed.ops.len() > MAX_PATCH_FILES {
        return Err(invalid(format!(
            "the patch has {} file sections; the limit is {MAX_PATCH_FILES}. Split it; no file was changed",
            parsed.ops.len()
        )));
    }
    plan::plan(ws, &parsed).map_err(|failure| match failure {
        Failure::Tool(err) => err,
        Failure::Mismatch { shown, text, mismatch, wanted, line } => {
            let hunk = mismatch.hunk + 1;
            let mut message = match &mismatch.context {
                Some(context) => format!(
                    "The patch was not applied and no file was changed: in {shown}, the line `@@ {context}` of hunk {hunk} (patch line {line}) was not found at or after line {}.",
                    mismatch.from
                ),
                None => format!(
                    "The patch was not applied and no file was changed: in {shown}, hunk {hunk} (patch line {line}) does not match the file at or after line {}.",
                    mismatch.from
                ),
            };
            let wanted = wanted.join("\n");
            match text.as_deref().map(|text| (text, closest::find(text, &wanted))) {
                Some((text, Some(candidate))) => {
                    let _ = write!(message, " {}", candidate.render_as(text, &wanted, "The hunk's lines"));
                }
                Some((_, None)) => message.push_str(" No similar text was found; re-read the file with read_file."),
                None => message.push_str(" The file is secret, so its text is not shown."),
            }
            ToolError::new(ToolErrorKind::NotFound, message)
        }
    })
}

/// `Applied the patch to 3 files:` and a line per file section, then the loosely matched hunks.
fn success(plan: &Plan) -> String {
    let files = plan.done.len();
    let mut out =
        format!("Applied the patch: {}.", render::plural(files, "file section", "file sections"));
    for done in &plan.done {
        let line = match done {
            Done::Added { shown, lines, replaced: false } => format!("added {shown} (+{lines})"),
            Done::Added { shown, lines, replaced: true } => {
                format!("added {shown} (+{lines}), replacing the file that was there")
            }
            Done::Updated { shown, added, removed } => {
                format!("updated {shown} (+{added} −{removed})")
            }
            Done::Moved { from, to, added, removed } => {
                format!("moved {from} → {to} (+{added} −{removed})")
            }
            Done::Deleted { shown, lines } => format!("deleted {shown} (−{lines})"),
        };
        let _ = write!(out, "\n  {line}");
    }
    for (shown, hunk, rung) in &plan.loose {
        let _ = write!(out, "\nNote: in {shown}, hunk {hunk} {}.", rung.note());
    }
    out
}
