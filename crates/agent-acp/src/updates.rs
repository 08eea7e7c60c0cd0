//! How the loop's events become `session/update` notifications: text and reasoning as chunks,
//! each tool call as a `tool_call` (kind, title, locations) and then its updates (status,
//! output, and for edits the diff), the context's fill as a usage update.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry as AcpPlanEntry, PlanEntryPriority,
    PlanEntryStatus as AcpPlanStatus, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    UsageUpdate,
};
use agent_core::Item;
use agent_exec::{
    agent::AgentEvent,
    plan::{PlanBook, PlanStatus},
};

use crate::ClientFiles;

/// The plan tool's name, whose successful calls change the plan.
const PLAN_TOOL: &str = "update_plan";

/// The longest tool output sent in an update; the model saw the capped output already, and an
/// editor shows a summary, so the rest stays in the session's transcript.
const OUTPUT_CHARS: usize = 16 * 1024;

/// What is remembered of a call between its start and its end.
struct Started {
    kind: ToolKind,
    /// The file an edit changes, and its text before the call (`None`: it did not exist).
    before: Option<(PathBuf, Option<String>)>,
}

/// Turns one prompt's events into updates, remembering each running call.
pub(crate) struct Mapper {
    workspace: PathBuf,
    calls: HashMap<String, Started>,
    /// The client's file system, when edits go through it (the diff comes from its writes).
    files: Option<Arc<ClientFiles>>,
    /// The session's plan, sent whole after each change.
    plan: Option<Arc<PlanBook>>,
}

impl Mapper {
    pub(crate) fn new(
        workspace: PathBuf,
        files: Option<Arc<ClientFiles>>,
        plan: Option<Arc<PlanBook>>,
    ) -> Self {
        Self { workspace, calls: HashMap::new(), files, plan }
    }

    /// The updates one event stands for (often none).
    pub(crate) fn updates(&mut self, event: &AgentEvent) -> Vec<SessionUpdate> {
        match event {
            AgentEvent::TextDelta { text } => vec![chunk(text, false)],
            AgentEvent::ReasoningDelta { text } => vec![chunk(text, true)],
            AgentEvent::ToolCallStarted { call_id, name, arguments } => {
                let call = tool_call(&self.workspace, call_id, name, arguments);
                // Through the client, the text before is what its write replaced; on the disk, the
                // file now.
                let before = edited_path(name, arguments, &self.workspace).map(|path| {
                    let old = match self.files {
                        Some(_) => None,
                        None => std::fs::read_to_string(&path).ok(),
                    };
                    (path, old)
                });
                self.calls.insert(call_id.clone(), Started { kind: call.kind, before });
                vec![SessionUpdate::ToolCall(call)]
            }
            // One update ends the call: its status and its content, the diff first. The protocol
            // replaces a call's content with each update's, so the two go together.
            AgentEvent::ItemAdded { item: Item::ToolOutput(output) } => {
                let status =
                    if output.ok { ToolCallStatus::Completed } else { ToolCallStatus::Failed };
                let mut content = Vec::new();
                if let Some(Started { before: Some((path, old)), kind }) =
                    self.calls.remove(&output.call_id)
                    && output.ok
                    && kind == ToolKind::Edit
                    && let Some((old, new)) = match &self.files {
                        Some(files) => files.take_write(&path),
                        None => std::fs::read_to_string(&path).ok().map(|new| (old, new)),
                    }
                    && old.as_deref() != Some(new.as_str())
                {
                    content.push(ToolCallContent::Diff(Diff::new(path, new).old_text(old)));
                }
                let text = ContentBlock::Text(TextContent::new(shorten(&output.output)));
                content.push(ToolCallContent::from(text));
                let fields = ToolCallUpdateFields::new()
                    .status(status)
                    .content(content)
                    .raw_output(serde_json::Value::String(output.output.clone()));
                vec![update(&output.call_id, fields)]
            }
            AgentEvent::Request { estimated_input_tokens, window, .. } => {
                vec![SessionUpdate::UsageUpdate(UsageUpdate::new(
                    *estimated_input_tokens as u64,
                    *window,
                ))]
            }
            AgentEvent::ToolCallFinished { name, ok: true, .. } if name == PLAN_TOOL => {
                self.plan.as_deref().and_then(plan_of).into_iter().collect()
            }
            _ => Vec::new(),
        }
    }
}

/// The session's plan as a `plan` update, when it has items. Cancelled items are left out: the
/// protocol's entries are pending, in progress or completed, and a step given up is not one
/// the editor should show as work.
pub(crate) fn plan_of(book: &PlanBook) -> Option<SessionUpdate> {
    let plan = book.snapshot();
    let entries: Vec<PlanEntry> = plan
        .items
        .iter()
        .filter_map(|item| {
            let status = match item.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Completed => PlanEntryStatus::Completed,
                _ => return None,
            };
            Some(PlanEntry { content: item.text.clone(), status })
        })
        .collect();
    (!plan.items.is_empty()).then(|| plan_update(&entries))
}

/// A chunk of the answer, or of the reasoning.
pub(crate) fn chunk(text: &str, thought: bool) -> SessionUpdate {
    let content = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
    if thought {
        SessionUpdate::AgentThoughtChunk(content)
    } else {
        SessionUpdate::AgentMessageChunk(content)
    }
}

/// An update of one call's fields.
pub(crate) fn update(call_id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(ToolCallId::new(call_id), fields))
}

/// The announcement of a call: its kind, a title an editor can show, the files it touches.
pub(crate) fn tool_call(workspace: &Path, call_id: &str, name: &str, arguments: &str) -> ToolCall {
    let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    let field = |key: &str| args.get(key).and_then(serde_json::Value::as_str);
    let kind = kind(name);
    let title = match (kind, field("command"), field("path"), field("pattern")) {
        (ToolKind::Execute, Some(command), _, _) => format!("Run `{}`", first_line(command)),
        (_, _, Some(path), _) if kind != ToolKind::Search => format!("{} {path}", verb(kind)),
        (ToolKind::Search, _, _, Some(pattern)) => format!("Search {pattern}"),
        _ => name.to_owned(),
    };
    let locations = field("path")
        .map(|path| vec![ToolCallLocation::new(resolve(workspace, path))])
        .unwrap_or_default();
    ToolCall::new(ToolCallId::new(call_id), title)
        .kind(kind)
        .status(ToolCallStatus::Pending)
        .locations(locations)
        .raw_input(args)
}

/// The protocol's kind of a tool, by our built-in tools' names; any other tool (MCP's, a
/// custom one) is `other`.
fn kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "view_image" => ToolKind::Read,
        "write_file" | "edit_file" | "apply_patch" => ToolKind::Edit,
        "bash" | "job" | "execute_code" => ToolKind::Execute,
        "grep" | "glob" | "list_dir" => ToolKind::Search,
        "web_search" | "web_fetch" => ToolKind::Fetch,
        "update_plan" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn verb(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "Read",
        ToolKind::Edit => "Edit",
        ToolKind::Fetch => "Fetch",
        _ => "Use",
    }
}

/// The file a write or edit call changes, absolute.
fn edited_path(name: &str, arguments: &str, workspace: &Path) -> Option<PathBuf> {
    if !matches!(name, "write_file" | "edit_file") {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    Some(resolve(workspace, args.get("path")?.as_str()?))
}

fn resolve(workspace: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_path_buf() } else { workspace.join(path) }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(OUTPUT_CHARS) {
        Some((end, _)) => {
            format!("{}\n… (cut; the whole output is in the session transcript)", &text[..end])
        }
        None => text.to_owned(),
    }
}

/// One step of a plan, as the plan tool keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanEntry {
    /// What the step does.
    pub content: String,
    /// Where it stands.
    pub status: PlanEntryStatus,
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanEntryStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// The plan update for the plan tool's whole list (the protocol replaces the plan each time).
/// The seam for the plan tool: when its event lands in the loop, the event mapper maps it here.
pub fn plan_update(entries: &[PlanEntry]) -> SessionUpdate {
    let entries = entries
        .iter()
        .map(|entry| {
            let status = match entry.status {
                PlanEntryStatus::Pending => AcpPlanStatus::Pending,
                PlanEntryStatus::InProgress => AcpPlanStatus::InProgress,
                PlanEntryStatus::Completed => AcpPlanStatus::Completed,
            };
            AcpPlanEntry::new(entry.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}
