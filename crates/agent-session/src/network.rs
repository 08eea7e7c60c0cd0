//! The session's network in the binary: the proxy of allow-list mode (one per session, held by
//! the session's sandbox configuration and dropped with it), what `/status` says, and the
//! decision log on disk (`agent sandbox net-log`).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use agent_exec::{
    network::{NetLog, NetworkMode, ProxyConfig, Resolver, SessionProxy},
    sandbox::NetNamespace,
};

use crate::config::NetworkTable;

/// The file of a session's proxy decisions, in its folder.
pub const LOG_FILE: &str = "net-log.jsonl";

/// Starts a session's proxy inside its `namespace`. Every session has its own namespace, so
/// each needs its own proxy: a port opened in one namespace is not there in another (an ACP
/// client's second session would find nothing at the first one's port).
pub fn start_proxy(
    namespace: &NetNamespace,
    network: &NetworkTable,
    resolver: Resolver,
    session_dir: Option<&Path>,
) -> crate::Result<Arc<SessionProxy>> {
    let dir = match session_dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&dir)?;
    let config = ProxyConfig {
        rules: network.rules(),
        resolver,
        log: NetLog::to_file(Some(dir.join(LOG_FILE))),
        node_preload: Some(dir.join("node-preload.cjs")),
    };
    Ok(Arc::new(SessionProxy::start_in(namespace, config)?))
}

/// `/network`: the refusals so far of the session's `proxy`, each with the command that allows
/// it; with `allow`, the name is allowed for the rest of the session (the config file is not
/// changed).
pub fn repl(proxy: Option<&SessionProxy>, allow: Option<&str>) -> String {
    let Some(proxy) = proxy else {
        return "this session is not in allow-list mode (`--network=allow-list`)".to_owned();
    };
    if let Some(name) = allow.filter(|name| !name.is_empty()) {
        proxy.allow(name);
        return format!(
            "allowed `{name}` for this session; to keep it, add it to [network] allow in the config"
        );
    }
    let refused: Vec<_> = proxy.log().entries().into_iter().filter(|e| !e.allowed).collect();
    if refused.is_empty() {
        return format!(
            "network allow-list: {} (no refusals yet)",
            proxy.rules().allowed().join(", ")
        );
    }
    let mut out = String::from("refused by the session proxy:\n");
    for entry in refused.iter().rev().take(20) {
        out.push_str(&format!(
            "  {}:{}  {}\n    allow it: /network allow {}\n",
            entry.host, entry.port, entry.reason, entry.host
        ));
    }
    out
}

/// The mode in words for `/status` and the banner.
pub fn words(mode: NetworkMode) -> &'static str {
    match mode {
        NetworkMode::Off => "network off",
        NetworkMode::On => "network on",
        NetworkMode::AllowList => "network allow-list",
    }
}

/// The log file of session `id`, or of the newest session with one.
pub fn log_path(id: Option<&str>) -> crate::Result<PathBuf> {
    let root = crate::log::SessionLog::root()?;
    if let Some(id) = id {
        return Ok(root.join(id).join(LOG_FILE));
    }
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let path = entry.path().join(LOG_FILE);
        if let Ok(modified) = std::fs::metadata(&path).and_then(|m| m.modified())
            && newest.as_ref().is_none_or(|(when, _)| modified > *when)
        {
            newest = Some((modified, path));
        }
    }
    newest.map(|(_, path)| path).ok_or_else(|| {
        crate::error::invalid!(
            "no session has a network log yet (one is written in allow-list mode)"
        )
    })
}
