//! The `agent` binary: the composition root that picks concrete models, tools and front ends.
//!
//! It owns argument parsing, configuration, terminal rendering, approvals and transcripts, and holds
//! no logic a library user would need.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::{path::PathBuf, process::ExitCode};

use clap::{Args, CommandFactory, Parser, Subcommand};

mod approval;
mod config;
mod events;
mod exec_cmd;
mod hooks;
mod markdown;
mod mcp_cmd;
mod mcp_edit;
mod mcp_list;
mod mcp_project;
mod mcp_serve;
mod preview;
mod render;
mod repl;
mod sandbox_cmd;
mod session;
mod settings;
mod setup;
mod spinner;
mod status;
mod tools_cmd;
mod work;

use crate::config::Api;

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

/// Options shared by every command. Precedence: flag > environment > config profile > default.
#[derive(Debug, Clone, Args)]
pub(crate) struct Options {
    /// Named profile from the config file (for example `ollama`, `vllm`, `deepseek`).
    #[arg(long, global = true)]
    pub(crate) profile: Option<String>,
    /// Model name [env: AGENT_MODEL].
    #[arg(long, global = true)]
    pub(crate) model: Option<String>,
    /// Base URL of an OpenAI-compatible server [env: OPENAI_BASE_URL].
    #[arg(long, global = true)]
    pub(crate) base_url: Option<String>,
    /// Which API to speak (default: responses for api.openai.com, chat for any other server).
    #[arg(long, global = true, value_enum)]
    pub(crate) api: Option<Api>,
    /// The workspace the tools may read and edit (default: the current directory).
    #[arg(long, global = true)]
    pub(crate) workspace: Option<PathBuf>,
    /// OS sandbox for commands: read-only, workspace-write (default) or danger-full-access.
    #[arg(long, global = true)]
    pub(crate) sandbox: Option<String>,
    /// Let sandboxed commands use the network.
    #[arg(long, global = true)]
    pub(crate) network: bool,
    /// default (the REPL's default: asks), accept-edits, plan, dont-ask (`exec`'s default) or bypass.
    #[arg(long, global = true)]
    pub(crate) permission_mode: Option<String>,
    /// Allow calls matching a rule without asking, e.g. 'Bash(cargo test *)' (repeatable).
    #[arg(long = "allow", global = true, value_name = "RULE")]
    pub(crate) allow: Vec<String>,
    /// Always ask before calls matching a rule (repeatable).
    #[arg(long = "ask", global = true, value_name = "RULE")]
    pub(crate) ask: Vec<String>,
    /// Deny calls matching a rule, e.g. 'Bash(git push *)' (repeatable).
    #[arg(long = "deny", global = true, value_name = "RULE")]
    pub(crate) deny: Vec<String>,
    /// Offer the model only these tools, comma-separated (e.g. `read_file,grep,glob`); the
    /// permission policy is unchanged.
    #[arg(long, global = true, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) tools: Option<Vec<String>>,
    /// The most model turns one prompt may take.
    #[arg(long, global = true)]
    pub(crate) max_turns: Option<usize>,
    /// Ask the model for whole responses instead of streams.
    #[arg(long, global = true)]
    pub(crate) no_stream: bool,
    /// The tool choice of each prompt's first turn only: a tool name, `required`, `none` or `auto`
    /// (later turns are `auto`, so the model can answer once it has the result).
    #[arg(long, global = true, value_name = "CHOICE")]
    pub(crate) tool_choice: Option<String>,
    /// The model's context window in tokens, overriding the profile's `context_window`, the
    /// built-in table and the server's word.
    #[arg(long, global = true, value_name = "TOKENS")]
    pub(crate) context_window: Option<u64>,
    /// Read no AGENTS.md project instructions.
    #[arg(long, global = true)]
    pub(crate) no_project_doc: bool,
    /// Config file (default: the platform config directory's agent/config.toml).
    #[arg(long, global = true)]
    pub(crate) config: Option<PathBuf>,
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
    Exec(exec_cmd::ExecArgs),
    /// List, show or call the built-in tools without a model.
    #[command(subcommand)]
    Tools(tools_cmd::ToolsCommand),
    /// MCP servers (`add`, `remove`, `list`, `get`, `approve`) and serving ours (`serve`).
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCommand),
    /// Inspect the OS sandbox that confines every command the agent runs.
    #[command(subcommand)]
    Sandbox(sandbox_cmd::SandboxCommand),
    /// Print a shell completion script, e.g. `agent completions bash > ~/.local/share/bash-completion/completions/agent`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let result = match cli.command {
        Some(Command::Exec(args)) => exec_cmd::run(&cli.options, args),
        Some(Command::Tools(command)) => tools_cmd::run(&cli.options, command),
        Some(Command::Sandbox(command)) => Ok(sandbox_cmd::run(command)),
        Some(Command::Mcp(command)) => mcp_cmd::run(&cli.options, command),
        Some(Command::Chat(args)) => repl::run(&cli.options, args),
        Some(Command::Completions { shell }) => {
            clap_complete::generate(shell, &mut Cli::command(), "agent", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        None => repl::run(&cli.options, repl::ChatArgs::default()),
    };
    result.unwrap_or_else(|err| {
        eprintln!("agent: {err:#}");
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
