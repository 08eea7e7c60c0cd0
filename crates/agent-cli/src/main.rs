//! The `agent` binary: the composition root that picks concrete models, tools and front ends.
//!
//! It owns argument parsing, configuration, terminal rendering, approvals and transcripts, and holds
//! no logic a library user would need.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod approval;
mod batch;
mod broken_pipe;
mod checkpoints;
mod cmd;
mod completer;
mod events;
mod markdown;
mod mcp;
mod notices;
mod notify;
mod options;
mod organizer;
mod preview;
mod question;
mod render;
mod repl;
mod serve;
mod setup;
mod spinner;
mod status;
mod status_line;
mod terminal;
mod work;

// The session's parts live in agent-session; these names keep the front ends' paths short.
use agent_session::{
    agents, commands, config, hooks, log as session, network, settings, shapes, skills, telemetry,
    waiting,
};

pub(crate) use crate::options::Options;

/// An agent that reads, searches, edits and runs code through sandboxed tools, on any
/// OpenAI-compatible model server.
///
/// With no command, starts the interactive REPL (`agent chat`).
#[derive(Debug, Parser)]
#[command(name = "agent", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    options: Options,
    #[command(subcommand)]
    command: Option<Command>,
}

const AFTER_HELP: &str = "\
Environment: OPENAI_API_KEY, OPENAI_BASE_URL, AGENT_MODEL, AGENT_DATA_DIR (sessions and history), \
AGENT_LOG or RUST_LOG (log filter).
Exit codes: 0 answered, 1 agent failure (turn limit, model error), 2 usage or configuration error, \
130 interrupted.
Try it offline: cargo xtask demo. Docs: docs/cli.md.";

#[derive(Debug, Subcommand)]
enum Command {
    /// The interactive REPL (the default): streaming answers, approval prompts, slash commands.
    Chat(repl::ChatArgs),
    /// Run one prompt non-interactively: text to stdout, tool activity to stderr.
    Exec(cmd::exec::ExecArgs),
    /// Run the tasks of a JSONL file, each in its own copy of its workspace (docs/batch.md).
    Batch(batch::BatchArgs),
    /// List, show or call the built-in tools without a model.
    #[command(subcommand)]
    Tools(cmd::tools::ToolsCommand),
    /// MCP servers (`add`, `remove`, `list`, `get`, `approve`) and serving ours (`serve`).
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Inspect the OS sandbox that confines every command the agent runs.
    #[command(subcommand)]
    Sandbox(cmd::sandbox::SandboxCommand),
    /// Serve the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim); docs/acp.md.
    Acp,
    /// Serve sessions over HTTP (SSE events, approvals, checkpoints) and a web page; docs/serve.md.
    Serve(serve::ServeArgs),
    /// The skills found for this workspace (docs/skills.md).
    #[command(subcommand)]
    Skills(cmd::skills::SkillsCommand),
    /// The agent definitions a `task` call may name (`list`).
    #[command(subcommand)]
    Agents(cmd::agents::AgentsCommand),
    /// Plugins from Claude Code, Codex or Agent Plugins (`install`, `list`, `enable`, `disable`,
    /// `remove`, `update`); docs/plugins.md.
    #[command(subcommand)]
    Plugin(cmd::plugin::PluginCommand),
    /// Check the config, model server, sandbox, MCP servers, skills and session store, each with a
    /// one-line fix (docs/doctor.md).
    Doctor(cmd::doctor::DoctorArgs),
    /// Undo a turn's file changes (or list a session's checkpoints); see docs/checkpoints.md.
    Undo(cmd::undo::UndoArgs),
    /// Git worktrees for sessions (`new`, `list`, `remove`); `agent --worktree` runs one in a new one.
    #[command(subcommand)]
    Worktree(cmd::worktree::WorktreeCommand),
    /// Print a shell completion script, e.g. `agent completions bash > ~/.local/share/bash-completion/completions/agent`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    init_logging();
    let worktree = match cli.options.worktree.take() {
        None => None,
        Some(_) if !matches!(cli.command, None | Some(Command::Chat(_) | Command::Exec(_))) => {
            eprintln!("agent: --worktree starts a session: use it with chat or exec");
            return ExitCode::from(2);
        }
        Some(name) => match cmd::worktree::enter(&mut cli.options, &name) {
            Ok(worktree) => Some(worktree),
            Err(err) => {
                eprintln!("agent: {}", terminal::error_text(&err));
                return ExitCode::from(2);
            }
        },
    };
    // The protocol servers keep a closed stdout an error they report (see broken_pipe.rs).
    let protocol =
        matches!(cli.command, Some(Command::Acp | Command::Mcp(mcp::McpCommand::Serve(_))));
    if !protocol {
        broken_pipe::install();
    }
    let result = match cli.command {
        Some(Command::Exec(args)) => cmd::exec::run(&cli.options, args),
        Some(Command::Batch(args)) => batch::run(&cli.options, args),
        Some(Command::Tools(command)) => cmd::tools::run(&cli.options, command),
        Some(Command::Sandbox(command)) => Ok(cmd::sandbox::run(command, &cli.options)),
        Some(Command::Skills(command)) => cmd::skills::run(&cli.options, command),
        Some(Command::Agents(command)) => cmd::agents::run(&cli.options, command),
        Some(Command::Plugin(command)) => cmd::plugin::run(&cli.options, command),
        Some(Command::Mcp(command)) => mcp::run(&cli.options, command),
        Some(Command::Acp) => cmd::acp::run(&cli.options),
        Some(Command::Serve(args)) => serve::run(&cli.options, args),
        Some(Command::Chat(args)) => repl::run(&cli.options, args),
        Some(Command::Doctor(args)) => cmd::doctor::run(&cli.options, &args),
        Some(Command::Undo(args)) => cmd::undo::run(&cli.options, &args),
        Some(Command::Worktree(command)) => cmd::worktree::run(command),
        Some(Command::Completions { shell }) => {
            // Written whole from a buffer: clap_complete panics on a failed write (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "agent", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)
                .map(|()| ExitCode::SUCCESS)
                .map_err(anyhow::Error::from)
        }
        None => repl::run(&cli.options, repl::ChatArgs::default()),
    };
    // Spans and metrics still queued are sent before exit, within the export timeout.
    telemetry::shutdown();
    if let Some(worktree) = worktree {
        eprintln!("{}", worktree.farewell());
    }
    result.unwrap_or_else(|err| {
        if !protocol && broken_pipe::is_broken_pipe(&err) {
            return ExitCode::from(broken_pipe::STATUS);
        }
        eprintln!("agent: {}", terminal::error_text(&err));
        ExitCode::from(2)
    })
}

/// Logs go to stderr, filtered by `AGENT_LOG` (falling back to `RUST_LOG`), warnings by default.
/// A closing line is logged for every span (turn, model request, tool call) that the filter
/// lets through, with its duration. Colour only when stderr is a terminal and `NO_COLOR` is unset,
/// so logs piped to a file or another program hold no escape codes.
fn init_logging() {
    use std::io::IsTerminal;
    let filter = std::env::var("AGENT_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "warn".to_owned());
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
}
