//! `agent mcp`: serve the built-in tools to MCP clients.

use std::process::ExitCode;

use clap::Subcommand;

use crate::{Options, mcp_serve::ServeArgs};

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Serve the built-in tools over MCP, on stdin and stdout or (with --http) over streamable
    /// HTTP, in the workspace, with the same sandbox, permission rules and output cap as `exec`.
    ///
    /// The permission mode defaults to dont-ask: a call that would ask is refused, naming the rule
    /// that would allow it. With `--permission-mode default` (or accept-edits) such a call is put
    /// to the client as an elicitation when the client supports it; accepting runs it, declining
    /// refuses it. See docs/mcp.md.
    Serve(ServeArgs),
}

pub(crate) fn run(options: &Options, command: McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Serve(args) => crate::mcp_serve::run(options, &args),
    }
}
