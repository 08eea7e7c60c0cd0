//! `allowed-tools` as a limit: the [`ToolLimit`] of the turn a skill is invoked in, which the
//! executor applies (`Executor::set_tool_limit`); what each name admits is the executor's.

use agent_exec::ToolLimit;

use crate::Skill;

/// The limit of a turn that invokes `skills`: `None` when one of them sets no `allowed-tools`
/// (it asks for no limit, so the turn has none), else every tool any of them names.
pub fn tool_limit<'a>(skills: impl IntoIterator<Item = &'a Skill>) -> Option<ToolLimit> {
    let mut names = Vec::new();
    let mut entries = Vec::new();
    for skill in skills {
        if skill.allowed_tools.is_empty() {
            return None;
        }
        names.push(skill.name.clone());
        entries.extend(skill.allowed_tools.iter().map(String::as_str));
    }
    (!names.is_empty()).then(|| ToolLimit::new(names, entries))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use agent_core::{Effects, ToolShape, ToolSpec};

    use super::*;
    use crate::SkillSource;

    fn skill(name: &str, allowed: &[&str]) -> Skill {
        Skill {
            name: name.into(),
            description: "d".into(),
            path: PathBuf::from("/s/SKILL.md"),
            source: SkillSource::User,
            allowed_tools: allowed.iter().map(|s| (*s).to_owned()).collect(),
            license: None,
            body: String::new(),
            warnings: vec![],
            text: String::new(),
        }
    }

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
            shape: ToolShape::Function,
        }
    }

    #[test]
    fn two_skills_in_one_turn_admit_the_tools_either_names() {
        let skills = [skill("a", &["Read"]), skill("b", &["Bash"])];
        let limit = tool_limit(&skills).expect("a limit");
        assert!(limit.admits(&spec("bash", "Bash")));
        assert!(limit.admits(&spec("read_file", "Read")));
        assert!(!limit.admits(&spec("edit_file", "Edit")));
        assert!(limit.refusal(&spec("edit_file", "Edit")).message.contains("`a`, `b`"));
    }

    #[test]
    fn a_skill_without_the_field_sets_no_limit() {
        assert!(tool_limit(&[skill("a", &[])]).is_none());
        assert!(tool_limit(&[skill("a", &["Read"]), skill("b", &[])]).is_none());
        assert!(tool_limit(&[]).is_none());
    }
}
