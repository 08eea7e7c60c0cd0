//! What the person starting a session says over the configuration: the CLI's flags, an editor's
//! working directory, a server request's profile and mode. Every field left empty falls back to
//! the profile, then the config file, then the default.

use std::path::PathBuf;

use agent_exec::{PermissionMode, network::NetworkMode, sandbox::SandboxPolicy};

use crate::config::Api;

/// Choices that outrank the configuration for one session (the CLI's global flags).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The profile of the config file to use (`--profile`).
    pub profile: Option<String>,
    /// The model's name (`--model`).
    pub model: Option<String>,
    /// The model server (`--base-url`).
    pub base_url: Option<String>,
    /// Which OpenAI API to speak (`--api`).
    pub api: Option<Api>,
    /// The workspace root; the current directory when empty (`--workspace`).
    pub workspace: Option<PathBuf>,
    /// How commands are sandboxed (`--sandbox`).
    pub sandbox: Option<SandboxPolicy>,
    /// Whether commands may use the network (`--network`).
    pub network: Option<NetworkMode>,
    /// The permission mode (`--permission-mode`).
    pub permission_mode: Option<PermissionMode>,
    /// Permission rules that allow without asking (`--allow`).
    pub allow: Vec<String>,
    /// Permission rules that always ask (`--ask`).
    pub ask: Vec<String>,
    /// Permission rules that refuse (`--deny`).
    pub deny: Vec<String>,
    /// The only built-in tools the model gets (`--tools`).
    pub tools: Option<Vec<String>>,
    /// The most model turns a prompt may take (`--max-turns`).
    pub max_turns: Option<usize>,
    /// Ask the server for whole answers instead of streams (`--no-stream`).
    pub no_stream: bool,
    /// The tool choice of each prompt's first turn (`--tool-choice`).
    pub tool_choice: Option<String>,
    /// The model's context window in tokens (`--context-window`).
    pub context_window: Option<u64>,
    /// Leave out the project's AGENTS.md files (`--no-project-doc`).
    pub no_project_doc: bool,
    /// Seconds to wait for a response's first byte (`--model-first-byte-timeout`).
    pub model_first_byte_timeout: Option<u64>,
    /// Seconds a stream may stay silent (`--model-idle-timeout`).
    pub model_idle_timeout: Option<u64>,
    /// Seconds a whole response may take (`--model-total-timeout`).
    pub model_total_timeout: Option<u64>,
    /// The config file; the platform's default when empty (`--config`).
    pub config: Option<PathBuf>,
    /// Start as a copy of this session, `SESSION[:TURN]` (`--fork`).
    pub fork: Option<String>,
}
