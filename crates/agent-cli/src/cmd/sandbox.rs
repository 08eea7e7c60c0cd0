//! `agent sandbox …`: inspect the OS sandbox on this machine.

use std::process::ExitCode;

use clap::Subcommand;

/// Subcommands of `agent sandbox`.
#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Print what this kernel supports (Landlock, seccomp, user namespaces, process limit), which
    /// sandbox policies can be enforced here, and which secret files commands cannot see.
    Check,
    /// Print a session's network decisions (allow-list mode): every connection its proxy
    /// allowed or refused, and why.
    NetLog {
        /// The session id (default: the newest session with a log).
        session: Option<String>,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `sandbox` subcommand.
pub(crate) fn run(command: SandboxCommand, options: &crate::options::Options) -> ExitCode {
    match command {
        SandboxCommand::NetLog { session, json } => net_log(session.as_deref(), json),
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
            network_state(options);
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

/// The network mode the settings give, and whether its proxy can run here.
fn network_state(options: &crate::options::Options) {
    use agent_exec::network::NetworkMode;
    let settings = match crate::settings::Settings::load(&options.overrides()) {
        Ok(settings) => settings,
        Err(err) => {
            println!("network mode: unknown ({err:#})");
            return;
        }
    };
    let mode = settings.network_mode();
    let table = settings.network();
    println!("network mode: {mode}");
    if mode != NetworkMode::AllowList {
        return;
    }
    println!(
        "  allow: {}\n  deny: {}\n  pinned: {}",
        list(&table.allow),
        list(&table.deny),
        list(&table.resolve.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>())
    );
    let proxy = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            let _entered = rt.enter();
            let namespace =
                agent_exec::sandbox::NetNamespace::create().map_err(|e| e.to_string())?;
            let resolver = table.resolver().map_err(|e| e.to_string())?;
            let config = agent_exec::network::ProxyConfig {
                rules: table.rules(),
                resolver,
                ..Default::default()
            };
            agent_exec::network::SessionProxy::start_in(&namespace, config)
                .map(|p| p.port())
                .map_err(|e| e.to_string())
        });
    match proxy {
        Ok(port) => println!(
            "  session proxy: ready (it listens on 127.0.0.1:{port} inside each session's namespace; the port differs per session)"
        ),
        Err(err) => println!(
            "  session proxy: cannot start here ({err}); allow-list sessions will refuse to start"
        ),
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() { "(none)".to_owned() } else { items.join(", ") }
}

fn net_log(session: Option<&str>, json: bool) -> ExitCode {
    let entries = crate::network::log_path(session).map_err(anyhow::Error::from).and_then(|path| {
        agent_exec::network::NetLog::read_file(&path)
            .map_err(|err| anyhow::anyhow!("cannot read {}: {err}", path.display()))
    });
    let entries = match entries {
        Ok(entries) => entries,
        Err(err) => {
            eprintln!("agent: {err:#}");
            return ExitCode::FAILURE;
        }
    };
    for entry in entries {
        if json {
            println!("{}", serde_json::to_string(&entry).unwrap_or_default());
        } else {
            let verdict = if entry.allowed { "allowed" } else { "refused" };
            println!(
                "{:<8} {:<8?} {}:{}  {}",
                verdict, entry.via, entry.host, entry.port, entry.reason
            );
        }
    }
    ExitCode::SUCCESS
}
