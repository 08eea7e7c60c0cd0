//! What every case shares: a workspace, a session over one server, and an edit as the edit
//! tools report it (the file written, then the observer told with its text before).

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use agent_core::EditedFile;
use agent_lsp::{LspConfig, LspSession, ServerConfig};

/// A workspace with a session over one language's server.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) session: LspSession,
    /// The servers' cache (their logs are `<language>/server.log`), removed with the fixture.
    pub(crate) _cache: tempfile::TempDir,
}

/// A server table row.
pub(crate) fn server(language: &str, command: Vec<String>, types: &[&str]) -> ServerConfig {
    ServerConfig {
        language: language.to_owned(),
        command,
        file_types: types.iter().map(|t| (*t).to_owned()).collect(),
        root_markers: Vec::new(),
        initialization_options: None,
        language_ids: Vec::new(),
        enabled: true,
        settle: Duration::ZERO,
    }
}

impl Fixture {
    /// A fixture over `server` with `config`'s bounds.
    pub(crate) fn new(server: ServerConfig, config: LspConfig) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let cache_dir = config.cache_dir.clone().or_else(|| Some(cache.path().to_path_buf()));
        let config = LspConfig { servers: vec![server], cache_dir, ..config };
        let session =
            LspSession::new(config, dir.path(), agent_sandbox::secret::Secrets::default()).unwrap();
        Fixture { dir, session, _cache: cache }
    }

    /// Generous bounds for real servers on a loaded machine: the figures are in the bench.
    pub(crate) fn patient() -> LspConfig {
        LspConfig {
            wait: Duration::from_secs(60),
            give_up: Duration::from_secs(60),
            ..LspConfig::default()
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join(name)
    }

    /// Creates `name` with `text` (as a file that was there before the session).
    pub(crate) fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes `text` to `path` and returns what the observer adds to the edit's observation.
    pub(crate) async fn edit(&self, path: &Path, text: &str) -> String {
        let before = std::fs::read_to_string(path).ok();
        std::fs::write(path, text).unwrap();
        self.session.observe(&[EditedFile::changed(path, before)]).await
    }
}

/// A program of `scripts/peers/lsp/`, or `None` after saying the case is skipped.
#[track_caller]
pub(crate) fn peer_bin(name: &str) -> Option<String> {
    let path = agent_test_support::peer("lsp", &format!("node/node_modules/.bin/{name}"), name)?;
    Some(path.display().to_string())
}

/// The fake server in `mode`.
pub(crate) fn fake(mode: &str) -> ServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/fake_lsp.py");
    server("fake", vec!["python3".into(), script.display().to_string(), mode.into()], &["fk"])
}

/// Whether any process is in group `pgid` that is not a zombie.
pub(crate) fn group_alive(pgid: u32) -> bool {
    agent_test_support::process_group(pgid).iter().any(|member| !member.zombie)
}

/// Waits up to 10 s for `condition`.
pub(crate) async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < until {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition()
}
