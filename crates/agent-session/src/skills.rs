//! The session's skills and custom commands: where they are looked for, whether a project's are
//! used, the skills list in the instructions, and `$name` in a prompt.
//!
//! A project's skills and commands are text a repository wrote. Like its hooks they are used
//! in the REPL only once the user has said yes to exactly that text (asked once, remembered by
//! content in `trusted-skills.json`); `exec` reads them without asking, since nothing in a skill
//! or a command can widen what the session may do: `allowed-tools` only narrows the turn a skill
//! is invoked in, its kin are never turned into rules, and a skill's scripts run through the
//! permission policy like any command.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use agent_core::TokenCounter;
use agent_exec::{AgentBuilder, RuleAction, ToolLimit};
use agent_skills::{Catalog, SkillRoot, SkillSource};

use crate::error::Context;
use crate::{Frontend, commands::Commands, hooks::Trust, log::SessionLog, visible::visible_line};

/// The most bytes of a skill body that `$name` adds to a prompt.
pub const MENTION_CAP: usize = 32 * 1024;

/// What a session knows of skills and commands.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// The skills found, the project's only once trusted.
    pub catalog: Catalog,
    /// The custom commands found.
    pub commands: Commands,
}

/// Where skills are looked for, in precedence order: the project's `.agents/skills/` and
/// `.agent/skills/`, the config directory's `skills/`, the project's `.claude/skills/`, and
/// `~/.claude/skills/`.
pub fn roots(workspace: &Path, config_dir: Option<&Path>, home: Option<&Path>) -> Vec<SkillRoot> {
    let mut roots = vec![
        SkillRoot { dir: workspace.join(".agents/skills"), source: SkillSource::Project },
        SkillRoot { dir: workspace.join(".agent/skills"), source: SkillSource::Project },
    ];
    roots.extend(
        config_dir.map(|dir| SkillRoot { dir: dir.join("skills"), source: SkillSource::User }),
    );
    roots.push(SkillRoot {
        dir: workspace.join(".claude/skills"),
        source: SkillSource::ClaudeProject,
    });
    roots.extend(home.map(|home| SkillRoot {
        dir: home.join(".claude/skills"),
        source: SkillSource::ClaudeUser,
    }));
    roots
}

/// Where commands are looked for, in the same order: `(folder, from the project)`.
pub fn command_roots(
    workspace: &Path,
    config_dir: Option<&Path>,
    home: Option<&Path>,
) -> Vec<(PathBuf, bool)> {
    let mut roots = vec![(workspace.join(".agent/commands"), true)];
    roots.extend(config_dir.map(|dir| (dir.join("commands"), false)));
    roots.push((workspace.join(".claude/commands"), true));
    roots.extend(home.map(|home| (home.join(".claude/commands"), false)));
    roots
}

/// Finds the skills and commands; in the REPL, a project's are kept only once trusted.
pub fn discover(
    workspace: &Path,
    config_dir: Option<&Path>,
    trust: Trust,
    plugins: &crate::plugins::Loaded,
    frontend: &dyn Frontend,
) -> crate::Result<Extras> {
    let home = dirs::home_dir();
    // An enabled plugin's skills come after every folder of the user's and the project's, so
    // a plugin never replaces a skill the user wrote.
    let mut skill_roots = roots(workspace, config_dir, home.as_deref());
    skill_roots.extend(plugins.skill_roots());
    let mut extras = Extras {
        catalog: Catalog::discover(&skill_roots),
        commands: Commands::discover(&command_roots(workspace, config_dir, home.as_deref())),
    };
    if trust == Trust::Ask && !trusted(workspace, &extras, frontend)? {
        extras.catalog.retain(|skill| !skill.source.is_project());
        extras.commands.list.retain(|command| !command.project);
    }
    let plugin_commands = plugins.commands();
    for command in plugin_commands.list {
        if extras.commands.get(&command.name).is_none() {
            extras.commands.list.push(command);
        }
    }
    extras.commands.refused.extend(plugin_commands.refused);
    extras.commands.list.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(extras)
}

/// [`discover`] for a session's settings: the config file's directory is the user's, and
/// `[skills] enabled = false` reads nothing.
pub fn for_settings(
    settings: &crate::settings::Settings,
    trust: Trust,
    frontend: &dyn Frontend,
) -> crate::Result<Extras> {
    if settings.file.skills.enabled == Some(false) {
        return Ok(Extras::default());
    }
    let config = settings.options.config.clone().or_else(crate::config::ConfigFile::default_path);
    let config_dir = config.as_deref().and_then(Path::parent);
    discover(&settings.workspace()?, config_dir, trust, &settings.plugins, frontend)
}

/// Adds the skills list to the instructions (descriptions inside `budget` tokens, the rest named
/// or behind the `skills` call, which is offered only then) and lets the model read the folders
/// of the user's own skills, which lie outside the workspace.
pub fn attach(
    mut builder: AgentBuilder,
    catalog: &Catalog,
    budget: usize,
    counter: &dyn TokenCounter,
    frontend: &dyn Frontend,
) -> crate::Result<AgentBuilder> {
    let list = catalog.listing(budget, counter);
    if list.needs_call() {
        frontend.say(&format!(
            "note: the skills list is over its budget of {budget} tokens: {} described, {} by \
             name only, {} listed only by the `{}` call ([skills] budget_percent)",
            list.described,
            list.named,
            list.unnamed,
            agent_skills::SKILLS_TOOL
        ));
        let tool = agent_skills::skills_tool(Arc::new(catalog.clone()), list.described)?;
        builder = builder.tool(tool);
    }
    builder = builder.project_instructions(&list.text);
    for skill in catalog.skills.iter().filter(|skill| !skill.source.is_project()) {
        let dir = skill.dir().to_string_lossy();
        // A folder whose name a glob would read differently is left closed, not half-opened.
        if !dir.contains(['*', '?', '[', ']', '{', '}', '(', ')']) {
            builder =
                builder.rule(RuleAction::Allow, &format!("Read(/{dir})"), "a user skill's folder");
        }
    }
    Ok(builder)
}

/// `prompt` with the body of every skill it names as `$name` after it, and the limit their
/// `allowed-tools` set on the turn (none when a named skill sets none).
pub fn with_mentions(catalog: &Catalog, prompt: String) -> (String, Option<ToolLimit>) {
    let mentioned = agent_skills::mentioned(catalog, &prompt);
    if mentioned.is_empty() {
        return (prompt, None);
    }
    let limit = agent_skills::tool_limit(mentioned.iter().copied());
    let mut text = prompt;
    for skill in mentioned {
        let mut body = skill.body.as_str();
        let mut note = String::new();
        if body.len() > MENTION_CAP {
            let mut end = MENTION_CAP;
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            body = &body[..end];
            note = format!("\n[harness] The rest of this skill is in {}.", skill.path.display());
        }
        text.push_str(&format!(
            "\n\n<skill name=\"{}\" path=\"{}\">\n{body}{note}\n</skill>",
            skill.name,
            skill.path.display()
        ));
    }
    if limit.is_some() {
        text.push_str(
            "\n\n[harness] In this turn you may use only the tools the skill's allowed-tools \
             names; other calls are refused.",
        );
    }
    (text, limit)
}

/// FNV-1a: a fingerprint that stays the same across builds (std's hasher does not promise to).
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// Whether the project's skills and commands may be used: trusted before with this exact text,
/// or trusted now by the user at the terminal.
fn trusted(workspace: &Path, extras: &Extras, frontend: &dyn Frontend) -> crate::Result<bool> {
    let skills: Vec<_> = extras.catalog.skills.iter().filter(|s| s.source.is_project()).collect();
    let commands: Vec<_> = extras.commands.list.iter().filter(|c| c.project).collect();
    if skills.is_empty() && commands.is_empty() {
        return Ok(true);
    }
    let mut parts: Vec<&str> = skills.iter().map(|s| s.text.as_str()).collect();
    parts.extend(commands.iter().map(|c| c.text.as_str()));
    let print = fingerprint(&parts);
    let root = SessionLog::root()?;
    let file = root.parent().unwrap_or(&root).join("trusted-skills.json");
    let mut known: BTreeMap<String, String> = std::fs::read_to_string(&file)
        .ok()
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default();
    let key = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let key = key.display().to_string();
    if known.get(&key) == Some(&print) {
        return Ok(true);
    }
    if !frontend.can_ask() {
        frontend.say(&format!(
            "this project's {} skill(s) and {} command(s) are not trusted yet, so they are not \
             used; run `agent` at a terminal here to review them",
            skills.len(),
            commands.len()
        ));
        return Ok(false);
    }
    let mut lines =
        vec!["this project brings skills and commands (text the model will read):".to_owned()];
    for skill in &skills {
        lines.push(format!(
            "  skill ${}: {}",
            visible_line(&skill.name),
            visible_line(&skill.description)
        ));
    }
    for command in &commands {
        lines.push(format!(
            "  command /{}: {}",
            visible_line(&command.name),
            command.path.display()
        ));
    }
    if !frontend.confirm(&lines, "use them in this workspace?") {
        frontend.say("the project's skills and commands will not be used");
        return Ok(false);
    }
    known.insert(key, print);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&file, serde_json::to_string_pretty(&known)?)
        .with_context(|| format!("writing {}", file.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_changes_with_any_byte_and_any_split() {
        let base = fingerprint(&["ab", "c"]);
        assert_eq!(base, fingerprint(&["ab", "c"]));
        assert_ne!(base, fingerprint(&["a", "bc"]));
        assert_ne!(base, fingerprint(&["ab", "d"]));
    }
}
