//! Builds the runtime pieces every command shares: workspace, sandbox, tools, policy, executor.

use std::{path::PathBuf, str::FromStr};

use agent_exec::{
    Executor, ExecutorConfig, PermissionMode, PolicyBuilder, Registry, RuleAction, Workspace,
    sandbox::{SandboxConfig, SandboxPolicy},
};
use agent_tools::{BashConfig, BuiltinConfig};
use anyhow::Context;

use crate::Options;

/// An executor with the built-in tools, and the warnings its rules produced.
pub(crate) struct Runtime {
    pub(crate) executor: Executor,
    pub(crate) warnings: Vec<String>,
}

/// Builds the executor for `options`; `default_mode` applies when no mode is given.
pub(crate) fn build(
    options: &Options,
    default_mode: PermissionMode,
    session_id: &str,
    session_dir: Option<PathBuf>,
) -> anyhow::Result<Runtime> {
    let root = match &options.workspace {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let workspace =
        Workspace::new(&root).with_context(|| format!("opening workspace {}", root.display()))?;
    let mode = match &options.permission_mode {
        Some(text) => PermissionMode::from_str(text)?,
        None => default_mode,
    };
    let policy = match &options.sandbox {
        Some(text) => SandboxPolicy::from_str(text)?,
        None => SandboxPolicy::WorkspaceWrite,
    };
    let sandbox = SandboxConfig::new(workspace.root().to_path_buf())
        .with_policy(policy)
        .with_network(options.network);
    let tools = agent_tools::builtin(&BuiltinConfig {
        bash: BashConfig { sandbox, ..BashConfig::default() },
        ..BuiltinConfig::default()
    })?;
    let mut registry = Registry::new();
    if let Some(wanted) = &options.tools {
        let known: Vec<String> = tools.iter().map(|tool| tool.spec().name.clone()).collect();
        if let Some(unknown) = wanted.iter().find(|name| !known.contains(name)) {
            anyhow::bail!("--tools: no tool named `{unknown}` (tools: {})", known.join(", "));
        }
    }
    for tool in tools {
        // Tools left out are not offered at all; the permission policy is the same either way.
        if options.tools.as_ref().is_none_or(|wanted| wanted.contains(&tool.spec().name)) {
            registry.register(tool)?;
        }
    }
    let mut builder = PolicyBuilder::new(workspace.clone(), mode);
    for (action, rules, origin) in [
        (RuleAction::Deny, &options.deny, "--deny"),
        (RuleAction::Ask, &options.ask, "--ask"),
        (RuleAction::Allow, &options.allow, "--allow"),
    ] {
        for rule in rules {
            builder.rule(action, rule, origin)?;
        }
    }
    let policy = builder.build();
    let warnings = policy.warnings().iter().map(ToString::to_string).collect();
    let mut config = ExecutorConfig::new(session_id);
    config.session_dir = session_dir;
    let executor = Executor::new(registry, policy, config);
    Ok(Runtime { executor, warnings })
}
