//! Shared helpers: finding the Python peer, skipping honestly without it, an executor over its
//! tools, and waiting for a marker file with a deadline.

// Tests start the Python peer as a plain process, outside any sandbox, and fail by panicking.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

mod client;
mod conformance;
mod eras;
mod hostile;
mod serve;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use agent_exec::{AgentBuilder, Executor, PermissionMode};
use agent_mcp::{McpSession, McpTools, ServerConfig, ServerEnv};

/// The Python of the venv holding the `mcp` SDK, or `None` after saying the test is skipped
/// (a failure under `AGENT_NO_SKIP`, so a lost peer cannot pass silently).
pub(crate) fn python() -> Option<PathBuf> {
    agent_test_support::mcp_python()
}

/// A script of `tests/peers/`.
pub(crate) fn peer(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

/// The Python SDK server as the one server `py`, writing its markers into `markers`; `tune`
/// adjusts its configuration (timeouts, trust).
pub(crate) fn py_server(
    python: &Path,
    markers: &Path,
    tune: impl FnOnce(&mut ServerConfig),
) -> ServerConfig {
    let script = peer("py_server.py").display().to_string();
    let args = vec![script, "--marker-dir".to_owned(), markers.display().to_string()];
    let mut config = ServerConfig::stdio(python.display().to_string(), args);
    // A loaded 2-core machine running every suite may take many seconds to start Python.
    config.startup_timeout_sec = 120.0;
    tune(&mut config);
    config
}

/// An executor over `configs`' tools, every server started (or failed), in `mode`; the problems
/// the servers reported come back beside it.
pub(crate) async fn executor(
    workspace: &Path,
    configs: BTreeMap<String, ServerConfig>,
    mode: PermissionMode,
) -> (Executor, Arc<std::sync::Mutex<Vec<String>>>) {
    let problems = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&problems);
    let env = ServerEnv { workspace: workspace.to_path_buf(), session_dir: None };
    let session = McpSession::new(&configs, env).unwrap();
    let tools =
        McpTools::start(session, move |problem| sink.lock().unwrap().push(problem.to_owned()));
    tools.wait_all().await;
    let executor = AgentBuilder::new(workspace)
        .late_tools(tools)
        .permission_mode(mode)
        .build_executor()
        .unwrap();
    executor.refresh_late_tools().await;
    (executor, problems)
}

/// Waits until `path` exists, for at most `limit`; whether it appeared.
pub(crate) async fn appears(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    path.exists()
}
