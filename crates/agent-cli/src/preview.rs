//! What a tool call will do, shown before it is approved: an edit's diff, a new file's first
//! lines, a command with its directory and sandbox, an MCP call's server, tool and arguments.
//!
//! The edit and write previews come from the tools themselves (`EditFile::preview`,
//! `WriteFile::preview`), so the diff a person approves is the change the call then writes.

mod diff;
mod style;

use std::sync::Arc;

use agent_core::ToolError;
use agent_exec::{ApprovalRequest, Workspace};
use agent_tools::{
    ApplyPatch, ApplyPatchInput, EditFile, EditFileInput, FileChange, FileTracker, PatchChange,
    WriteFile, WriteFileInput,
};
use serde_json::Value;

pub(crate) use self::{
    diff::unified,
    style::{Block, Style, Tone, fit, short, wrap},
};

/// What the previews need from the session: the workspace boundary the calls will get, the file
/// tracker the file tools check staleness against, and the sandbox commands run under.
pub(crate) struct Previewer {
    workspace: Workspace,
    tracker: Arc<FileTracker>,
    /// The sandbox in words: `workspace-write, network off`.
    sandbox: String,
}

impl Previewer {
    /// What the terminal needs to preview `session`'s calls: its workspace, the files its tools
    /// read, and its sandbox in words (`workspace-write, network off`).
    pub(crate) fn for_session(session: &agent_session::Session) -> Arc<Self> {
        let workspace = session.agent.executor().policy().workspace().clone();
        let (policy, network) = session.sandbox();
        let network = crate::network::words(network);
        let sandbox = match policy {
            agent_exec::sandbox::SandboxPolicy::DangerFullAccess => {
                format!("{policy} (no OS sandbox)")
            }
            _ => format!("{policy}, {network}"),
        };
        Arc::new(Self::new(workspace, session.tracker().clone(), sandbox))
    }

    pub(crate) fn new(workspace: Workspace, tracker: Arc<FileTracker>, sandbox: String) -> Self {
        Self { workspace, tracker, sandbox }
    }

    /// The workspace the calls resolve their paths in.
    pub(crate) fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// What an edit_file or write_file call would change; `None` for other tools or arguments
    /// that do not parse, `Some(Err)` with the failure the call would report.
    pub(crate) fn file_change(
        &self,
        tool: &str,
        arguments: &str,
    ) -> Option<Result<FileChange, ToolError>> {
        let change = match tool {
            "edit_file" => {
                let input: EditFileInput = serde_json::from_str(arguments).ok()?;
                EditFile::new(self.tracker.clone()).preview(&self.workspace, &input)
            }
            "write_file" => {
                let input: WriteFileInput = serde_json::from_str(arguments).ok()?;
                WriteFile::new(self.tracker.clone()).preview(&self.workspace, &input)
            }
            _ => return None,
        };
        Some(change)
    }

    /// What an apply_patch call would do to each file; its arguments are `{"patch": …}` or, for
    /// the freeform shape, the patch text itself.
    pub(crate) fn patch_changes(&self, arguments: &str) -> Result<Vec<PatchChange>, ToolError> {
        let text = match serde_json::from_str::<ApplyPatchInput>(arguments) {
            Ok(input) => input.patch,
            Err(_) => arguments.to_owned(),
        };
        ApplyPatch::new(self.tracker.clone()).preview(&self.workspace, &text)
    }
}

/// The approval prompt's account of a call: a title after the tool's name, and the block below
/// it (which the prompt caps, offering `v` to see all of it).
pub(crate) struct Preview {
    pub(crate) title: String,
    pub(crate) block: Block,
}

/// The preview of the call `request` asks about.
pub(crate) fn approval(
    request: &ApprovalRequest,
    previewer: Option<&Previewer>,
    style: &Style,
) -> Preview {
    if let ("apply_patch", Some(previewer)) = (request.tool.as_str(), previewer) {
        return patch(previewer.patch_changes(&request.arguments), style);
    }
    let arguments: Value = serde_json::from_str(&request.arguments).unwrap_or(Value::Null);
    let change = previewer.and_then(|p| p.file_change(&request.tool, &request.arguments));
    match (request.tool.as_str(), change) {
        (_, Some(Ok(change))) => file(&change),
        (_, Some(Err(err))) => {
            let path = arguments["path"].as_str().unwrap_or_default().to_owned();
            let mut block = Block::default();
            // Wrapped, not cut: the reason is the point of this preview.
            let text = format!("the call would fail: {}", err.message);
            for line in style::wrap(&text, style.width.saturating_sub(2)) {
                block.push(Tone::Error, line);
            }
            Preview { title: path, block }
        }
        ("bash", None) => bash(&arguments, previewer, style),
        (name, None) => match mcp_name(name) {
            Some((server, tool)) => mcp(server, tool, &arguments),
            None => Preview { title: short(&request.arguments, 100), block: Block::default() },
        },
    }
}

/// An edit or a write: the unified diff, or a new file's lines.
fn file(change: &FileChange) -> Preview {
    let lines = change.after.lines().count();
    let title = match &change.before {
        Some(_) => change.shown.clone(),
        None => format!("{} (new file, {})", change.shown, plural(lines, "line")),
    };
    Preview { title, block: unified(change.before.as_deref(), &change.after, 3) }
}

/// A patch: every file it touches with its diff, all of it before anything is written.
fn patch(changes: Result<Vec<PatchChange>, ToolError>, style: &Style) -> Preview {
    let mut block = Block::default();
    let changes = match changes {
        Ok(changes) => changes,
        Err(err) => {
            let text = format!("the call would fail: {}", err.message);
            for line in style::wrap(&text, style.width.saturating_sub(2)) {
                block.push(Tone::Error, line);
            }
            return Preview { title: "(the patch)".to_owned(), block };
        }
    };
    for change in &changes {
        let header = match (&change.moved_from, &change.before, &change.after) {
            (Some(from), ..) => format!("{from} → {}", change.shown),
            (None, None, _) => format!("{} (new file)", change.shown),
            (None, Some(_), None) => format!("{} (deleted)", change.shown),
            (None, Some(_), Some(_)) => change.shown.clone(),
        };
        block.push(Tone::Header, header);
        match &change.after {
            Some(after) => block.extend(&unified(change.before.as_deref(), after, 3)),
            None => {
                for line in change.before.as_deref().unwrap_or_default().lines() {
                    block.push(Tone::Removed, format!("-{line}"));
                }
            }
        }
    }
    Preview { title: format!("({})", plural(changes.len(), "file")), block }
}

/// A command: the whole line wrapped to the terminal, where it runs, and under which sandbox.
fn bash(arguments: &Value, previewer: Option<&Previewer>, style: &Style) -> Preview {
    let command = arguments["command"].as_str().unwrap_or_default();
    let mut block = Block::default();
    // Two columns of indent, two for `$ `.
    let width = style.width.saturating_sub(4).max(20);
    for (index, line) in command.lines().enumerate() {
        for (part, piece) in style::wrap(line, width).into_iter().enumerate() {
            let lead = if index == 0 && part == 0 { "$ " } else { "  " };
            block.push(Tone::Command, format!("{lead}{piece}"));
        }
    }
    let workdir = arguments["workdir"].as_str().filter(|dir| !dir.is_empty());
    let place = match (previewer, workdir) {
        (Some(previewer), dir) => {
            let root = previewer.workspace().root();
            dir.map_or_else(|| root.to_path_buf(), |dir| root.join(dir)).display().to_string()
        }
        (None, Some(dir)) => dir.to_owned(),
        (None, None) => "the workspace root".to_owned(),
    };
    let sandbox = previewer.map_or("the configured sandbox", |p| p.sandbox.as_str());
    for line in style::wrap(&format!("in {place}"), style.width.saturating_sub(2)) {
        block.push(Tone::Dim, line);
    }
    block.push(Tone::Dim, format!("sandbox: {sandbox}"));
    if let Some(description) = arguments["description"].as_str().filter(|d| !d.is_empty()) {
        block.push(Tone::Dim, description.to_owned());
    }
    Preview { title: String::new(), block }
}

/// An MCP tool's call: the server, the tool and the arguments, pretty-printed.
fn mcp(server: &str, tool: &str, arguments: &Value) -> Preview {
    let mut block = Block::default();
    let pretty = serde_json::to_string_pretty(arguments).unwrap_or_default();
    for line in pretty.lines() {
        block.push(Tone::Plain, line.to_owned());
    }
    Preview { title: format!("(MCP server `{server}`, tool `{tool}`)"), block }
}

/// The server and tool of a model-facing MCP name, `mcp__server__tool`.
fn mcp_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

fn plural(count: usize, one: &str) -> String {
    if count == 1 { format!("1 {one}") } else { format!("{count} {one}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tool: &str, arguments: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c".to_owned(),
            tool: tool.to_owned(),
            arguments: arguments.to_owned(),
            access: Vec::new(),
            reason: "r".to_owned(),
            suggested_rules: Vec::new(),
        }
    }

    /// The preview of `tool` called with `arguments` in a workspace holding `main.rs`, read by
    /// the model, as plain text at 60 columns.
    #[track_caller]
    fn check(tool: &str, arguments: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.rs"), "fn main() {\n    println!(\"hello\");\n}\n")
            .unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let tracker = FileTracker::new();
        tracker.mark_read(&workspace.canonical("main.rs").unwrap()).unwrap();
        let previewer = Previewer::new(workspace, tracker, "workspace-write, network off".into());
        let style = Style::plain(60);
        let preview = approval(&request(tool, arguments), Some(&previewer), &style);
        let root = dir.path().canonicalize().unwrap().display().to_string();
        let text = format!("{}\n{}", preview.title, preview.block.render(&style, None, ""));
        text.replace(&root, "[WS]")
    }

    #[test]
    fn previews() {
        insta::assert_snapshot!(check("edit_file", r#"{"path":"main.rs","old_string":"println!(\"hello\");","new_string":"println!(\"hello, world\");"}"#), @r#"
        main.rs
          @@ -1,3 +1,3 @@
           fn main() {
          -    println!("hello");
          +    println!("hello, world");
           }
        "#);
        insta::assert_snapshot!(check("write_file", r#"{"path":"src/new.rs","content":"one\ntwo\n"}"#), @r"
        src/new.rs (new file, 2 lines)
          +one
          +two
        ");
        insta::assert_snapshot!(check("edit_file", r#"{"path":"main.rs","old_string":"nope","new_string":"x"}"#), @r#"
        main.rs
          the call would fail: old_string not found in main.rs, and
          no similar text was found. Re-read the file with read_file
          and copy the text exactly
        "#);
        insta::assert_snapshot!(check(
            "apply_patch",
            r#"{"patch":"*** Begin Patch\n*** Update File: main.rs\n*** Move to: src/main.rs\n@@\n-    println!(\"hello\");\n+    println!(\"patched\");\n*** Add File: notes.md\n+# Notes\n*** End Patch"}"#
        ));
        insta::assert_snapshot!(check(
            "apply_patch",
            "*** Begin Patch\n*** Delete File: missing.rs\n*** End Patch"
        ));
        insta::assert_snapshot!(check("bash", r#"{"command":"cargo test --workspace --all-features -- --nocapture --test-threads 1 && echo done","workdir":"crates","description":"run the tests"}"#), @r"

          $ cargo test --workspace --all-features -- --nocapture
            --test-threads 1 && echo done
          in [WS]/crates
          sandbox: workspace-write, network off
          run the tests
        ");
        insta::assert_snapshot!(check("mcp__files__search", r#"{"query":"main","limit":5}"#), @r#"
        (MCP server `files`, tool `search`)
          {
            "query": "main",
            "limit": 5
          }
        "#);
    }
}
