//! `agent tools`: list the built-in tools, print the exact schemas a model receives, or run one
//! call through the full executor without a model.

use std::{process::ExitCode, sync::Arc};

use agent_core::{CancellationToken, ToolCall, ToolSpec};
use agent_exec::Executor;
use agent_session::{Frontend, Toolbox, ToolboxUse};
use agent_tools::FileTracker;
use clap::Subcommand;
use serde_json::json;

use crate::{Options, config::Api, options::ApiArg, shapes, terminal::visible_line};

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// Names, effects and one-line descriptions.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Show what each tool's schema costs in every request, in tokens (an estimate: see
        /// docs/models.md), and the total with the instructions.
        #[arg(long)]
        tokens: bool,
    },
    /// The exact `tools` array the model receives.
    Schema {
        /// Which API's format.
        #[arg(long, value_enum)]
        api: ApiArg,
    },
    /// Run one call through the full executor and print the observation (exit 1 for an error).
    Call {
        /// The tool name (or alias).
        name: String,
        /// The arguments as JSON.
        arguments: String,
    },
}

pub(crate) fn run(options: &Options, command: ToolsCommand) -> anyhow::Result<ExitCode> {
    let tokio = crate::setup::tokio_runtime()?;
    let purpose = match command {
        ToolsCommand::List { tokens, .. } => ToolboxUse::List { tokens },
        ToolsCommand::Schema { .. } => ToolboxUse::List { tokens: false },
        ToolsCommand::Call { .. } => ToolboxUse::Call,
    };
    let frontend: Arc<dyn Frontend> = Arc::new(crate::setup::Terminal);
    let toolbox = Toolbox::open(&options.overrides(), purpose, &frontend, &tokio)?;
    let (executor, instructions) = (&toolbox.executor, &toolbox.instructions);
    let api = toolbox.settings.model.api;
    let specs = executor.specs();
    match command {
        ToolsCommand::List { json, tokens } => {
            if tokens {
                print_tokens(&specs, instructions, json)?;
            } else if json {
                let list: Vec<_> = specs
                    .iter()
                    .map(|spec| {
                        json!({
                            "name": spec.name,
                            "shape": shapes::shown(spec.shape, api),
                            "effects": effects(spec),
                            "strict": spec.strict,
                            "description": first_line(&spec.description),
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                for spec in &specs {
                    // Names and descriptions of MCP tools come from the server.
                    println!(
                        "{:<14} {:<20} {:<28} {}",
                        visible_line(&spec.name),
                        shapes::shown(spec.shape, api),
                        effects(spec).join(","),
                        visible_line(first_line(&spec.description))
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Schema { api } => {
            let tools = match Api::from(api) {
                Api::Chat => agent_model::chat_tools_json(&specs),
                Api::Responses => agent_model::responses_tools_json(&specs),
            };
            println!("{}", serde_json::to_string_pretty(&tools)?);
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Call { name, arguments } => {
            mark_target_read(executor, &toolbox.tracker, &name, &arguments);
            let call = ToolCall::function("cli", name, arguments);
            let outcome = tokio.block_on(executor.execute(&call, &CancellationToken::new()));
            println!("{}", outcome.text);
            // Every file the text names must outlive this command: a saved full output, an
            // image or other content an MCP server sent (`[image saved: …]`). The scratch
            // directory is kept (in the system temp dir, which the OS clears), and only when the
            // text names something in it.
            let names_scratch = outcome.text.contains(&*toolbox.scratch().to_string_lossy());
            if outcome.output_path.is_some() || names_scratch {
                let kept = toolbox.keep_scratch();
                eprintln!("agent: the files the output names are kept in {}", kept.display());
            }
            if let Some(remedy) = &outcome.remedy {
                let advice = crate::render::remedy_advice(remedy);
                eprintln!("agent: {}", crate::terminal::visible(&advice));
            }
            Ok(if outcome.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

/// A direct call to a tool that changes files counts as a fresh read of its target: the model's
/// read-before-edit rule protects against edits made blind, but here a person typed the edit and
/// has the file in front of them. Arguments that do not parse are left for the executor to report.
fn mark_target_read(executor: &Executor, tracker: &FileTracker, name: &str, arguments: &str) {
    let Some(tool) = executor.registry().get(name) else { return };
    if !tool.spec().effects.writes_files {
        return;
    }
    let Ok(args) = serde_json::from_str::<serde_json::Value>(arguments) else { return };
    let Some(path) = args.get("path").and_then(serde_json::Value::as_str) else { return };
    if let Ok(resolved) = executor.policy().workspace().resolve_for_write(path) {
        // A file that does not exist yet has nothing to have read.
        let _ = tracker.mark_read(&resolved);
    }
}

fn effects(spec: &ToolSpec) -> Vec<&'static str> {
    let effects = spec.effects;
    let mut names = Vec::new();
    if effects.read_only {
        names.push("read-only");
    }
    if effects.writes_files {
        names.push("writes-files");
    }
    if effects.runs_processes {
        names.push("runs-processes");
    }
    if effects.network {
        names.push("network");
    }
    names
}

/// Each tool's estimated schema cost, then the instructions (as the agent sends them: with the
/// offered tools' guidance and the project instructions) and the total every request carries.
fn print_tokens(specs: &[ToolSpec], instructions: &str, json: bool) -> anyhow::Result<()> {
    let costs: Vec<(&str, usize)> =
        specs.iter().map(|spec| (spec.name.as_str(), agent_model::tool_tokens(spec))).collect();
    let instructions = agent_model::estimate_tokens(instructions);
    // The total counts the `tools` array as the request sends it (one JSON array, compact), so it
    // is exactly what the budget test counts in a real request body; the rows, each a one-tool
    // array, add up to a few tokens more.
    let tools = agent_model::estimate_tokens(&agent_model::chat_tools_json(specs).to_string());
    let total = instructions + tools;
    if json {
        let tools: Vec<_> =
            costs.iter().map(|(name, cost)| json!({"name": name, "tokens": cost})).collect();
        let all = json!({"tools": tools, "instructions": instructions, "total": total});
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(());
    }
    for (name, cost) in &costs {
        println!("{:<14} {cost:>6}", visible_line(name));
    }
    println!("{:<14} {instructions:>6}", "(instructions)");
    println!("{:<14} {total:>6}  tokens in every request (estimated; see docs/models.md)", "total");
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
