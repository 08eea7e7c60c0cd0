//! The options every command shares, as clap parses them: typed here, so a misspelt
//! `--sandbox` or `--permission-mode` is a usage error before anything starts.

use std::path::PathBuf;

use agent_exec::{PermissionMode, sandbox::SandboxPolicy};
use clap::{Args, ValueEnum};

use agent_session::{Overrides, config::Api};

/// Options shared by every command. Precedence: flag > environment > config profile > default.
#[derive(Debug, Clone, Args)]
pub(crate) struct Options {
    /// Named profile from the config file (for example `ollama`, `vllm`, `deepseek`).
    #[arg(long, global = true)]
    pub(crate) profile: Option<String>,
    /// Model name [env: AGENT_MODEL].
    #[arg(long, global = true)]
    pub(crate) model: Option<String>,
    /// Base URL of an OpenAI-compatible server [env: OPENAI_BASE_URL].
    #[arg(long, global = true)]
    pub(crate) base_url: Option<String>,
    /// Which API to speak (default: responses for api.openai.com, chat for any other server).
    #[arg(long, global = true, value_enum)]
    pub(crate) api: Option<ApiArg>,
    /// The workspace the tools may read and edit (default: the current directory).
    #[arg(long, global = true)]
    pub(crate) workspace: Option<PathBuf>,
    /// OS sandbox for commands: read-only, workspace-write (default) or danger-full-access.
    #[arg(long, global = true, value_enum, hide_possible_values = true)]
    pub(crate) sandbox: Option<Sandbox>,
    /// Network for commands: `--network` (on), `--network=allow-list` (only the names
    /// `[network] allow` lists, through the session's proxy) or `--network=off`.
    #[arg(
        long,
        global = true,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on",
        value_name = "MODE",
        value_enum
    )]
    pub(crate) network: Option<NetworkArg>,
    /// default (the REPL's default: asks), accept-edits, plan, dont-ask (`exec`'s default) or bypass.
    #[arg(long, global = true, value_enum, hide_possible_values = true)]
    pub(crate) permission_mode: Option<Mode>,
    /// Allow calls matching a rule without asking, e.g. 'Bash(cargo test *)' (repeatable).
    #[arg(long = "allow", global = true, value_name = "RULE")]
    pub(crate) allow: Vec<String>,
    /// Always ask before calls matching a rule (repeatable).
    #[arg(long = "ask", global = true, value_name = "RULE")]
    pub(crate) ask: Vec<String>,
    /// Deny calls matching a rule, e.g. 'Bash(git push *)' (repeatable).
    #[arg(long = "deny", global = true, value_name = "RULE")]
    pub(crate) deny: Vec<String>,
    /// Offer the model only these tools, comma-separated (e.g. `read_file,grep,glob`); the
    /// permission policy is unchanged.
    #[arg(long, global = true, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) tools: Option<Vec<String>>,
    /// The most model turns one prompt may take.
    #[arg(long, global = true)]
    pub(crate) max_turns: Option<usize>,
    /// Ask the model for whole responses instead of streams.
    #[arg(long, global = true)]
    pub(crate) no_stream: bool,
    /// The tool choice of each prompt's first turn only: a tool name, `required`, `none` or `auto`
    /// (later turns are `auto`, so the model can answer once it has the result).
    #[arg(long, global = true, value_name = "CHOICE")]
    pub(crate) tool_choice: Option<String>,
    /// The model's context window in tokens, overriding the profile's `context_window`, the
    /// built-in table and the server's word.
    #[arg(long, global = true, value_name = "TOKENS")]
    pub(crate) context_window: Option<u64>,
    /// Read no AGENTS.md project instructions.
    #[arg(long, global = true)]
    pub(crate) no_project_doc: bool,
    /// The longest wait for the first byte of a model response, in seconds (default 300;
    /// `[limits] model_first_byte_timeout_secs`).
    #[arg(long, global = true, value_name = "SECS")]
    pub(crate) model_first_byte_timeout: Option<u64>,
    /// The longest silence inside a model response once it started, in seconds (default 300;
    /// `[limits] model_idle_timeout_secs`).
    #[arg(long, global = true, value_name = "SECS")]
    pub(crate) model_idle_timeout: Option<u64>,
    /// The longest one model response may take in all, retries included, in seconds (default
    /// 1800; `[limits] model_total_timeout_secs`).
    #[arg(long, global = true, value_name = "SECS")]
    pub(crate) model_total_timeout: Option<u64>,
    /// Config file (default: the platform config directory's agent/config.toml).
    #[arg(long, global = true)]
    pub(crate) config: Option<PathBuf>,
    /// Run the session (chat or exec) in a new git worktree beside the repository, on a new
    /// branch `agent/NAME` (`--worktree` alone picks a name); see `agent worktree`.
    #[arg(
        long,
        global = true,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        value_name = "NAME"
    )]
    pub(crate) worktree: Option<String>,
    /// Continue a copy of a session cut after turn N (`ID:N`; the whole session without `:N`);
    /// the original stays as it was.
    #[arg(long, global = true, value_name = "SESSION[:TURN]")]
    pub(crate) fork: Option<String>,
}

/// `--sandbox`: the flag's spelling of [`SandboxPolicy`] (the profile's `sandbox` key is parsed by
/// [`SandboxPolicy`]'s own `FromStr`, with the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Sandbox {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

impl From<Sandbox> for SandboxPolicy {
    fn from(flag: Sandbox) -> Self {
        match flag {
            Sandbox::ReadOnly => SandboxPolicy::ReadOnly,
            Sandbox::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
            Sandbox::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        }
    }
}

/// `--permission-mode`: the flag's spelling of [`PermissionMode`], with Claude Code's camel-case
/// names accepted as aliases, as the profile's `permission_mode` key accepts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Mode {
    Default,
    #[value(alias = "acceptEdits")]
    AcceptEdits,
    Plan,
    #[value(alias = "dontAsk")]
    DontAsk,
    #[value(alias = "bypassPermissions")]
    Bypass,
}

impl From<Mode> for PermissionMode {
    fn from(flag: Mode) -> Self {
        match flag {
            Mode::Default => PermissionMode::Default,
            Mode::AcceptEdits => PermissionMode::AcceptEdits,
            Mode::Plan => PermissionMode::Plan,
            Mode::DontAsk => PermissionMode::DontAsk,
            Mode::Bypass => PermissionMode::Bypass,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    /// The flag and the profile key accept the same names for the same values, so a user can
    /// move a setting between them unchanged.
    #[test]
    fn the_flags_spell_values_as_the_profile_does() {
        for flag in Sandbox::value_variants() {
            let name = flag.to_possible_value().map(|value| value.get_name().to_owned());
            let parsed = name.as_deref().map(SandboxPolicy::from_str);
            assert_eq!(parsed.and_then(Result::ok), Some(SandboxPolicy::from(*flag)), "{name:?}");
        }
        for flag in Mode::value_variants() {
            let value = flag.to_possible_value();
            let names = value.iter().flat_map(|value| value.get_name_and_aliases());
            for name in names {
                let parsed = PermissionMode::from_str(name).ok();
                assert_eq!(parsed, Some(PermissionMode::from(*flag)), "{name}");
            }
        }
        assert_eq!(Sandbox::value_variants().len(), SandboxPolicy::ALL.len());
    }
}

/// `--network[=MODE]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum NetworkArg {
    /// Only the session's own loopback.
    Off,
    /// The host's network.
    On,
    /// Only `[network] allow`, through the session proxy.
    AllowList,
}

impl From<NetworkArg> for agent_exec::network::NetworkMode {
    fn from(arg: NetworkArg) -> Self {
        match arg {
            NetworkArg::Off => Self::Off,
            NetworkArg::On => Self::On,
            NetworkArg::AllowList => Self::AllowList,
        }
    }
}

/// `--api`: which OpenAI API to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ApiArg {
    /// Chat Completions: every compatible server speaks it.
    Chat,
    /// Responses: stored responses continued with `previous_response_id`.
    Responses,
}

impl From<ApiArg> for Api {
    fn from(arg: ApiArg) -> Self {
        match arg {
            ApiArg::Chat => Self::Chat,
            ApiArg::Responses => Self::Responses,
        }
    }
}

impl Options {
    /// The flags as agent-session's overrides of the configuration.
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            profile: self.profile.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            api: self.api.map(Api::from),
            workspace: self.workspace.clone(),
            sandbox: self.sandbox.map(SandboxPolicy::from),
            network: self.network.map(agent_exec::network::NetworkMode::from),
            permission_mode: self.permission_mode.map(PermissionMode::from),
            allow: self.allow.clone(),
            ask: self.ask.clone(),
            deny: self.deny.clone(),
            tools: self.tools.clone(),
            max_turns: self.max_turns,
            no_stream: self.no_stream,
            tool_choice: self.tool_choice.clone(),
            context_window: self.context_window,
            no_project_doc: self.no_project_doc,
            model_first_byte_timeout: self.model_first_byte_timeout,
            model_idle_timeout: self.model_idle_timeout,
            model_total_timeout: self.model_total_timeout,
            config: self.config.clone(),
            fork: self.fork.clone(),
        }
    }
}
