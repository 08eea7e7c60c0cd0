//! The servers' lifecycle within a session: one per language and project root, started on
//! demand under the sandbox (read-only but for its cache), restarted after a crash, backed off
//! after a failed start, and off for the session after repeated failures.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Instant,
};

use agent_sandbox::sandbox::{Limits, SandboxConfig, SandboxPolicy};

use super::{LspSession, Slot};
use crate::{
    LspError,
    config::ServerConfig,
    server::{Launch, Server},
};

impl LspSession {
    /// The running server for `path`'s language and project, started (or restarted after its
    /// backoff) when needed.
    pub(super) async fn server(
        &self,
        config: &ServerConfig,
        path: &Path,
    ) -> Result<Arc<Server>, LspError> {
        let root = self.project_root(config, path);
        let key = (config.language.clone(), root.clone());
        loop {
            let mut servers = self.inner.servers.lock().await;
            let (failures, generation) = match servers.get_mut(&key) {
                Some(Slot::Running(server, _)) if server.is_alive() => return Ok(server.clone()),
                Some(Slot::Running(server, failures)) => {
                    // It died since the last edit: a failure like a failed start. The first
                    // restart after a crash is at once; failed starts back off.
                    let (generation, failures) = (server.generation, *failures);
                    server.kill();
                    (self.failed_once(&mut servers, &key, failures, generation), generation)
                }
                Some(Slot::Off { noticed }) => {
                    let notice = !*noticed;
                    *noticed = true;
                    return Err(LspError::Off { notice, reason: self.off_reason(config) });
                }
                Some(Slot::Backoff { failures, until, generation }) => {
                    if Instant::now() < *until {
                        let wait = *until - Instant::now();
                        drop(servers);
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    (*failures, *generation)
                }
                None => (0, 0),
            };
            if let Some(Slot::Off { .. }) = servers.get(&key) {
                continue;
            }
            match self.start(config, &root, generation + 1).await {
                Ok(server) if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) => {
                    server.kill();
                    return Err(LspError::Gone);
                }
                Ok(server) => {
                    servers.insert(key, Slot::Running(server.clone(), failures));
                    return Ok(server);
                }
                Err(err) => {
                    tracing::warn!(server = config.program(), error = %err, "language server failed to start");
                    self.failed_once(&mut servers, &key, failures, generation + 1);
                }
            }
        }
    }

    /// Records one more failure of `key`: a backoff, or off for the session.
    fn failed_once(
        &self,
        servers: &mut HashMap<(String, PathBuf), Slot>,
        key: &(String, PathBuf),
        failures: u32,
        generation: u64,
    ) -> u32 {
        let failures = failures + 1;
        let slot = if failures >= self.inner.config.max_failures {
            Slot::Off { noticed: false }
        } else {
            let delay = self.inner.config.backoff * 2u32.saturating_pow(failures - 1);
            Slot::Backoff { failures, until: Instant::now() + delay, generation }
        };
        servers.insert(key.clone(), slot);
        failures
    }

    fn off_reason(&self, config: &ServerConfig) -> String {
        format!(
            "{} failed {} times; diagnostics for {} are off for this session",
            config.program(),
            self.inner.config.max_failures,
            config.language
        )
    }

    /// Starts each of the session's servers once at the workspace root, completes its
    /// `initialize` handshake within the start timeout and kills it again: what `agent doctor`
    /// checks. One result per server, in the configuration's order.
    pub async fn try_servers(&self) -> Vec<(ServerConfig, Result<(), LspError>)> {
        let mut results = Vec::new();
        for config in &self.inner.config.servers {
            let started = self.start(config, &self.inner.root, 0).await;
            results.push((config.clone(), started.map(|server| server.kill())));
        }
        results
    }

    async fn start(
        &self,
        config: &ServerConfig,
        root: &Path,
        generation: u64,
    ) -> Result<Arc<Server>, LspError> {
        let inner = &self.inner;
        let cache = inner.cache.join(&config.language);
        let temp = cache.join("tmp");
        std::fs::create_dir_all(&temp)
            .map_err(|err| LspError::Start(format!("cache directory: {err}")))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(cache.join("server.log"))
            .map_err(|err| LspError::Start(format!("log file: {err}")))?;
        // Read-only everywhere but its own cache: the sandbox's "workspace" is the cache.
        let mut sandbox = SandboxConfig::new(&cache).with_policy(SandboxPolicy::WorkspaceWrite);
        sandbox.temp_dir = Some(temp);
        sandbox.limits = Limits {
            // A server lives as long as the session; CPU seconds would end it for working.
            cpu_seconds: None,
            address_space_bytes: Some(inner.config.max_memory_bytes),
            file_size_bytes: Some(1 << 30),
            processes: Some(inner.config.max_processes),
        };
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
        let home = env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| PathBuf::from(v));
        sandbox.hide = Some(inner.secrets.to_hide(Some(&inner.root), home.as_deref()));
        env.retain(|(k, _)| k != "XDG_CACHE_HOME");
        env.push(("XDG_CACHE_HOME".into(), cache.clone().into()));
        let launch = Launch {
            sandbox,
            env,
            log,
            max_message_bytes: inner.config.max_message_bytes,
            timeout: inner.config.start_timeout,
            generation,
        };
        Server::start(config, root, launch).await
    }

    /// The nearest directory above `path`, up to the workspace root, holding a root marker.
    fn project_root(&self, config: &ServerConfig, path: &Path) -> PathBuf {
        let root = &self.inner.root;
        let mut dir = path.parent();
        while let Some(current) = dir.filter(|d| d.starts_with(root)) {
            if config.root_markers.iter().any(|marker| current.join(marker).exists()) {
                return current.to_path_buf();
            }
            dir = current.parent();
        }
        root.clone()
    }
}
