//! `agent agents list`: the agent definitions a `task` call may name, where each came from, and
//! why a file was refused.

use std::process::ExitCode;

use clap::Subcommand;

use crate::{Options, settings::Settings, terminal::visible_line};

/// Subcommands of `agent agents`.
#[derive(Debug, Subcommand)]
pub(crate) enum AgentsCommand {
    /// List the agents found (built-in, the user's `agents/`, the project's `.claude/agents/`
    /// and `.agent/agents/`), and the files that were refused with why.
    List,
}

/// Runs an `agents` subcommand: 0, or 1 when a definition file was refused.
pub(crate) fn run(options: &Options, command: AgentsCommand) -> anyhow::Result<ExitCode> {
    let AgentsCommand::List = command;
    let settings = Settings::load(&options.overrides())?;
    let found = crate::agents::definitions(&settings)?;
    for agent in &found.found {
        let tools = match (&agent.tools, agent.read_only) {
            (_, true) => "read-only tools".to_owned(),
            (Some(tools), false) => tools.join(", "),
            (None, false) => "the parent's tools".to_owned(),
        };
        let mode = agent.permission_mode.map_or("the parent's mode".to_owned(), |m| m.to_string());
        let from = agent.path.as_ref().map_or(String::new(), |p| format!(" {}", p.display()));
        let model = agent.model.as_deref().map_or(String::new(), |m| format!(" · model: {m}"));
        let turns = agent.max_turns.map_or(String::new(), |n| format!(" · max_turns: {n}"));
        println!("{:<12} {}", agent.name, visible_line(&agent.description));
        let source = agent.path.as_deref().and_then(|p| settings.plugins.owner(p));
        let source =
            source.map_or(agent.source.as_str().to_owned(), |name| format!("plugin:{name}"));
        println!(
            "             {source}{from} · tools: {tools} · mode: {mode}{}{}",
            visible_line(&model),
            turns
        );
        if !agent.ignored.is_empty() {
            let keys = agent.ignored.join(", ");
            println!("             ignored (not honoured here): {}", visible_line(&keys));
        }
    }
    for shadowed in &found.shadowed {
        let from = shadowed.path.as_ref().map_or(String::new(), |p| format!(" {}", p.display()));
        println!("(replaced)   {} from {}{from}", shadowed.name, shadowed.source.as_str());
    }
    for (path, why) in &found.refused {
        println!("refused      {}: {}", path.display(), visible_line(&why.to_string()));
    }
    Ok(if found.refused.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
