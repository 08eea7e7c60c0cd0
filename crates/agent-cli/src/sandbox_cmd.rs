//! `agent sandbox …`: inspect the OS sandbox on this machine.

use std::process::ExitCode;

use clap::Subcommand;

/// Subcommands of `agent sandbox`.
#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Print what this kernel supports (Landlock, seccomp, user namespaces, process limit) and
    /// which sandbox policies can be enforced here.
    Check,
}

/// Runs a `sandbox` subcommand.
pub(crate) fn run(command: SandboxCommand) -> ExitCode {
    match command {
        SandboxCommand::Check => {
            print!("{}", agent_exec::sandbox::probe());
            ExitCode::SUCCESS
        }
    }
}
