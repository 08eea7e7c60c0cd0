//! The Responses API's native tool items: custom tools, and the `apply_patch` and `shell`
//! built-ins, as the tools we offer, the calls we read, and the items that answer them.
//!
//! A built-in call becomes an ordinary [`ToolCall`] of a local tool: an `apply_patch_call`'s file
//! operation becomes the patch text the `apply_patch` tool takes (`*** Begin Patch` …), a
//! `shell_call`'s action the JSON the `shell` tool takes. Replaying a call rebuilds the item from
//! that text, so the transcript holds one form of each call.

use agent_core::{
    BuiltinTool, CallOutput, CallShape, GrammarSyntax, Item, TextFormat, ToolCall, ToolShape,
    ToolSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use super::operation::{Operation, operation, patch_text};
use super::wire::OutputBody;
use crate::{images::ImagePlan, lenient};

/// The tool name an `apply_patch_call` runs.
pub(crate) const APPLY_PATCH: &str = "apply_patch";
/// The tool name a `shell_call` runs.
pub(crate) const SHELL: &str = "shell";

/// One tool as the Responses API takes it.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum RequestTool<'a> {
    /// A flat function tool (the Responses API does not nest it under `function`).
    Function { name: &'a str, description: &'a str, parameters: &'a Value, strict: bool },
    /// A custom tool: the model writes raw text in `format`.
    Custom { name: &'a str, description: &'a str, format: CustomFormat<'a> },
    /// The `apply_patch` built-in.
    ApplyPatch,
    /// The `shell` built-in.
    Shell,
}

/// A custom tool's `format`, flat on the Responses API.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum CustomFormat<'a> {
    Text,
    Grammar { syntax: &'static str, definition: &'a str },
}

impl<'a> CustomFormat<'a> {
    pub(crate) fn of(format: &'a TextFormat) -> Self {
        match format {
            TextFormat::Text => Self::Text,
            TextFormat::Grammar(grammar) => {
                Self::Grammar { syntax: syntax(grammar.syntax), definition: &grammar.definition }
            }
        }
    }
}

/// A grammar syntax's wire name, the same on both APIs.
pub(crate) fn syntax(syntax: GrammarSyntax) -> &'static str {
    match syntax {
        GrammarSyntax::Lark => "lark",
        GrammarSyntax::Regex => "regex",
    }
}

/// The shape a tool is sent in: its own, unless custom tools are off (a server refused them),
/// which turns a freeform tool back into its function.
pub(crate) fn sent_shape(tool: &ToolSpec, custom: bool) -> ToolShape {
    match (tool.shape, &tool.text_input) {
        (ToolShape::Freeform, Some(_)) if custom => ToolShape::Freeform,
        (ToolShape::Builtin(builtin), _) => ToolShape::Builtin(builtin),
        _ => ToolShape::Function,
    }
}

/// A tool as sent.
pub(crate) fn request_tool(tool: &ToolSpec, custom: bool) -> RequestTool<'_> {
    match (sent_shape(tool, custom), &tool.text_input) {
        (ToolShape::Freeform, Some(input)) => RequestTool::Custom {
            name: &tool.name,
            description: &tool.description,
            format: CustomFormat::of(&input.format),
        },
        (ToolShape::Builtin(BuiltinTool::ApplyPatch), _) => RequestTool::ApplyPatch,
        (ToolShape::Builtin(BuiltinTool::Shell), _) => RequestTool::Shell,
        _ => RequestTool::Function {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
            strict: tool.strict,
        },
    }
}

/// A `shell_call`'s action, which is also the `shell` tool's JSON input.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ShellAction {
    #[serde(default, deserialize_with = "lenient::nullable")]
    pub(crate) commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_length: Option<u64>,
}

impl ShellAction {
    /// The tool arguments of this action.
    pub(crate) fn arguments(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// The action a `shell` call's arguments hold (empty when they do not parse).
    pub(crate) fn of(arguments: &str) -> Self {
        serde_json::from_str(arguments).unwrap_or_default()
    }
}

/// One command's entry in a `shell_call_output`.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ShellEntry {
    #[serde(default)]
    pub(crate) stdout: String,
    #[serde(default)]
    pub(crate) stderr: String,
    pub(crate) outcome: ShellOutcome,
}

/// How one command ended.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ShellOutcome {
    Exit { exit_code: i64 },
    Timeout,
}

/// The `shell` tool's output as `shell_call_output` entries: the tool writes `{"output":
/// [entries]}`; anything else (the call was refused as a whole, its input did not parse) is one
/// failed entry whose stderr is the observation.
pub(crate) fn shell_entries(output: &CallOutput) -> Vec<ShellEntry> {
    #[derive(Deserialize)]
    struct Written {
        output: Vec<ShellEntry>,
    }
    if let Ok(written) = serde_json::from_str::<Written>(&output.output) {
        return written.output;
    }
    vec![ShellEntry {
        stdout: String::new(),
        stderr: output.output.clone(),
        outcome: ShellOutcome::Exit { exit_code: 1 },
    }]
}

/// An input item for a call or an output of one of the native shapes.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum NativeItem<'a> {
    CustomToolCall {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        name: &'a str,
        input: &'a str,
    },
    CustomToolCallOutput {
        call_id: &'a str,
        output: OutputBody<'a>,
    },
    ApplyPatchCall {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        status: &'static str,
        operation: Operation,
    },
    ApplyPatchCallOutput {
        call_id: &'a str,
        status: &'static str,
        output: &'a str,
    },
    ShellCall {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        status: &'static str,
        action: ShellAction,
    },
    ShellCallOutput {
        call_id: &'a str,
        output: Vec<ShellEntry>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_output_length: Option<u64>,
    },
}

/// The item replaying a call of a native shape (`None` for a function call).
pub(crate) fn call_item(call: &ToolCall, stateless: bool) -> Option<NativeItem<'_>> {
    let id = if stateless { None } else { call.item_id.as_deref() };
    let call_id = call.call_id.as_str();
    Some(match call.shape {
        CallShape::Function => return None,
        CallShape::Custom => {
            NativeItem::CustomToolCall { id, call_id, name: &call.name, input: &call.arguments }
        }
        CallShape::ApplyPatch => NativeItem::ApplyPatchCall {
            id,
            call_id,
            status: "completed",
            operation: operation(&call.arguments),
        },
        CallShape::Shell => NativeItem::ShellCall {
            id,
            call_id,
            status: "completed",
            action: ShellAction::of(&call.arguments),
        },
    })
}

/// The item answering `output`, by the shape of the call it answers (`None` for a function
/// call, or a call the transcript no longer holds).
pub(crate) fn output_item<'a>(
    output: &'a CallOutput,
    call: &ToolCall,
    plan: &ImagePlan<'a>,
) -> Option<NativeItem<'a>> {
    let call_id = output.call_id.as_str();
    Some(match call.shape {
        CallShape::Function => return None,
        CallShape::Custom => {
            NativeItem::CustomToolCallOutput { call_id, output: OutputBody::of(output, plan) }
        }
        CallShape::ApplyPatch => NativeItem::ApplyPatchCallOutput {
            call_id,
            status: if output.ok { "completed" } else { "failed" },
            output: &output.output,
        },
        CallShape::Shell => NativeItem::ShellCallOutput {
            call_id,
            output: shell_entries(output),
            max_output_length: ShellAction::of(&call.arguments).max_output_length,
        },
    })
}

/// The calls of native shapes in a transcript, by `call_id`, to answer their outputs in kind
/// (a continued request sends outputs whose calls the server already holds).
pub(crate) fn native_calls(items: &[Item]) -> Vec<&ToolCall> {
    items
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall(call) if !call.shape.is_function() => Some(call),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_output_that_is_not_the_tools_json_is_one_failed_entry() {
        let output = CallOutput {
            call_id: "c".into(),
            output: "{\"ok\":false,\"error\":\"permission_denied\"}".into(),
            ok: false,
            error: None,
            images: Vec::new(),
        };
        let entries = shell_entries(&output);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].outcome, ShellOutcome::Exit { exit_code: 1 });
        assert_eq!(entries[0].stderr, output.output);
    }
}
