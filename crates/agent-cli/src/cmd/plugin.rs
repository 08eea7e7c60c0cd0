//! `agent plugin`: install, list, enable, disable, remove and update plugins (docs/plugins.md).
//! The work is agent-session's (`plugins`); this is the command line and what it prints.

use std::process::ExitCode;

use agent_session::plugins::{Installed, Scope, scope_dirs, store};
use clap::{Subcommand, ValueEnum};

use crate::{Options, settings::Settings, terminal::visible_line};

/// Which store a command works on.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ScopeArg {
    /// The user's, beside the config file: every workspace.
    User,
    /// This project's `.agent/`.
    Project,
}

/// Subcommands of `agent plugin`.
#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Install a plugin from a folder or a git URL (`URL@REF` pins a branch, tag or commit);
    /// shows what it will run and asks once.
    Install {
        /// A plugin folder, a marketplace folder, or a git URL with an optional `@REF`.
        source: String,
        /// The plugin to take from a marketplace catalogue.
        #[arg(long)]
        plugin: Option<String>,
        /// Where to install it.
        #[arg(long, value_enum, default_value = "user")]
        scope: ScopeArg,
        /// Trust what the plugin runs without asking (needed when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// The installed plugins of both scopes: state, format, pinned commit and parts.
    List,
    /// Load an installed plugin in later sessions.
    Enable(Named),
    /// Keep a plugin installed but load none of it.
    Disable(Named),
    /// Remove a plugin, its files and the trust given to it.
    Remove(Named),
    /// Fetch a plugin again from its source (a git install moves to the ref's new commit);
    /// asks again when what it runs changed.
    Update {
        #[command(flatten)]
        named: Named,
        /// Trust a changed plugin without asking.
        #[arg(long)]
        yes: bool,
    },
}

/// A plugin named in one scope.
#[derive(Debug, clap::Args)]
pub(crate) struct Named {
    /// The plugin's name.
    name: String,
    /// Its scope.
    #[arg(long, value_enum, default_value = "user")]
    scope: ScopeArg,
}

fn open(settings: &Settings, scope: ScopeArg) -> anyhow::Result<Installed> {
    let wanted = match scope {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
    };
    let workspace = settings.workspace()?;
    let dirs = scope_dirs(settings.options.config.as_deref(), Some(&workspace));
    let (_, dir) = dirs
        .into_iter()
        .find(|(scope, _)| *scope == wanted)
        .ok_or_else(|| anyhow::anyhow!("this platform has no config directory; pass --config"))?;
    Ok(Installed::open(wanted, &dir)?)
}

/// Runs a `plugin` subcommand.
pub(crate) fn run(options: &Options, command: PluginCommand) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&options.overrides())?;
    let frontend = crate::setup::Terminal;
    match command {
        PluginCommand::Install { source, plugin, scope, yes } => {
            let mut installed = open(&settings, scope)?;
            let request = store::InstallRequest { source, plugin, yes };
            let (record, shown) = store::install(&mut installed, &request, &frontend)?;
            for line in &shown {
                eprintln!("{line}");
            }
            let pin = record.commit.as_deref().map(|c| format!(" at {c}")).unwrap_or_default();
            println!("installed {} ({} scope){pin}", record.name, installed.scope.as_str());
        }
        PluginCommand::List => print!("{}", listing(&settings)?),
        PluginCommand::Enable(named) => {
            store::set_enabled(&mut open(&settings, named.scope)?, &named.name, true)?;
            println!("enabled {}", named.name);
        }
        PluginCommand::Disable(named) => {
            store::set_enabled(&mut open(&settings, named.scope)?, &named.name, false)?;
            println!("disabled {}", named.name);
        }
        PluginCommand::Remove(named) => {
            store::remove(&mut open(&settings, named.scope)?, &named.name)?;
            println!("removed {}", named.name);
        }
        PluginCommand::Update { named, yes } => {
            let mut installed = open(&settings, named.scope)?;
            let (record, shown) = store::update(&mut installed, &named.name, yes, &frontend)?;
            for line in &shown {
                eprintln!("{line}");
            }
            let pin = record.commit.as_deref().map(|c| format!(" at {c}")).unwrap_or_default();
            println!("updated {}{pin}", record.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `agent plugin list`'s text: one block per plugin, both scopes, then what was refused.
fn listing(settings: &Settings) -> anyhow::Result<String> {
    let workspace = settings.workspace()?;
    let mut text = String::new();
    for (scope, dir) in scope_dirs(settings.options.config.as_deref(), Some(&workspace)) {
        let installed = Installed::open(scope, &dir)?;
        for record in &installed.records {
            let state = if record.enabled { "enabled" } else { "disabled" };
            let version = record.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
            text.push_str(&visible_line(&format!(
                "{}{version}  {state}  {} scope  {}",
                record.name,
                scope.as_str(),
                record.format.as_str()
            )));
            text.push('\n');
            let pin = record.commit.as_deref().map(|c| format!(" @ {c}")).unwrap_or_default();
            text.push_str(&visible_line(&format!("  source: {}{pin}", record.source)));
            text.push('\n');
            match store::parts(&installed.folder(&record.name), &record.name) {
                Ok(parts) => {
                    let parts: Vec<String> = parts
                        .iter()
                        .filter(|(_, n)| *n > 0)
                        .map(|(k, n)| format!("{k} {n}"))
                        .collect();
                    let parts =
                        if parts.is_empty() { "nothing".to_owned() } else { parts.join(", ") };
                    text.push_str(&format!("  parts: {parts}\n"));
                }
                Err(err) => {
                    text.push_str(&visible_line(&format!("  refused: {err}")));
                    text.push('\n');
                }
            }
        }
    }
    for note in &settings.plugins.notes {
        text.push_str(&visible_line(note));
        text.push('\n');
    }
    if text.is_empty() {
        text.push_str("no plugins installed (agent plugin install PATH|GIT-URL)\n");
    }
    Ok(text)
}
