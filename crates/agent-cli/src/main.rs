//! The `agent` binary: the composition root that picks concrete models, tools and front ends.
//!
//! It owns argument parsing, configuration, terminal rendering, approvals and transcripts, and holds
//! no logic a library user would need.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod sandbox_cmd;

/// An agent that reads, searches, edits and runs code through sandboxed tools, on any
/// OpenAI-compatible model server.
#[derive(Debug, Parser)]
#[command(name = "agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the OS sandbox that confines every command the agent runs.
    #[command(subcommand)]
    Sandbox(sandbox_cmd::SandboxCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Sandbox(command)) => sandbox_cmd::run(command),
        None => {
            eprintln!(
                "agent: the interactive agent is not built yet; see README.md for what works today"
            );
            ExitCode::from(2)
        }
    }
}
