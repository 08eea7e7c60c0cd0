//! Shared fixture: a temporary workspace and the built-in tools, called as the executor would.

mod apply_patch;
mod ask_user;
mod bash;
// The code sandbox and its tool exist only with the feature.
#[cfg(feature = "execute-code")]
mod code;
mod denied;
mod edit_file;
#[cfg(feature = "execute-code")]
mod execute_code;
mod file_system;
mod glob;
mod grep;
mod job;
mod list_dir;
mod observer;
mod permission;
mod preview;
mod read_file;
mod secrets;
mod specs;
mod uppercase;
mod view_image;
mod web_fetch;
mod web_search;
mod write_file;

use std::{path::Path, sync::Arc};

use agent_core::{Tool, ToolContext};
use agent_tools::{BuiltinConfig, FileTracker, builtin_with_tracker};

/// Whether `out` is the observation of a sandbox this machine cannot enforce. The skip goes through
/// the one skip helper, so it shows in a passing run and fails under `AGENT_NO_SKIP`.
pub(crate) fn sandbox_missing(out: &str) -> bool {
    let missing = out.contains("\"error\":\"sandbox_unavailable\"");
    if missing {
        agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {out}"));
    }
    missing
}

/// A temporary workspace with the built-in tools sharing one tracker.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) tracker: Arc<FileTracker>,
    /// The boundary calls get; a plain workspace with no allow rules when `None`.
    pub(crate) boundary: Option<Arc<dyn agent_core::Boundary>>,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Self::with_config(BuiltinConfig::default())
    }

    pub(crate) fn with_config(config: BuiltinConfig) -> Self {
        Self::with_config_in(config, tempfile::tempdir().expect("tempdir"))
    }

    /// Like [`Fixture::with_config`], in a workspace directory made beforehand.
    pub(crate) fn with_config_in(config: BuiltinConfig, dir: tempfile::TempDir) -> Self {
        let tracker = FileTracker::new();
        let tools = builtin_with_tracker(&config, tracker.clone()).expect("tools build");
        Self { dir, tools, tracker, boundary: None }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating parents) straight to disk, as the user or another program would.
    pub(crate) fn put(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    pub(crate) fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root().join(rel)).unwrap()
    }

    pub(crate) fn get_text(&self, rel: &str) -> String {
        String::from_utf8(self.get(rel)).unwrap()
    }

    /// Calls a tool through `prepare` and `run` and returns what the model would read: the output
    /// text, or the error observation. Temporary paths are redacted as `[WS]`.
    pub(crate) async fn call(&self, name: &str, args: serde_json::Value) -> String {
        self.call_result(name, args).await.unwrap_or_else(|err| err)
    }

    /// The workspace boundary of the fixture: the one set in `boundary`, else a workspace with no
    /// allow rules.
    pub(crate) fn boundary(&self) -> Arc<dyn agent_core::Boundary> {
        match &self.boundary {
            Some(boundary) => Arc::clone(boundary),
            None => Arc::new(agent_exec::Workspace::new(self.root()).unwrap()),
        }
    }

    /// Like [`Fixture::call`], keeping success and failure apart.
    pub(crate) async fn call_result(
        &self,
        name: &str,
        args: serde_json::Value,
    ) -> Result<String, String> {
        let tool = self.tools.iter().find(|t| t.spec().name == name).expect("tool exists");
        let redact = |text: String| {
            let root = std::fs::canonicalize(self.root()).unwrap();
            text.replace(&root.display().to_string(), "[WS]")
                .replace(&self.root().display().to_string(), "[WS]")
        };
        let prepared = match tool.prepare(&args.to_string()) {
            Ok(prepared) => prepared,
            Err(err) => return Err(redact(agent_core::ToolError::from(err).observation())),
        };
        let ctx = ToolContext::new(self.boundary(), "session".into(), "call_1");
        match tool.run(prepared, ctx).await {
            Ok(output) => Ok(redact(output.text)),
            Err(err) => Err(redact(err.observation())),
        }
    }
}
