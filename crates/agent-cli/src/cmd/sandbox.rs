//! `agent sandbox …`: inspect the OS sandbox on this machine.

use std::process::ExitCode;

use clap::Subcommand;

/// Subcommands of `agent sandbox`.
#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Print what this kernel supports (Landlock, seccomp, user namespaces, process limit), which
    /// sandbox policies can be enforced here, and which secret files commands cannot see.
    Check,
}

/// Runs a `sandbox` subcommand.
pub(crate) fn run(command: SandboxCommand) -> ExitCode {
    match command {
        SandboxCommand::Check => {
            let caps = agent_exec::sandbox::probe();
            print!("{caps}");
            if caps.policies().iter().any(|support| support.missing.is_some()) {
                println!("`--sandbox danger-full-access` turns sandboxing off entirely");
            }
            // Made for real, as a session would: the probe is the namespace itself.
            match agent_exec::sandbox::NetNamespace::create() {
                Ok(_) => println!(
                    "loopback with the network off: yes (a private network namespace per session \
                     holding only `lo`: commands reach their own 127.0.0.1 and ::1, nothing else)"
                ),
                Err(err) => println!(
                    "loopback with the network off: no ({err}); commands get no IP socket at all \
                     unless --network is given"
                ),
            }
            if let Ok(dir) = std::env::current_dir() {
                let secrets = agent_exec::secret::Secrets::default();
                let hidden = secrets.to_hide(Some(&dir), None);
                println!("\nhidden from commands in {} (built-in list):", dir.display());
                if hidden.is_empty() {
                    println!("  nothing");
                }
                for entry in hidden {
                    println!("  {:<32} exposed by --allow '{}'", entry.shown, entry.rule);
                }
            }
            ExitCode::SUCCESS
        }
    }
}
