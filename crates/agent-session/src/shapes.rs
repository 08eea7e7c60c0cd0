//! Which edit tool a profile's model gets, in which shape, and whether it gets the Responses
//! `shell` built-in: the profile's `edit_tool`, `apply_patch_shape` and `shell_tool`, over a
//! built-in table of defaults by model family (see docs/models.md, "Tool shapes").

use std::sync::Arc;

use agent_core::{BuiltinTool, Reshaped, TextInput, Tool, ToolShape};
use serde::Deserialize;

use crate::config::{Api, Profile};

/// The tool a model edits files with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditTool {
    /// `edit_file` (exact string replacement), for every model.
    EditFile,
    /// `apply_patch` (the `*** Begin Patch` format GPT-5-class and codex models are trained on).
    ApplyPatch,
}

/// The shape `apply_patch` is offered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchShape {
    /// A function tool with one string argument, `patch`: any model, any server.
    Function,
    /// A custom tool whose raw text follows the patch grammar (both OpenAI APIs).
    Freeform,
    /// The Responses API's own `apply_patch` tool type (Responses only).
    Builtin,
}

/// What a profile's model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolShapes {
    /// Which edit tool the model gets (`apply_patch` or `edit_file`).
    pub edit_tool: EditTool,
    /// How `apply_patch` is offered (a function, or the Responses API's custom grammar).
    pub patch_shape: PatchShape,
    /// Whether the model gets the shell built-in.
    pub shell: bool,
}

/// The model families the defaults know: those trained on the patch format.
fn patch_family(model: &str) -> bool {
    // `openai/gpt-5.1-codex` on a router names the same model as `gpt-5.1-codex`.
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    name.starts_with("gpt-5") || name.contains("codex")
}

impl ToolShapes {
    /// The built-in defaults for `model` on `api`: GPT-5-class and codex models edit with a
    /// freeform `apply_patch` (Codex's own choice for them), every other model with `edit_file`
    /// and function tools; the shell built-in is off (bash is the command tool).
    pub fn defaults(model: &str, _api: Api) -> Self {
        let edit_tool = if patch_family(model) { EditTool::ApplyPatch } else { EditTool::EditFile };
        let patch_shape = if edit_tool == EditTool::ApplyPatch {
            PatchShape::Freeform
        } else {
            PatchShape::Function
        };
        Self { edit_tool, patch_shape, shell: false }
    }

    /// The profile's settings over the defaults. Built-in shapes exist only on the Responses
    /// API: on Chat Completions the built-in patch shape is the freeform one and the shell
    /// built-in is off.
    pub fn resolve(model: &str, api: Api, profile: &Profile) -> Self {
        let defaults = Self::defaults(model, api);
        let mut shapes = Self {
            edit_tool: profile.edit_tool.unwrap_or(defaults.edit_tool),
            patch_shape: profile.apply_patch_shape.unwrap_or(defaults.patch_shape),
            shell: profile.shell_tool.unwrap_or(defaults.shell),
        };
        if api == Api::Chat {
            if shapes.patch_shape == PatchShape::Builtin {
                shapes.patch_shape = PatchShape::Freeform;
            }
            shapes.shell = false;
        }
        shapes
    }

    /// A registered tool as this profile offers it: the edit tool not chosen is dropped (unless
    /// `--tools`/`tools` names it), `apply_patch` takes its shape.
    pub fn offer(self, tool: Arc<dyn Tool>, named: &[String]) -> Option<Arc<dyn Tool>> {
        let name = tool.spec().name.as_str();
        let named = named.iter().any(|wanted| wanted == name);
        match (name, self.edit_tool) {
            ("edit_file", EditTool::ApplyPatch) | ("apply_patch", EditTool::EditFile) if !named => {
                None
            }
            ("apply_patch", EditTool::ApplyPatch) => {
                let shape = match self.patch_shape {
                    PatchShape::Function => ToolShape::Function,
                    PatchShape::Freeform => ToolShape::Freeform,
                    PatchShape::Builtin => ToolShape::Builtin(BuiltinTool::ApplyPatch),
                };
                // The patch text is the tool's one string argument, `patch`; a tool that declares
                // its grammar sends it, one that does not is freeform text.
                let text = Some(TextInput::text("patch"));
                Some(Arc::new(Reshaped::with_default_text(tool, shape, text)))
            }
            _ => Some(tool),
        }
    }
}

/// The shape a tool is sent in on `api`, as `agent tools list` shows it: a built-in on Chat
/// Completions goes as its function.
pub fn shown(shape: ToolShape, api: Api) -> &'static str {
    match (shape, api) {
        (ToolShape::Builtin(_), Api::Chat) => ToolShape::Function.as_str(),
        (shape, _) => shape.as_str(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(model: &str, api: Api, toml: &str, expect: (EditTool, PatchShape, bool)) {
        let profile: Profile = toml::from_str(toml).unwrap();
        let shapes = ToolShapes::resolve(model, api, &profile);
        assert_eq!(
            (shapes.edit_tool, shapes.patch_shape, shapes.shell),
            expect,
            "{model} {api:?} {toml}"
        );
    }

    #[test]
    fn defaults_by_family_and_profile_settings() {
        use EditTool::*;
        use PatchShape::*;
        check("gpt-5.1-codex", Api::Responses, "", (ApplyPatch, Freeform, false));
        check("openai/GPT-5-mini", Api::Chat, "", (ApplyPatch, Freeform, false));
        check("gpt-4.1", Api::Responses, "", (EditFile, Function, false));
        check("qwen3:8b", Api::Chat, "", (EditFile, Function, false));
        check(
            "gpt-5",
            Api::Responses,
            "apply_patch_shape = \"builtin\"\nshell_tool = true",
            (ApplyPatch, Builtin, true),
        );
        // The built-ins exist only on the Responses API.
        check(
            "gpt-5",
            Api::Chat,
            "apply_patch_shape = \"builtin\"\nshell_tool = true",
            (ApplyPatch, Freeform, false),
        );
        check("qwen3:8b", Api::Chat, "edit_tool = \"apply_patch\"", (ApplyPatch, Function, false));
        check("gpt-5", Api::Responses, "edit_tool = \"edit_file\"", (EditFile, Freeform, false));
    }
}
