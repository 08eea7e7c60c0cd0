//! The `[lsp]` table: diagnostics after edits (docs/lsp.md). Its bounds, and one table per
//! language (`[lsp.python]`: command, file types, root markers, initialization options) that
//! replaces or adds to the defaults found on `PATH`.

use std::{collections::BTreeMap, path::Path, sync::Arc, time::Duration};

use crate::error::{Context as _, bail};
use agent_lsp::{LspConfig, LspSession, ServerConfig};
use serde::Deserialize;

/// `[lsp]` as written in the config file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LspTable {
    /// `false` turns diagnostics after edits off (default on for the servers configured or
    /// found on `PATH`).
    pub enabled: Option<bool>,
    /// How long an edit waits for its diagnostics, in milliseconds (default 1500).
    pub edit_wait_ms: Option<u64>,
    /// New errors shown per file (default 5).
    pub max_shown: Option<u64>,
    /// Processes alive at once in one server's tree (default 64).
    pub max_processes: Option<u64>,
    /// Virtual address space per server process, in MiB (default 16384).
    pub max_memory_mb: Option<u64>,
    /// One table per language.
    #[serde(flatten)]
    pub languages: BTreeMap<String, ServerConfig>,
}

impl LspTable {
    /// Refuses a value out of range and a language table without a command or file types.
    pub fn check(&self) -> crate::Result<()> {
        for (key, value) in [
            ("lsp.edit_wait_ms", self.edit_wait_ms),
            ("lsp.max_shown", self.max_shown),
            ("lsp.max_processes", self.max_processes),
            ("lsp.max_memory_mb", self.max_memory_mb),
        ] {
            super::check_range(&format!("[lsp] {}", &key[4..]), key, value)?;
        }
        for (language, server) in &self.languages {
            if server.enabled && (server.command.is_empty() || server.file_types.is_empty()) {
                bail!("[lsp.{language}] needs a command and file_types (or enabled = false)");
            }
        }
        Ok(())
    }

    /// The session's language servers for the workspace at `root`; `None` when off or when no
    /// server is configured or found on `PATH`.
    pub fn session(
        &self,
        root: &Path,
        session_dir: Option<&Path>,
    ) -> crate::Result<Option<LspSession>> {
        if self.enabled == Some(false) {
            return Ok(None);
        }
        let mut servers = agent_lsp::defaults(search_path().as_deref());
        for (language, server) in &self.languages {
            servers.retain(|s| s.language != *language);
            servers.push(ServerConfig { language: language.clone(), ..server.clone() });
        }
        servers.retain(|s| s.enabled);
        if servers.is_empty() {
            return Ok(None);
        }
        let defaults = LspConfig::default();
        let config = LspConfig {
            servers,
            wait: self.edit_wait_ms.map_or(defaults.wait, Duration::from_millis),
            max_shown: self.max_shown.map_or(defaults.max_shown, |n| n as usize),
            max_processes: self.max_processes.unwrap_or(defaults.max_processes),
            max_memory_bytes: self.max_memory_mb.map_or(defaults.max_memory_bytes, |mb| mb << 20),
            cache_dir: session_dir.map(|dir| dir.join("lsp")),
            ..defaults
        };
        let session = LspSession::new(config, root, agent_exec::secret::Secrets::default())
            .context("starting the language servers' session")?;
        Ok(Some(session))
    }
}

/// The session as the edit tools' observer.
pub fn observer(session: &LspSession) -> Arc<dyn agent_core::EditObserver> {
    Arc::new(session.clone())
}

/// The directories the default servers are looked for in: `AGENT_LSP_PATH` when set (empty:
/// nowhere, so only the servers the config file names start), else `PATH`. The test suites pin
/// it empty, so what a machine has installed changes neither the tools offered nor the tokens
/// counted; a user can point it at a directory of servers kept apart from the shell's `PATH`.
fn search_path() -> Option<std::ffi::OsString> {
    std::env::var_os("AGENT_LSP_PATH").or_else(|| std::env::var_os("PATH"))
}

#[cfg(test)]
mod tests {
    use crate::config::ConfigFile;

    #[test]
    fn the_example_in_the_lsp_docs_parses() {
        let doc = include_str!("../../../../docs/lsp.md");
        let block =
            doc.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).unwrap();
        let file: ConfigFile = toml::from_str(block).unwrap();
        file.check().unwrap();
        assert_eq!((file.lsp.edit_wait_ms, file.lsp.max_shown), (Some(1500), Some(5)));
        assert_eq!(file.lsp.languages["python"].command[0], "basedpyright-langserver");
        assert!(!file.lsp.languages["rust"].enabled);
        let bad: ConfigFile = toml::from_str("[lsp]\nedit_wait_ms = 10\n").unwrap();
        assert!(
            bad.check()
                .unwrap_err()
                .to_string()
                .contains("[lsp] edit_wait_ms = 10 is out of range")
        );
        let empty: ConfigFile = toml::from_str("[lsp.go]\nfile_types = [\"go\"]\n").unwrap();
        assert!(empty.check().is_err());
    }
}
