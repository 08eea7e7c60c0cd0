//! What every command shares: the configuration read once (flags over environment over the config
//! file's profile over defaults), checked when read, with nothing started: the services a session
//! starts from it (tools, sandbox and proxy, MCP servers) are in [`services`].

mod model_limits;
pub mod services;

use std::{path::PathBuf, str::FromStr, time::Duration};

use crate::error::Context;
use agent_exec::{
    PermissionMode, network::NetworkMode, project_doc::ProjectDocs, sandbox::SandboxPolicy,
};
use agent_tools::BashConfig;

use self::model_limits::{DEFAULT_WAITING_NOTICE_SECS, response_limits};
use crate::{
    config::{self, ConfigFile, Limits, ModelFlags, ModelSettings, Profile},
    overrides::Overrides,
    shapes::ToolShapes,
};

/// The configuration of one command, resolved once.
pub struct Settings {
    /// The config file read (empty when there is none).
    pub file: ConfigFile,
    /// The profile in use, by name, when one is.
    pub profile_name: Option<String>,
    /// The profile in use (defaults when none).
    pub profile: Profile,
    /// The model server, model and API, after every precedence rule.
    pub model: ModelSettings,
    /// The options with the profile's values filled in where no flag was given (the sandbox and
    /// the permission mode are resolved by [`Settings::sandbox_policy`] and the builder).
    pub options: Overrides,
    /// Register every built-in tool whatever the profile offers a model (`agent tools call`
    /// runs `apply_patch` and `edit_file` alike).
    pub every_tool: bool,
    /// The enabled plugins, read once; their hooks and servers are already in [`Settings::file`]
    /// (docs/plugins.md).
    pub plugins: crate::plugins::Loaded,
}

impl Settings {
    /// Reads the config file (`--config`, else the platform default) and applies precedence.
    pub fn load(options: &Overrides) -> crate::Result<Self> {
        Self::load_with_env(options, &|name| std::env::var(name).ok())
    }

    fn load_with_env(
        options: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> crate::Result<Self> {
        let file = match (&options.config, ConfigFile::default_path()) {
            (Some(named), _) => ConfigFile::load(named, true)?,
            (None, Some(default)) => ConfigFile::load(&default, false)?,
            (None, None) => ConfigFile::default(),
        };
        let as_u64 = |value: Option<usize>| value.map(|v| u64::try_from(v).unwrap_or(u64::MAX));
        config::check_range("--max-turns", "max_turns", as_u64(options.max_turns))?;
        config::check_range("--context-window", "context_window", options.context_window)?;
        let flags = ModelFlags {
            profile: options.profile.clone(),
            base_url: options.base_url.clone(),
            model: options.model.clone(),
            api: options.api,
            no_stream: options.no_stream,
        };
        let (mut model, profile) = config::resolve_model(&flags, env, &file)?;
        model.response = response_limits(&file.limits.overridden_by(profile.limits), options)?;
        let profile_name = options.profile.clone().or_else(|| file.default_profile.clone());
        let mut options = options.clone();
        options.max_turns = options.max_turns.or(profile.max_turns);
        options.tools = options.tools.clone().or(profile.tools.clone());
        let mut settings = Self {
            file,
            profile_name,
            profile,
            model,
            options,
            every_tool: false,
            plugins: crate::plugins::Loaded::default(),
        };
        settings.check_bash_limits()?;
        let workspace = settings.workspace().ok();
        let mut plugins = crate::plugins::Loaded::load(
            &settings.file.plugins,
            settings.options.config.as_deref(),
            workspace.as_deref(),
        );
        plugins.merge_into(&mut settings.file);
        settings.plugins = plugins;
        Ok(settings)
    }

    /// bash's default time limit may not exceed the most a call may ask for: it would be cut
    /// to that maximum without a word.
    fn check_bash_limits(&self) -> crate::Result<()> {
        let limits = self.limits();
        let defaults = BashConfig::default();
        let default = limits.bash_timeout_secs.unwrap_or(defaults.default_timeout.as_secs());
        let max = limits.bash_max_timeout_secs.unwrap_or(defaults.max_timeout.as_secs());
        if default > max {
            crate::error::bail!(
                "bash_timeout_secs = {default} is above bash_max_timeout_secs = {max}; raise \
                 bash_max_timeout_secs too"
            );
        }
        Ok(())
    }

    /// Which edit tool the model gets, in which shape, and whether it gets the shell built-in.
    pub fn tool_shapes(&self) -> ToolShapes {
        ToolShapes::resolve(&self.model.model, self.model.api, &self.profile)
    }

    /// The project instructions (`AGENTS.md` from the repository root down to the workspace,
    /// after the user's own beside the config file), or none with `--no-project-doc`.
    pub fn project_docs(&self) -> crate::Result<ProjectDocs> {
        if self.options.no_project_doc {
            return Ok(ProjectDocs::default());
        }
        let config = self.options.config.clone().or_else(ConfigFile::default_path);
        let user_dir = config.as_deref().and_then(std::path::Path::parent);
        Ok(ProjectDocs::discover(&self.workspace()?, user_dir))
    }

    /// How often exec and the REPL say "still waiting for the model" while it is silent
    /// (`[limits] model_waiting_notice_secs`, default 10 s); `None` never says it.
    pub fn waiting_notice(&self) -> Option<Duration> {
        let secs = self.limits().model_waiting_notice_secs.unwrap_or(DEFAULT_WAITING_NOTICE_SECS);
        (secs > 0).then(|| Duration::from_secs(secs))
    }

    /// The tool limits: the file's `[limits]`, overridden by the profile's.
    pub(crate) fn limits(&self) -> Limits {
        self.file.limits.overridden_by(self.profile.limits)
    }

    /// The workspace root: `--workspace`, else the current directory. A named one must be a
    /// directory, said in those words (not as whatever file inside it was read first).
    pub fn workspace(&self) -> crate::Result<PathBuf> {
        match &self.options.workspace {
            Some(path) => match std::fs::metadata(path) {
                Ok(meta) if meta.is_dir() => Ok(path.clone()),
                Ok(_) => crate::error::bail!("workspace {} is not a directory", path.display()),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    crate::error::bail!("workspace {} does not exist", path.display())
                }
                Err(err) => Err(err).with_context(|| format!("workspace {}", path.display())),
            },
            None => std::env::current_dir().context("reading the current directory"),
        }
    }

    /// The `[network]` table in force: the file's, with the profile's on top.
    pub fn network(&self) -> crate::config::NetworkTable {
        self.file.network.with_profile(self.profile.network.as_ref())
    }

    /// The network mode of commands: the flag, else the profile's or the file's, else off.
    pub fn network_mode(&self) -> NetworkMode {
        self.options.network.or(self.network().mode).unwrap_or_default()
    }

    /// The OS sandbox policy for commands: the flag or the profile's, else workspace-write.
    pub fn sandbox_policy(&self) -> crate::Result<SandboxPolicy> {
        Ok(match (self.options.sandbox, &self.profile.sandbox) {
            (Some(flag), _) => flag,
            (None, Some(text)) => SandboxPolicy::from_str(text)?,
            (None, None) => SandboxPolicy::WorkspaceWrite,
        })
    }

    /// The permission mode: the flag or the profile's, else `default_mode`.
    pub(crate) fn permission_mode(
        &self,
        default_mode: PermissionMode,
    ) -> crate::Result<PermissionMode> {
        Ok(match (self.options.permission_mode, &self.profile.permission_mode) {
            (Some(flag), _) => flag,
            (None, Some(text)) => PermissionMode::from_str(text)?,
            (None, None) => default_mode,
        })
    }
}
