//! A turn's tool limit: the tools the model may use in the turn an invoked skill narrows with its
//! `allowed-tools` (the skill files themselves are read by the `agent-skills` crate).
//!
//! A limit only takes away. A tool outside it is refused before the permission policy is asked;
//! a tool inside it is still judged by the policy, exactly as without the limit. The names are
//! Claude Code's (`Read`, `Bash(git:*)`), our rule names (`ListDir`, `mcp__github`) or our tool
//! names (`read_file`); a name that is none of these admits nothing (docs/skills.md, the table).

use agent_core::{ToolError, ToolErrorKind, ToolSpec};

/// Claude Code's tool names, as the rule names of our tools they stand for (words of the
/// language a skill's author writes, as the hooks' matchers are).
const CLAUDE_NAMES: &[(&str, &[&str])] = &[
    ("Read", &["Read"]),
    ("Write", &["Edit"]),
    ("Edit", &["Edit"]),
    ("MultiEdit", &["Edit"]),
    ("NotebookEdit", &["Edit"]),
    ("Bash", &["Bash", "Shell"]),
    ("Glob", &["Glob"]),
    ("Grep", &["Grep"]),
    ("LS", &["ListDir"]),
    ("WebFetch", &["WebFetch"]),
    ("WebSearch", &["WebSearch"]),
    ("Task", &["Task"]),
    ("TodoWrite", &["UpdatePlan"]),
];

/// The tools a turn may use: those the invoked skills' `allowed-tools` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLimit {
    /// The skills that set it, for the refusal.
    skills: Vec<String>,
    /// Every name they list, the part in parentheses dropped.
    names: Vec<String>,
}

impl ToolLimit {
    /// The limit the skills named `skills` set together, admitting every tool one of `entries`
    /// names (`allowed-tools` entries as written: `Bash(git:*)` admits the tool, and the policy
    /// still judges the command).
    pub fn new<'a>(
        skills: impl IntoIterator<Item = String>,
        entries: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut names: Vec<String> = Vec::new();
        for entry in entries {
            let name = entry.split_once('(').map_or(entry, |(name, _)| name).trim();
            if !name.is_empty() && !names.iter().any(|known| known == name) {
                names.push(name.to_owned());
            }
        }
        Self { skills: skills.into_iter().collect(), names }
    }

    /// Whether the tool of `spec` may be used under this limit.
    pub fn admits(&self, spec: &ToolSpec) -> bool {
        self.names.iter().any(|name| names_tool(name, spec))
    }

    /// The observation for a call of `spec` outside the limit.
    pub fn refusal(&self, spec: &ToolSpec) -> ToolError {
        let skills: Vec<String> = self.skills.iter().map(|name| format!("`{name}`")).collect();
        ToolError::new(
            ToolErrorKind::PermissionDenied,
            format!(
                "`{}` is not among the tools the skill {} allows in this turn (allowed-tools: \
                 {}); use one of those, or tell the user what the skill would need",
                spec.name,
                skills.join(", "),
                self.names.join(", ")
            ),
        )
    }
}

/// Whether `name` (one `allowed-tools` entry without its parentheses) names the tool of `spec`.
fn names_tool(name: &str, spec: &ToolSpec) -> bool {
    if name == spec.name || name == spec.rule_name || spec.aliases.iter().any(|a| a == name) {
        return true;
    }
    // `mcp__github` names every tool of that server.
    if spec.name.starts_with("mcp__") && spec.name.starts_with(&format!("{name}__")) {
        return true;
    }
    CLAUDE_NAMES
        .iter()
        .find(|(claude, _)| *claude == name)
        .is_some_and(|(_, rules)| rules.contains(&spec.rule_name.as_str()))
}

#[cfg(test)]
mod tests {
    use agent_core::Effects;

    use super::*;

    fn spec(name: &str, rule: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
            strict: false,
            aliases: vec![],
            effects: Effects::READ_ONLY,
            rule_name: rule.into(),
            text_input: None,
            shape: agent_core::ToolShape::Function,
        }
    }

    /// Whether a turn whose skills allow `allowed` may use `tool` (rule `rule`).
    #[track_caller]
    fn check(allowed: &[&str], tool: (&str, &str), admitted: bool) {
        let limit = ToolLimit::new(["s".to_owned()], allowed.iter().copied());
        assert_eq!(limit.admits(&spec(tool.0, tool.1)), admitted, "{allowed:?} {tool:?}");
    }

    #[test]
    fn names_map_to_our_tools_and_unknown_names_admit_nothing() {
        check(&["Read"], ("read_file", "Read"), true);
        check(&["Read"], ("view_image", "Read"), true);
        check(&["Read"], ("bash", "Bash"), false);
        check(&["Write"], ("apply_patch", "Edit"), true);
        check(&["Bash(git:*)"], ("bash", "Bash"), true);
        check(&["Bash(git:*)"], ("edit_file", "Edit"), false);
        check(&["LS", "Grep"], ("list_dir", "ListDir"), true);
        check(&["read_file"], ("read_file", "Read"), true);
        check(&["ExecuteCode"], ("execute_code", "ExecuteCode"), true);
        check(&["mcp__github"], ("mcp__github__list", "mcp__github__list"), true);
        check(&["mcp__git"], ("mcp__github__list", "mcp__github__list"), false);
        check(&["Frobnicate"], ("bash", "Bash"), false);
    }

    #[test]
    fn the_refusal_names_the_skills_and_what_they_allow() {
        let limit = ToolLimit::new(["a".to_owned(), "b".to_owned()], ["Read", "Bash(git:*)"]);
        let refusal = limit.refusal(&spec("edit_file", "Edit"));
        assert_eq!(refusal.kind, ToolErrorKind::PermissionDenied);
        assert_eq!(
            refusal.message,
            "`edit_file` is not among the tools the skill `a`, `b` allows in this turn \
             (allowed-tools: Read, Bash); use one of those, or tell the user what the skill \
             would need"
        );
    }
}
