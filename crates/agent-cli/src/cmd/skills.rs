//! `agent skills list`: the skills found for this workspace, in precedence order, with what each
//! costs the instructions, and every skill folder that was refused or shadowed, with why.

use std::process::ExitCode;

use agent_skills::Skill;
use clap::Subcommand;
use serde_json::json;

use crate::{Options, hooks::Trust, settings::Settings, terminal::visible_line};

#[derive(Debug, Subcommand)]
pub(crate) enum SkillsCommand {
    /// Name, source, tokens and description of each skill; refused and shadowed folders after.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(options: &Options, command: SkillsCommand) -> anyhow::Result<ExitCode> {
    let SkillsCommand::List { json } = command;
    let settings = Settings::load(&options.overrides())?;
    // Listing asks nothing and shows the project's skills whether trusted or not: it is how a
    // user reviews them.
    let extras =
        crate::skills::for_settings(&settings, Trust::OnlyTrusted, &crate::setup::Terminal)?;
    let counter = agent_model::counter_for(&settings.model.model);
    let tokens = |skill: &Skill| skill.listed_tokens(counter.as_ref());
    // A plugin's skill names its plugin as the source.
    let source = |skill: &Skill| match settings.plugins.owner(&skill.path) {
        Some(name) => format!("plugin:{name}"),
        None => skill.source.as_str().to_owned(),
    };
    let catalog = &extras.catalog;
    if json {
        let skills: Vec<_> = catalog
            .skills
            .iter()
            .map(|skill| {
                json!({
                    "name": skill.name, "source": source(skill),
                    "description": skill.description, "path": skill.path,
                    "tokens": tokens(skill), "allowed_tools": skill.allowed_tools,
                    "warnings": skill.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
                })
            })
            .collect();
        let refused: Vec<_> = catalog
            .refused
            .iter()
            .map(|refused| {
                json!({
                    "path": refused.dir, "source": refused.source.as_str(),
                    "problems": refused.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
                })
            })
            .collect();
        let shadowed: Vec<_> = catalog
            .shadowed
            .iter()
            .map(|(skill, by)| json!({"name": skill.name, "path": skill.path, "shadowed_by": by}))
            .collect();
        let commands: Vec<_> = extras
            .commands
            .list
            .iter()
            .map(|c| json!({"name": c.name, "description": c.description, "path": c.path}))
            .collect();
        let all = json!({"skills": skills, "refused": refused, "shadowed": shadowed, "commands": commands});
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    if catalog.skills.is_empty() {
        println!("no skills found (docs/skills.md says where they are looked for)");
    }
    let width = catalog.skills.iter().map(|skill| skill.name.len()).max().unwrap_or(0);
    for skill in &catalog.skills {
        let line = format!(
            "{:width$}  {:14}  {:>4} tokens  {}",
            skill.name,
            source(skill),
            tokens(skill),
            skill.description
        );
        println!("{}", visible_line(&line));
        for warning in &skill.warnings {
            println!("{:width$}  warning: {}", "", visible_line(&warning.to_string()));
        }
    }
    for refused in &catalog.refused {
        let problems: Vec<_> = refused.problems.iter().map(ToString::to_string).collect();
        let line = format!(
            "refused {} ({}): {}",
            refused.dir.display(),
            refused.source,
            problems.join("; ")
        );
        println!("{}", visible_line(&line));
    }
    for (skill, by) in &catalog.shadowed {
        let line = format!("shadowed {} by {}", skill.path.display(), by.display());
        println!("{}", visible_line(&line));
    }
    if !extras.commands.list.is_empty() {
        println!("\ncommands:\n{}", extras.commands.help().trim_end());
    }
    for (path, why) in &extras.commands.refused {
        println!("{}", visible_line(&format!("refused command {}: {why}", path.display())));
    }
    Ok(ExitCode::SUCCESS)
}
