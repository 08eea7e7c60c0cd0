//! The tool events of hooks around the executor's one run path: `PreToolUse` before a call is
//! validated and judged, `PostToolUse` or `PostToolUseFailure` after its outcome. `dispatch`
//! comes here after the look-up when the session has hooks, and this calls the same
//! `run_entry` an unhooked call goes to.
//!
//! Every call that names a known tool passes here, whoever made it (the model, a direct call)
//! and wherever the tool came from (the registry, or an MCP server that joined late), so a deny
//! hook holds for all of them.

use std::{borrow::Cow, path::Path, time::Instant};

use agent_core::{CancellationToken, ToolCall, ToolError, ToolErrorKind, ToolSpec};
use serde_json::{Map, Value};

use super::{Executor, Outcome};
use crate::{
    hooks::{HookEvent, HookResult, HookTool, Permission},
    permission::{Ask, Remedy, Verdict},
    registry::Entry,
};

/// What the `PreToolUse` hooks changed about a call before it is dispatched.
#[derive(Debug, Default)]
pub(super) struct Overrides {
    /// The replaced arguments, as JSON text, validated again like the model's.
    pub(super) arguments: Option<String>,
    /// An allow or ask decision, with its reason.
    pub(super) permission: Option<(Permission, Option<String>)>,
}

impl Overrides {
    /// The call as dispatched: with the hooks' replacement arguments, if any.
    pub(super) fn call<'a>(&self, call: &'a ToolCall) -> Cow<'a, ToolCall> {
        match &self.arguments {
            Some(arguments) => {
                Cow::Owned(ToolCall { arguments: arguments.clone(), ..call.clone() })
            }
            None => Cow::Borrowed(call),
        }
    }

    /// An argument error, saying that a hook wrote the arguments when one did.
    pub(super) fn explain(&self, mut err: ToolError) -> ToolError {
        if self.arguments.is_some() {
            err.message = format!(
                "a PreToolUse hook replaced this call's input, and the replacement was refused: {}",
                err.message
            );
        }
        err
    }

    /// The policy's verdict after the hooks' decision: a hook's allow answers what the policy
    /// would have asked, and its ask puts an allowed call to the user; neither overrides a deny.
    pub(super) fn verdict(&self, verdict: Verdict) -> Verdict {
        match (verdict, &self.permission) {
            (Verdict::Ask(_), Some((Permission::Allow, _))) => Verdict::Allow,
            (Verdict::Allow, Some((Permission::Ask, reason))) => Verdict::Ask(Ask {
                reason: reason
                    .clone()
                    .unwrap_or_else(|| "a PreToolUse hook asks for approval".to_owned()),
                remedy: Remedy::default(),
            }),
            (verdict, _) => verdict,
        }
    }
}

/// Hook text appended to an observation is cut to this many characters.
const NOTE_CAP: usize = 2_000;

/// The file tools whose `path` argument hooks also see as Claude Code's absolute `file_path`.
const FILE_TOOLS: [&str; 3] = ["Read", "Write", "Edit"];

impl Executor {
    /// One call of a tool that was found, with its hooks around it.
    pub(super) async fn run_hooked(
        &self,
        call: &ToolCall,
        entry: &Entry,
        cancel: &CancellationToken,
    ) -> Outcome {
        let start = Instant::now();
        // The entry comes from `lookup`, not the registry alone: tools that joined late (MCP
        // servers) pass the same hooks as the built-ins.
        let spec = entry.tool.spec();
        let tool = HookTool::of(spec);
        let (tool_input, file_path) = self.tool_input(spec, &call.arguments);
        let mut overrides = Overrides::default();
        let mut notes = Vec::new();
        let mut stop = None;
        if self.hooks.wants(HookEvent::PreToolUse, Some(&tool)) {
            let mut fields = Map::new();
            fields.insert("tool_input".into(), tool_input.clone());
            fields.insert("tool_use_id".into(), call.call_id.clone().into());
            let result = self.hooks.run(HookEvent::PreToolUse, Some(&tool), fields, cancel).await;
            if let Some(reason) = &result.block {
                self.otel.decision(false, "hook");
                let err = ToolError::new(
                    ToolErrorKind::PermissionDenied,
                    format!(
                        "a PreToolUse hook blocked this call: {}. Do not retry it unchanged",
                        cap(reason)
                    ),
                );
                let mut outcome = self.failure(call, &spec.name, err, start);
                outcome.stop = result.stop;
                return outcome;
            }
            if let Some(input) = result.updated_input {
                let input = from_hook_input(input, file_path.as_deref());
                overrides.arguments = Some(input.to_string());
            }
            overrides.permission = result.permission.map(|p| (p, result.permission_reason));
            notes.extend(
                result.context.iter().map(|text| format!("[PreToolUse hook] {}", cap(text))),
            );
            stop = result.stop;
        }
        let dispatched = Instant::now();
        let mut outcome = self.run_entry(call, entry, cancel, &overrides).await;
        // Hooks count in the duration; the approval wait inside dispatch does not (its outcome's
        // duration already leaves it out).
        let approval_wait = dispatched.elapsed().saturating_sub(outcome.duration);
        let event = if outcome.ok { HookEvent::PostToolUse } else { HookEvent::PostToolUseFailure };
        if self.hooks.wants(event, Some(&tool)) {
            let input = match &overrides.arguments {
                Some(arguments) => self.tool_input(spec, arguments).0,
                None => tool_input,
            };
            let result = self.post_tool_use(event, &tool, call, input, &outcome, cancel).await;
            if let Some(reason) = &result.block {
                notes.push(format!("[{event} hook] {}", cap(reason)));
            }
            notes.extend(result.context.iter().map(|text| format!("[{event} hook] {}", cap(text))));
            stop = stop.or(result.stop);
        }
        for note in notes {
            outcome.text.push('\n');
            outcome.text.push_str(&note);
        }
        outcome.stop = outcome.stop.or(stop);
        outcome.duration = start.elapsed().saturating_sub(approval_wait);
        outcome
    }

    async fn post_tool_use(
        &self,
        event: HookEvent,
        tool: &HookTool<'_>,
        call: &ToolCall,
        tool_input: Value,
        outcome: &Outcome,
        cancel: &CancellationToken,
    ) -> HookResult {
        let mut fields = Map::new();
        fields.insert("tool_input".into(), tool_input);
        fields.insert("tool_use_id".into(), call.call_id.clone().into());
        if outcome.ok {
            fields.insert("tool_response".into(), outcome.text.clone().into());
        } else {
            fields.insert("error".into(), outcome.text.clone().into());
            let code = outcome.error_code.as_ref().map_or("", ToolErrorKind::as_str);
            fields.insert("error_code".into(), code.into());
            let interrupted = outcome.error_code == Some(ToolErrorKind::Cancelled);
            fields.insert("is_interrupt".into(), interrupted.into());
        }
        self.hooks.run(event, Some(tool), fields, cancel).await
    }

    /// The call's arguments as hooks see them: the JSON object the model sent (a string when it
    /// is not JSON), plus, for file tools, the absolute `file_path` Claude Code's scripts read.
    /// Returns the `file_path` that was added, if any.
    fn tool_input(&self, spec: &ToolSpec, arguments: &str) -> (Value, Option<String>) {
        let mut input = match serde_json::from_str::<Value>(arguments) {
            Ok(value) => value,
            Err(_) => return (Value::String(arguments.to_owned()), None),
        };
        let tool = HookTool::of(spec);
        if !FILE_TOOLS.contains(&tool.claude_code_name()) {
            return (input, None);
        }
        let Some(object) = input.as_object_mut() else { return (input, None) };
        let Some(path) = object.get("path").and_then(Value::as_str) else { return (input, None) };
        if object.contains_key("file_path") {
            return (input, None);
        }
        let absolute = self.policy.workspace().root().join(Path::new(path)).display().to_string();
        object.insert("file_path".into(), absolute.clone().into());
        (input, Some(absolute))
    }
}

/// A hook's replacement input, without the `file_path` this side added; a hook that changed
/// `file_path` (and not `path`) moves the call to that file.
fn from_hook_input(mut input: Value, added: Option<&str>) -> Value {
    let (Some(added), Some(object)) = (added, input.as_object_mut()) else { return input };
    if let Some(Value::String(file_path)) = object.remove("file_path")
        && file_path != added
    {
        object.insert("path".into(), file_path.into());
    }
    input
}

/// Hook text for the model, cut to [`NOTE_CAP`] characters.
fn cap(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(NOTE_CAP) {
        Some((cut, _)) => format!("{}… [cut]", &text[..cut]),
        None => text.to_owned(),
    }
}
