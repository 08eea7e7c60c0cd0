//! The services a session starts from its settings: the library's [`AgentBuilder`] filled with
//! the workspace, the built-in tools under the sandbox (and its network proxy in allow-list mode),
//! every permission rule and the limits; and the session's MCP servers.

use std::{path::PathBuf, sync::Arc, time::Duration};

use agent_exec::{
    AgentBuilder, ExecutorConfig, PermissionMode, RuleAction,
    jobs::{Jobs, JobsConfig},
    network::{NetworkMode, SessionProxy},
    sandbox::{NetNamespace, SandboxConfig},
};
use agent_mcp::{McpSession, McpTools, ServerEnv, ToolBudget};
use agent_tools::{
    BashConfig, BuiltinConfig, BuiltinTools, FileTracker, ProviderKind, Shell, ViewImageConfig,
    WebSearchConfig,
};

use super::Settings;
use crate::{
    Frontend,
    config::{self, SearchProvider},
    hooks::Trust,
    mcp,
};

impl Settings {
    /// Starts the configured MCP servers, and the project's `.mcp.json` servers the user
    /// approved (`trust` says whether to ask about the others), in the background (inside a
    /// tokio runtime); `None` when there are none. Problems are reported on stderr, once each.
    /// Every tool is offered, whatever its schemas take (for `agent tools`).
    pub fn mcp_tools(
        &self,
        session_dir: Option<PathBuf>,
        trust: Trust,
        frontend: &Arc<dyn Frontend>,
    ) -> crate::Result<Option<Arc<McpTools>>> {
        self.start_mcp(session_dir, trust, None, None, frontend)
    }

    /// [`Settings::mcp_tools`] for a model's session: while the tools' schemas together take
    /// more than `mcp_tool_budget_tokens`, the model gets `tool_search` instead (docs/mcp.md).
    /// The servers' questions (elicitations) go to `approver`, when the session has one.
    pub fn session_mcp_tools(
        &self,
        session_dir: Option<PathBuf>,
        trust: Trust,
        approver: Option<Arc<dyn agent_exec::Approver>>,
        frontend: &Arc<dyn Frontend>,
    ) -> crate::Result<Option<Arc<McpTools>>> {
        let tokens = self.file.mcp_tool_budget_tokens.unwrap_or(ToolBudget::DEFAULT_TOKENS);
        // Counted as the schema is sent (its Chat Completions entry) with `o200k_base`, the
        // same count `agent mcp list` shows.
        let budget = ToolBudget { tokens, cost: Arc::new(agent_model::tool_tokens) };
        self.start_mcp(session_dir, trust, Some(budget), approver, frontend)
    }

    fn start_mcp(
        &self,
        session_dir: Option<PathBuf>,
        trust: Trust,
        budget: Option<ToolBudget>,
        approver: Option<Arc<dyn agent_exec::Approver>>,
        frontend: &Arc<dyn Frontend>,
    ) -> crate::Result<Option<Arc<McpTools>>> {
        let workspace = self.workspace()?;
        let mut servers = self.file.mcp_servers.clone();
        servers.extend(mcp::startable(
            &workspace,
            &self.file.mcp_servers,
            trust,
            frontend.as_ref(),
        )?);
        if servers.is_empty() {
            return Ok(None);
        }
        let env = ServerEnv { workspace, session_dir };
        let session = McpSession::new(&servers, env)?;
        if let Some(approver) = approver {
            session.questions().answer_with(Arc::new(agent_mcp::AskApprover(approver)));
        }
        // A problem may quote the server (its stderr, its error message).
        let frontend = frontend.clone();
        let report = move |problem: &str| frontend.say(&crate::visible::visible(problem));
        Ok(Some(McpTools::start_with_budget(session, budget, report)))
    }

    /// A builder with the workspace, the built-in tools (sharing `tracker`), every permission
    /// rule (config file, profile, flags) and the limits; `default_mode` applies when neither a
    /// flag nor the profile names a mode.
    pub fn builder(
        &self,
        default_mode: PermissionMode,
        tracker: Arc<FileTracker>,
        executor: ExecutorConfig,
    ) -> crate::Result<AgentBuilder> {
        Ok(self.session_builder(default_mode, tracker, executor)?.0)
    }

    /// [`Settings::builder`], the session's job table the bash tool starts jobs in (for
    /// `--jobs` and `/jobs`), and its proxy in allow-list mode (for `/network`).
    pub fn session_builder(
        &self,
        default_mode: PermissionMode,
        tracker: Arc<FileTracker>,
        executor: ExecutorConfig,
    ) -> crate::Result<(AgentBuilder, Jobs, Option<Arc<SessionProxy>>)> {
        let options = &self.options;
        let root = self.workspace()?;
        let mode = self.permission_mode(default_mode)?;
        let mut builtin = self.builtin_config(tracker, &executor)?;
        // Language servers for diagnostics after edits, started on demand (docs/lsp.md).
        let lsp = self.file.lsp.session(&root, executor.session_dir.as_deref())?;
        builtin.edit_observer = lsp.as_ref().map(crate::config::lsp::observer);
        let jobs = builtin.bash.jobs.clone();
        let proxy = builtin.bash.sandbox.proxy.clone();
        let mut executor = executor;
        let limits = self.limits();
        if let Some(secs) = limits.tool_timeout_secs {
            executor.default_timeout = Duration::from_secs(secs);
        }
        if let Some(cap) = limits.output_cap {
            executor.output_cap = cap;
        }
        // The same door a library user takes: the tools, their job table, their instructions;
        // then the profile's choice of edit tool and shapes.
        let shapes = self.tool_shapes();
        // Both edit tools are registered; the profile's shapes keep the one it offers (and any
        // that `--tools` names), and a direct `tools call` may run either.
        let observer = builtin.edit_observer.clone();
        let other_edit =
            agent_tools::other_edit_tool(builtin.edit_tool, tracker_of(&builtin), observer)?;
        let mut builder = AgentBuilder::new(&root)
            .builtin_tools(&builtin)?
            .tool(other_edit)
            .permission_mode(mode)
            .executor_config(executor);
        if !self.every_tool {
            let named = options.tools.clone().unwrap_or_default();
            builder = builder.map_tools(|tool| shapes.offer(tool, &named));
            // Without a provider web_search can only answer `not_configured`, so it is offered
            // once `[web_search]` is set (or when `--tools` names it): web_fetch reads pages
            // without one (docs/tools.md, "What the model is told").
            if builtin.web_search.is_none() && !named.iter().any(|name| name == "web_search") {
                builder =
                    builder.map_tools(|tool| (tool.spec().name != "web_search").then_some(tool));
            }
        }
        if shapes.shell || self.every_tool {
            builder = builder.tool(Arc::new(Shell::new()?));
        }
        if let Some(lsp) = lsp {
            // Files a command changes are checked too (docs/lsp.md, "Files a command changed").
            builder = builder.map_tools(|tool| Some(lsp.watch_commands(tool)));
            builder =
                builder.tool(Arc::new(agent_core::Typed::new(agent_lsp::Diagnostics::new(lsp))?));
        }
        if let Some(names) = &options.tools {
            builder = builder.only_tools(names.iter().cloned());
        }
        Ok((self.rules(builder), jobs, proxy))
    }

    /// The built-in tools' configuration: the sandbox of commands, the job table (its output
    /// files in the session directory), the limits and web search. Secret files need nothing
    /// here: bash hides what the session's policy hides, `Read(…)` allow rules included.
    fn builtin_config(
        &self,
        tracker: Arc<FileTracker>,
        executor: &ExecutorConfig,
    ) -> crate::Result<BuiltinConfig> {
        let policy = self.sandbox_policy()?;
        let limits = self.limits();
        // With the network off, commands share one private network namespace holding only
        // `lo`: a server one call starts answers the next, and nothing else is reachable. Where
        // the kernel refuses, they get no IP socket at all (`agent sandbox check` says which).
        // In allow-list mode the same namespace holds the session proxy's port, its only way out.
        let network = self.network();
        let mode = self.network_mode();
        let on = mode == NetworkMode::On;
        // Allow-list mode needs the namespace now, for the proxy's port; otherwise it is made
        // while the first request goes out, and the first command waits for it if need be.
        let loopback = (!on && policy.is_restricted()).then(|| match mode {
            NetworkMode::AllowList => NetNamespace::create().ok(),
            _ => Some(NetNamespace::in_background()),
        });
        let loopback = loopback.flatten();
        let resolver = network.resolver()?;
        let proxy = match (mode, &loopback) {
            (NetworkMode::AllowList, Some(namespace)) => Some(crate::network::start_proxy(
                namespace,
                &network,
                resolver.clone(),
                executor.session_dir.as_deref(),
            )?),
            (NetworkMode::AllowList, None) if policy.is_restricted() => crate::error::bail!(
                "--network=allow-list needs the session's private network namespace, which this machine refuses; `agent sandbox check` says why"
            ),
            _ => None,
        };
        let jobs = Jobs::new(JobsConfig {
            dir: executor.session_dir.as_ref().map(|dir| dir.join("jobs")),
            ..JobsConfig::default()
        });
        let mut bash = BashConfig {
            sandbox: SandboxConfig::new(PathBuf::new())
                .with_policy(policy)
                .with_network(on)
                .with_loopback(loopback),
            jobs,
            ..BashConfig::default()
        };
        if let Some(secs) = limits.bash_timeout_secs {
            bash.default_timeout = Duration::from_secs(secs);
        }
        if let Some(secs) = limits.bash_max_timeout_secs {
            bash.max_timeout = Duration::from_secs(secs);
        }
        // The sandbox configuration holds the session's proxy: it lives as long as the tools.
        if let Some(proxy) = proxy {
            bash.sandbox = bash.sandbox.with_proxy(proxy);
        }
        let web_search = self.profile.web_search.as_ref().or(self.file.web_search.as_ref());
        Ok(BuiltinConfig {
            web_fetch: agent_tools::WebFetchConfig {
                resolver,
                ..agent_tools::WebFetchConfig::default()
            },
            bash,
            web_search: web_search.map(web_search_config),
            view_image: ViewImageConfig { model_sees_images: self.model.sees_images() },
            tracker: Some(tracker),
            ..BuiltinConfig::default()
        })
    }

    /// `builder` with every permission rule: the config file's, the profile's, the flags'.
    fn rules(&self, mut builder: AgentBuilder) -> AgentBuilder {
        let options = &self.options;
        let profile_origin = match &self.profile_name {
            Some(name) => format!("config profile `{name}`"),
            None => "config profile".to_owned(),
        };
        for (permissions, origin) in [
            (&self.file.permissions, "config file".to_owned()),
            (&self.profile.permissions, profile_origin),
        ] {
            for (action, rules) in [
                (RuleAction::Deny, &permissions.deny),
                (RuleAction::Ask, &permissions.ask),
                (RuleAction::Allow, &permissions.allow),
            ] {
                for rule in rules {
                    builder = builder.rule(action, rule, &origin);
                }
            }
        }
        for (action, rules, origin) in [
            (RuleAction::Deny, &options.deny, "--deny"),
            (RuleAction::Ask, &options.ask, "--ask"),
            (RuleAction::Allow, &options.allow, "--allow"),
        ] {
            for rule in rules {
                builder = builder.rule(action, rule, origin);
            }
        }
        builder
    }
}

/// The web_search configuration of a `[web_search]` table; the key is read from the variable it
/// names and never stored anywhere else.
fn web_search_config(table: &config::WebSearch) -> WebSearchConfig {
    let provider = match table.provider {
        SearchProvider::Searxng => ProviderKind::Searxng,
        SearchProvider::Brave => ProviderKind::Brave,
        SearchProvider::Tavily => ProviderKind::Tavily,
    };
    let mut config = WebSearchConfig::new(provider);
    if let Some(url) = &table.base_url {
        config = config.with_base_url(url.clone());
    }
    if let Some(key) = table.api_key_env.as_deref().and_then(|name| std::env::var(name).ok()) {
        config = config.with_api_key(agent_tools::ApiKey::new(key));
    }
    if let Some(secs) = table.timeout_secs {
        config = config.with_timeout(Duration::from_secs(secs));
    }
    config
}

/// The file tracker the built-ins share (the binary always sets one, for its previews).
fn tracker_of(builtin: &BuiltinConfig) -> Arc<FileTracker> {
    builtin.tracker.clone().unwrap_or_default()
}
