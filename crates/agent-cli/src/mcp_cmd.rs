//! `agent mcp`: serve the built-in tools to MCP clients.

use std::process::ExitCode;

use agent_exec::{ExecutorConfig, PermissionMode};
use agent_mcp::ToolServer;
use agent_tools::FileTracker;
use anyhow::Context;
use clap::Subcommand;

use crate::{Options, settings::Settings};

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Serve the built-in tools over MCP on stdin and stdout, in the workspace, with the same
    /// sandbox, permission rules and output cap as `exec`. The permission mode defaults to
    /// dont-ask: a call that would ask is refused, naming the rule that would allow it.
    Serve,
}

pub(crate) fn run(options: &Options, command: McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Serve => serve(options),
    }
}

fn serve(options: &Options) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(options)?;
    // Full outputs of capped calls are kept for the life of the server.
    let scratch = tempfile::tempdir().context("creating a session directory")?;
    let mut config = ExecutorConfig::new("mcp-serve");
    config.session_dir = Some(scratch.path().to_path_buf());
    // The configured MCP servers are not served on: a client that wants them connects to them.
    let executor =
        settings.builder(PermissionMode::DontAsk, FileTracker::new(), config)?.build_executor()?;
    for warning in executor.policy().warnings() {
        eprintln!("agent: warning: {warning}");
    }
    let runtime = crate::setup::tokio_runtime()?;
    runtime.block_on(ToolServer::new(executor).serve_stdio())?;
    Ok(ExitCode::SUCCESS)
}
