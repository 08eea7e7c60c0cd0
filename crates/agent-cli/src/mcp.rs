//! `agent mcp`: configure MCP servers (`add`, `remove`, `list`, `get`) and serve the built-in
//! tools to MCP clients (`serve`).

use std::{path::PathBuf, process::ExitCode};

use agent_mcp::ServerConfig;
use anyhow::{Context, bail};
use clap::Subcommand;

use self::{
    list::{Entry, Origin},
    serve::ServeArgs,
};
pub(crate) use agent_session::mcp as project;

use crate::{Options, config::ConfigFile, settings::Settings};

mod edit;
pub(crate) mod list;
mod serve;

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
    /// Add a server to the config file: `agent mcp add NAME -- CMD ARGS…` for a stdio server,
    /// `agent mcp add NAME --url URL` for streamable HTTP.
    Add(AddArgs),
    /// Remove a server from the config file.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Start every configured server and show its state, tool count, schema size in tokens and
    /// last error.
    List {
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Start one server and show its definition (secrets masked), state and tools.
    Get {
        /// The server's name.
        name: String,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Approve the servers of the workspace's `.mcp.json` (all, or those named) to start in
    /// this project, without a session; a changed definition needs approving again.
    Approve {
        /// The servers to approve (default: every one in the file).
        names: Vec<String>,
    },
}

/// `agent mcp add`.
#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// The server's name: letters, digits, `_` and `-` (its tools are `mcp__NAME__TOOL`).
    name: String,
    /// The endpoint of a streamable HTTP server, instead of a command.
    #[arg(long, conflicts_with_all = ["env", "cwd"])]
    url: Option<String>,
    /// A variable for a stdio server's environment (repeatable); written to the config file.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = pair)]
    env: Vec<(String, String)>,
    /// A stdio server's working directory (relative paths are relative to the workspace).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The variable holding an HTTP server's bearer token (the token itself is never written).
    #[arg(long, requires = "url", value_name = "VAR")]
    bearer_token_env_var: Option<String>,
    /// A header sent to an HTTP server with every request (repeatable).
    #[arg(long = "header", requires = "url", value_name = "KEY=VALUE", value_parser = pair)]
    headers: Vec<(String, String)>,
    /// The command of a stdio server and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

fn pair(text: &str) -> anyhow::Result<(String, String)> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => bail!("expected KEY=VALUE"),
    }
}

pub(crate) fn run(options: &Options, command: McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Serve(args) => serve::run(options, &args),
        McpCommand::Add(args) => add(options, args),
        McpCommand::Remove { name } => remove(options, &name),
        McpCommand::List { json } => list(options, None, json),
        McpCommand::Get { name, json } => list(options, Some(&name), json),
        McpCommand::Approve { names } => approve(options, &names),
    }
}

/// The config file `add` and `remove` edit: `--config`, else the default one.
fn config_path(options: &Options) -> anyhow::Result<PathBuf> {
    options
        .config
        .clone()
        .or_else(ConfigFile::default_path)
        .context("no config directory on this platform; name a config file with --config")
}

fn add(options: &Options, args: AddArgs) -> anyhow::Result<ExitCode> {
    let mut server = match (args.url, args.command.split_first()) {
        (Some(url), None) => ServerConfig::http(url),
        (None, Some((command, rest))) => ServerConfig::stdio(command.clone(), rest.to_vec()),
        (Some(_), Some(_)) => bail!("give either --url or a command after `--`, not both"),
        (None, None) => bail!(
            "say how to reach the server: `agent mcp add {0} -- COMMAND ARGS…` (stdio) or `agent              mcp add {0} --url URL` (streamable HTTP)",
            args.name
        ),
    };
    server.env = args.env.into_iter().collect();
    server.cwd = args.cwd;
    server.bearer_token_env_var = args.bearer_token_env_var;
    server.http_headers = args.headers.into_iter().collect();
    let path = config_path(options)?;
    let text = edit::read(&path)?;
    let edited = edit::add(&text, &args.name, &server)
        .with_context(|| format!("adding to {}", path.display()))?;
    edit::write(&path, &edited)?;
    // Values of `env` and headers may be secrets: only their names are shown.
    let how = match &server.url {
        Some(url) => format!("streamable HTTP at {url}"),
        None => format!(
            "stdio: {}",
            std::iter::once(server.command.clone().unwrap_or_default())
                .chain(server.args.clone())
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    println!("added MCP server `{}` ({how}) to {}", args.name, path.display());
    let names: Vec<&String> = server.env.keys().chain(server.http_headers.keys()).collect();
    if !names.is_empty() {
        let names: Vec<&str> = names.iter().map(|name| name.as_str()).collect();
        println!("with {} set (values not shown)", names.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(options: &Options, name: &str) -> anyhow::Result<ExitCode> {
    let path = config_path(options)?;
    if !path.exists() {
        bail!("{} does not exist, so no MCP server `{name}` is configured", path.display());
    }
    let text = edit::read(&path)?;
    let edited = edit::remove(&text, name).with_context(|| format!("in {}", path.display()))?;
    edit::write(&path, &edited)?;
    println!("removed MCP server `{name}` from {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `list` (every server) and `get` (the one named).
fn list(options: &Options, only: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&options.overrides())?;
    let workspace = settings.workspace()?;
    let mut entries = entries(&settings.file.mcp_servers, &settings.plugins, &workspace)?;
    if let Some(name) = only {
        entries.retain(|entry| entry.name == name);
        if entries.is_empty() {
            bail!("no MCP server named `{name}` is configured or in the project's .mcp.json");
        }
    }
    let counter = agent_model::counter_for(&settings.model.model);
    let runtime = crate::setup::tokio_runtime()?;
    let reports = runtime.block_on(list::gather(&entries, workspace, counter))?;
    let text = match (only, json) {
        (None, false) => list::table(&reports),
        (None, true) => serde_json::to_string_pretty(&reports)? + "\n",
        (Some(_), false) => reports.iter().map(list::details).collect(),
        (Some(_), true) => {
            let one: Vec<_> = reports.iter().map(list::details_json).collect();
            serde_json::to_string_pretty(&one[0])? + "\n"
        }
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// Every server to show: the configured ones, then the project's `.mcp.json` servers (an
/// unapproved one is shown, never started). `agent doctor` starts the same list.
pub(crate) fn entries(
    configured: &std::collections::BTreeMap<String, ServerConfig>,
    plugins: &agent_session::plugins::Loaded,
    workspace: &std::path::Path,
) -> anyhow::Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = configured
        .iter()
        .map(|(name, config)| Entry {
            name: name.clone(),
            config: config.clone(),
            origin: if plugins.mcp_owner(name).is_some() { Origin::Plugin } else { Origin::Config },
            problem: None,
        })
        .collect();
    // The project's servers after the user's; an unapproved one is shown, never started.
    for server in project::load(workspace, configured)? {
        let (config, problem) = match server.config {
            Ok(config) => (config, None),
            Err(why) => (ServerConfig::stdio("", Vec::new()), Some(why.to_string())),
        };
        let origin = if server.approved { Origin::Project } else { Origin::Unapproved };
        entries.push(Entry { name: server.name, config, origin, problem });
    }
    Ok(entries)
}

/// `agent mcp approve`: the project's servers, approved as they are defined now.
fn approve(options: &Options, names: &[String]) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&options.overrides())?;
    let workspace = settings.workspace()?;
    let servers = project::load(&workspace, &settings.file.mcp_servers)?;
    if servers.is_empty() {
        bail!(
            "{} defines no MCP servers to approve (a server of the same name in the config file \
             replaces the project's)",
            workspace.join(project::PROJECT_MCP).display()
        );
    }
    for name in names {
        if !servers.iter().any(|server| &server.name == name) {
            bail!("{} has no server `{name}`", project::PROJECT_MCP);
        }
    }
    let chosen: Vec<&project::ProjectServer> =
        servers.iter().filter(|server| names.is_empty() || names.contains(&server.name)).collect();
    for server in &chosen {
        if let Err(why) = &server.config {
            bail!("`{}` cannot be started, so it is not approved: {why}", server.name);
        }
    }
    project::Approvals::load()?.approve(&workspace, &chosen)?;
    for server in chosen {
        println!(
            "approved MCP server `{}` for {}: {}",
            server.name,
            workspace.display(),
            project::describe(server)
        );
    }
    Ok(ExitCode::SUCCESS)
}
