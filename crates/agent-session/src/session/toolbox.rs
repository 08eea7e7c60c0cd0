//! A session's tools without its model: what `agent tools` lists and calls and what `agent mcp
//! serve` offers, assembled from the same configuration and parts as a session.

use std::sync::Arc;

use agent_exec::{Executor, ExecutorConfig, PermissionMode};
use agent_mcp::McpTools;
use agent_tools::FileTracker;

use crate::{Frontend, error::Context, hooks, overrides::Overrides, settings::Settings};

/// What the tools are for, which decides the mode, the hooks and the servers they come with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolboxUse {
    /// Listing the tools a model would get; with `tokens`, the project instructions and skills
    /// list are added so the count is the first request's.
    List {
        /// Add what every request carries besides the tools.
        tokens: bool,
    },
    /// One call typed by a person: every built-in, bypass mode (deny rules still apply), the
    /// trusted hooks, every MCP server waited for.
    Call,
    /// Serving the built-ins to an MCP client: no hooks, no MCP servers, calls that would ask
    /// are refused.
    Serve,
}

/// The tools under the session's policy, and what they need kept alive.
pub struct Toolbox {
    /// The registry, policy and hooks.
    pub executor: Executor,
    /// The instructions a model would get with them.
    pub instructions: String,
    /// The resolved configuration.
    pub settings: Settings,
    /// The files the tools have read and written.
    pub tracker: Arc<FileTracker>,
    /// The MCP servers, running while the toolbox lives.
    mcp: Option<Arc<McpTools>>,
    /// Where capped outputs are kept, removed with the toolbox.
    scratch: tempfile::TempDir,
}

impl Toolbox {
    /// Assembles the tools for `purpose` from the configuration `overrides` point at; MCP
    /// servers run on `runtime`.
    pub fn open(
        overrides: &Overrides,
        purpose: ToolboxUse,
        frontend: &Arc<dyn Frontend>,
        runtime: &tokio::runtime::Runtime,
    ) -> crate::Result<Self> {
        let scratch = tempfile::tempdir().context("creating a scratch session directory")?;
        let mut settings = Settings::load(overrides)?;
        settings.every_tool = purpose == ToolboxUse::Call;
        let id = if purpose == ToolboxUse::Serve { "mcp-serve" } else { "cli" };
        let mut config = ExecutorConfig::new(id);
        config.session_dir = Some(scratch.path().to_path_buf());
        let tracker = FileTracker::new();
        let mode = match purpose {
            // A person typed the call, so the mode defaults to bypass; deny rules (from flags
            // and the config file alike) still apply.
            ToolboxUse::List { .. } | ToolboxUse::Call => PermissionMode::Bypass,
            ToolboxUse::Serve => PermissionMode::DontAsk,
        };
        let mut builder = settings.builder(mode, tracker.clone(), config)?;
        if purpose == ToolboxUse::Serve {
            // The configured MCP servers are not served on: a client that wants them connects
            // to them.
            let executor = builder.build_executor()?;
            say_warnings(&executor, frontend.as_ref());
            let instructions = String::new();
            return Ok(Self { executor, instructions, settings, tracker, mcp: None, scratch });
        }
        let trust = hooks::Trust::OnlyTrusted;
        // A direct call passes the same hooks as a model's call; listing tools runs none.
        if purpose == ToolboxUse::Call {
            let workspace = settings.workspace()?;
            builder =
                builder.hooks(hooks::load(&settings.file.hooks, &workspace, trust, frontend)?);
        }
        // Listing and calling need every configured MCP server, so here they are waited for
        // (each within its startup timeout).
        let mcp = {
            let _inside = runtime.enter();
            settings.mcp_tools(Some(scratch.path().to_path_buf()), trust, frontend)?
        };
        if let Some(mcp) = &mcp {
            runtime.block_on(mcp.wait_all());
            builder = builder.late_tools(mcp.clone());
        }
        // The project instructions and the skills list go with every request, so the token
        // count includes them.
        if purpose == (ToolboxUse::List { tokens: true }) {
            builder = builder.project_instructions(&settings.project_docs()?.text);
            let extras = crate::skills::for_settings(&settings, trust, frontend.as_ref())?;
            let configured = settings.options.context_window.or(settings.profile.context_window);
            let window = configured
                .or_else(|| agent_model::context_window(&settings.model.model))
                .unwrap_or(agent_model::DEFAULT_CONTEXT_WINDOW);
            let budget = settings.file.skills.budget(window);
            let counter = agent_model::counter_for(&settings.model.model);
            let catalog = &extras.catalog;
            builder = crate::skills::attach(
                builder,
                catalog,
                budget,
                counter.as_ref(),
                frontend.as_ref(),
            )?;
        }
        // The plan and the child agents, as a session wires them (their tools are offered after
        // the built-ins and any MCP tools, as in `exec`).
        let waiting = crate::waiting::Waiting::default();
        let (builder, _organizer) =
            crate::agents::wire(builder, &settings, scratch.path(), Vec::new(), &waiting, None)?;
        let (executor, instructions) = builder.build_executor_and_instructions()?;
        say_warnings(&executor, frontend.as_ref());
        Ok(Self { executor, instructions, settings, tracker, mcp, scratch })
    }

    /// Whether MCP servers run with these tools.
    pub fn has_mcp(&self) -> bool {
        self.mcp.is_some()
    }

    /// Where capped outputs are kept.
    pub fn scratch(&self) -> &std::path::Path {
        self.scratch.path()
    }

    /// Keeps the scratch directory after the toolbox is gone (an output names a file in it);
    /// returns where it is.
    pub fn keep_scratch(self) -> std::path::PathBuf {
        self.scratch.keep()
    }
}

/// The policy's warnings (a rule that can never match, a mode that overrides another).
fn say_warnings(executor: &Executor, frontend: &dyn Frontend) {
    for warning in executor.policy().warnings() {
        frontend.say(&format!("warning: {warning}"));
    }
}
