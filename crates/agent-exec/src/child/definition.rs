//! Agent definitions: the agents a `task` call may name, as the runtime takes them (the built-ins
//! here; the files a project or the user writes are read by the `agent-skills` crate, so this
//! crate holds no frontmatter parser).

use std::path::PathBuf;

use agent_core::ToolSpec;
use serde::Serialize;

use crate::{hooks::HookTool, permission::PermissionMode};

/// Where a definition came from; later kinds in this list win over earlier ones of the same
/// name (a project's `.agent/agents/` file over the built-in of that name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DefinitionSource {
    /// Built into the harness (`explore`, `general`).
    Builtin,
    /// The user's config directory, `agents/`.
    User,
    /// The project's `.claude/agents/` (Claude Code's files).
    Claude,
    /// The project's `.agent/agents/`.
    Project,
}

impl DefinitionSource {
    /// The source's name: `builtin`, `user`, `claude`, `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            DefinitionSource::Builtin => "builtin",
            DefinitionSource::User => "user",
            DefinitionSource::Claude => "claude",
            DefinitionSource::Project => "project",
        }
    }
}

/// One agent a `task` call may name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentDefinition {
    /// The name a call uses.
    pub name: String,
    /// When to use it, shown to the parent model.
    pub description: String,
    /// The tools it may have, by any of their names (ours, the rule name, Claude Code's); `None`
    /// for all of the parent's. Never more than the parent has.
    pub tools: Option<Vec<String>>,
    /// Tools it may not have, by any of their names.
    pub disallowed: Vec<String>,
    /// Only tools whose effects are read-only (the built-in `explore`).
    pub read_only: bool,
    /// The model it asks for; the front end decides what that means.
    pub model: Option<String>,
    /// The mode it asks for, narrowed by the parent's.
    pub permission_mode: Option<PermissionMode>,
    /// Its own turn limit, capped by the session's.
    pub max_turns: Option<usize>,
    /// Its instructions (the file's body).
    pub instructions: String,
    /// Frontmatter keys that were read but mean nothing here (Claude Code's `color`, `hooks`,
    /// …), for `agent agents list` to say so.
    pub ignored: Vec<String>,
    /// Where it came from.
    pub source: DefinitionSource,
    /// The file, for those read from one.
    pub path: Option<PathBuf>,
}

impl AgentDefinition {
    /// Whether this definition lets the child have the tool `spec`.
    pub fn allows(&self, spec: &ToolSpec) -> bool {
        let hook = HookTool::of(spec);
        let names = [spec.name.as_str(), spec.rule_name.as_str(), hook.claude_code_name()];
        let named = |list: &[String]| {
            list.iter().any(|wanted| {
                names.contains(&wanted.as_str()) || spec.aliases.iter().any(|a| a == wanted)
            })
        };
        if self.read_only && !spec.effects.read_only {
            return false;
        }
        if named(&self.disallowed) {
            return false;
        }
        self.tools.as_deref().is_none_or(named)
    }

    /// The built-in definitions: `explore` (read-only tools, for looking around) and `general`
    /// (the parent's tools, for a task of its own), used when a call names no agent.
    pub fn builtins() -> Vec<AgentDefinition> {
        let base =
            |name: &str, description: &str, read_only: bool, instructions: &str| AgentDefinition {
                name: name.to_owned(),
                description: description.to_owned(),
                tools: None,
                disallowed: Vec::new(),
                read_only,
                model: None,
                permission_mode: None,
                max_turns: None,
                instructions: instructions.to_owned(),
                ignored: Vec::new(),
                source: DefinitionSource::Builtin,
                path: None,
            };
        vec![
            base("explore", "read-only: searches, reads and reports", true, EXPLORE_INSTRUCTIONS),
            base("general", "the parent's tools", false, GENERAL_INSTRUCTIONS),
        ]
    }
}

const EXPLORE_INSTRUCTIONS: &str = "\
You are a read-only explorer working for another agent in the user's workspace. Find what the \
task asks for with the tools you have; you cannot change anything. Answer with the facts found \
(file paths, line numbers, short quotes), concisely: your answer is all the other agent sees.";

const GENERAL_INSTRUCTIONS: &str = "\
You are a sub-agent doing one task for another agent in the user's workspace. Do the task with \
the tools you have, then answer with what you did and found, concisely: your answer is all the \
other agent sees.";
