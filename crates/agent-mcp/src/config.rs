//! The `[mcp_servers.NAME]` tables: how to reach one server and how far to trust it.
//!
//! The keys are the ones Codex users know (`command`, `args`, `env`, `cwd` for stdio; `url`,
//! `bearer_token_env_var`, `http_headers` for streamable HTTP; the timeouts, `enabled`,
//! `enabled_tools`, `disabled_tools`), plus `trust` and `tool_max_sec` of our own.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use serde::{Deserialize, Serialize};

use crate::protocol::Protocol;

/// One configured server. Unknown keys are errors, so a typo never silently falls back.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program of a stdio server (looked up in `PATH`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to its environment (which otherwise is ours minus secrets).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Its working directory; the workspace when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The variable holding the bearer token sent to `url` (the token never goes in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// Headers sent with every HTTP request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub http_headers: BTreeMap<String, String>,
    /// How long the server may take to start and answer `initialize` and `tools/list`.
    #[serde(default = "default_startup", skip_serializing_if = "is_default_startup")]
    pub startup_timeout_sec: f64,
    /// How long a call may go without a response or a progress notification.
    #[serde(default = "default_tool", skip_serializing_if = "is_default_tool")]
    pub tool_timeout_sec: f64,
    /// The absolute cap of one call, however much progress it reports.
    #[serde(default = "default_max", skip_serializing_if = "is_default_max")]
    pub tool_max_sec: f64,
    /// `false` keeps the server configured but not started.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// Offer only these tools of the server (by the server's own names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Never offer these tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// Wait for this server before the first model request, and do not start the session when
    /// it fails (as Codex's `required`). Off by default: no request waits for a server.
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Believe the server's `readOnlyHint`: such calls then run without asking, like built-in
    /// reads. Off by default, since a hint is only the server's word.
    #[serde(default, skip_serializing_if = "is_false")]
    pub trust: bool,
    /// Which MCP revision to speak: `auto` (probe with `server/discover`, fall back to
    /// `initialize` naming 2025-11-25), `2026-07-28` or `2025-11-25` only.
    #[serde(default, skip_serializing_if = "Protocol::is_auto")]
    pub protocol: Protocol,
}

const DEFAULT_STARTUP_SECS: f64 = 10.0;
/// The longest time limit a server's table may set, in seconds.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;
const DEFAULT_TOOL_SECS: f64 = 60.0;
const DEFAULT_MAX_SECS: f64 = 600.0;

fn default_startup() -> f64 {
    DEFAULT_STARTUP_SECS
}
fn default_tool() -> f64 {
    DEFAULT_TOOL_SECS
}
fn default_max() -> f64 {
    DEFAULT_MAX_SECS
}
fn yes() -> bool {
    true
}
fn is_default_startup(secs: &f64) -> bool {
    *secs == DEFAULT_STARTUP_SECS
}
fn is_default_tool(secs: &f64) -> bool {
    *secs == DEFAULT_TOOL_SECS
}
fn is_default_max(secs: &f64) -> bool {
    *secs == DEFAULT_MAX_SECS
}
fn is_true(value: &bool) -> bool {
    *value
}
fn is_false(value: &bool) -> bool {
    !*value
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// A child process speaking JSON-RPC over its stdin and stdout.
    Stdio,
    /// Streamable HTTP at a URL.
    Http,
}

/// A server table that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither or both of `command` and `url`.
    #[error(
        "mcp server `{server}`: set exactly one of `command` (stdio) and `url` (streamable http)"
    )]
    Transport {
        /// The server's name.
        server: String,
    },
    /// A timeout that is not a positive number of seconds.
    #[error(
        "mcp server `{server}`: `{key}` must be a number of seconds above 0 and at most {}",
        MAX_TIMEOUT_SECS
    )]
    Timeout {
        /// The server's name.
        server: String,
        /// The key.
        key: &'static str,
    },
    /// A server name that cannot be part of a tool name.
    #[error("mcp server name `{server}` may use only letters, digits, `_` and `-`, and no `__`")]
    Name {
        /// The server's name.
        server: String,
    },
}

impl ServerConfig {
    /// A stdio server running `command` with `args`, everything else at its default.
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> Self {
        Self { command: Some(command.into()), args, ..Self::empty() }
    }

    /// A streamable HTTP server at `url`, everything else at its default.
    pub fn http(url: impl Into<String>) -> Self {
        Self { url: Some(url.into()), ..Self::empty() }
    }

    fn empty() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            bearer_token_env_var: None,
            http_headers: BTreeMap::new(),
            startup_timeout_sec: DEFAULT_STARTUP_SECS,
            tool_timeout_sec: DEFAULT_TOOL_SECS,
            tool_max_sec: DEFAULT_MAX_SECS,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            required: false,
            trust: false,
            protocol: Protocol::Auto,
        }
    }

    /// Checks the table as a whole and says how the server is reached.
    pub fn check(&self, server: &str) -> Result<TransportKind, ConfigError> {
        let valid_name = !server.is_empty()
            && !server.contains("__")
            && server.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(ConfigError::Name { server: server.to_owned() });
        }
        for (key, secs) in [
            ("startup_timeout_sec", self.startup_timeout_sec),
            ("tool_timeout_sec", self.tool_timeout_sec),
            ("tool_max_sec", self.tool_max_sec),
        ] {
            // A day at most: a longer limit is a mistake, and a deadline must stay an instant.
            if !(secs.is_finite() && secs > 0.0 && secs <= MAX_TIMEOUT_SECS) {
                return Err(ConfigError::Timeout { server: server.to_owned(), key });
            }
        }
        match (&self.command, &self.url) {
            (Some(_), None) => Ok(TransportKind::Stdio),
            (None, Some(_)) => Ok(TransportKind::Http),
            _ => Err(ConfigError::Transport { server: server.to_owned() }),
        }
    }

    /// Whether the server's tool `name` is offered, after `enabled_tools` and `disabled_tools`.
    pub fn offers(&self, name: &str) -> bool {
        let enabled = self.enabled_tools.as_ref().is_none_or(|list| list.iter().any(|n| n == name));
        enabled && !self.disabled_tools.iter().any(|n| n == name)
    }

    pub(crate) fn startup_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.startup_timeout_sec)
    }

    pub(crate) fn tool_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.tool_timeout_sec)
    }

    /// The absolute cap of one call: the executor's time limit for this server's tools.
    pub fn tool_max(&self) -> Duration {
        Duration::from_secs_f64(self.tool_max_sec.max(self.tool_timeout_sec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, toml_like: serde_json::Value, expect: &str) {
        let got = match serde_json::from_value::<ServerConfig>(toml_like) {
            Ok(config) => match config.check(name) {
                Ok(kind) => format!("{kind:?}"),
                Err(err) => err.to_string(),
            },
            Err(err) => format!("parse: {err}"),
        };
        assert!(got.contains(expect), "{got}");
    }

    #[test]
    fn a_table_names_one_transport() {
        use serde_json::json;
        check("everything", json!({"command": "npx", "args": ["x"]}), "Stdio");
        check("remote", json!({"url": "http://127.0.0.1:1/mcp"}), "Http");
        check("both", json!({"command": "x", "url": "http://h/mcp"}), "exactly one of");
        check("none", json!({}), "exactly one of");
        check("typo", json!({"command": "x", "arg": []}), "unknown field `arg`");
        check("a__b", json!({"command": "x"}), "no `__`");
        check("s", json!({"command": "x", "tool_timeout_sec": 0}), "`tool_timeout_sec` must be");
    }

    #[test]
    fn tool_filters() {
        let mut config = ServerConfig::stdio("x", Vec::new());
        assert!(config.offers("echo"));
        config.disabled_tools = vec!["echo".to_owned()];
        assert!(!config.offers("echo"));
        config.enabled_tools = Some(vec!["add".to_owned()]);
        assert!(config.offers("add") && !config.offers("other"));
    }
}
