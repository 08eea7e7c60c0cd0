//! What the protocol side needs from the program that builds sessions (the `agent` binary).

use std::{path::PathBuf, sync::Arc};

use agent_core::{BoxFuture, CancellationToken, Item};
use agent_exec::{
    Approver, PermissionMode,
    agent::{AgentEvent, Finish},
};

use crate::Error;

/// Builds and finds sessions: the binary implements it with its own configuration, so a session
/// opened from an editor is the one `agent exec` or the REPL would build in that directory.
pub trait Host: Send + Sync + 'static {
    /// Opens a new session, or an existing one from its files (`session/load`, `session/resume`).
    fn open(&self, open: Open) -> BoxFuture<'static, Result<Box<dyn HostSession>, Error>>;

    /// The sessions stored for `cwd` (every directory's when `None`), newest first.
    fn list(&self, cwd: Option<PathBuf>) -> Result<Vec<Listed>, Error>;

    /// The models a session may switch to, the configured one first; empty when a session's
    /// model cannot be switched (a replayed transcript plays the model).
    fn models(&self) -> Vec<String>;
}

/// How a session is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opening {
    /// A new session.
    New,
    /// An existing session, its history replayed to the client (`session/load`).
    Load(String),
    /// An existing session, without replay (`session/resume`).
    Resume(String),
}

/// Everything a new session is built from.
pub struct Open {
    /// New, load or resume.
    pub opening: Opening,
    /// The client's working directory: the session's workspace.
    pub cwd: PathBuf,
    /// The MCP servers the client passes, started like the configured ones.
    pub mcp_servers: Vec<ClientMcpServer>,
    /// Who answers when the policy asks: the client, through `session/request_permission`.
    pub approver: Arc<dyn Approver>,
    /// Who answers the model's questions (`ask_user`): the client, through a form or
    /// `session/request_permission`.
    pub asker: Arc<dyn agent_exec::ask::Asker>,
    /// Where the file tools read and write: the client's file system when it offers one
    /// (`fs/read_text_file` and `fs/write_text_file`), else `None`, the disk.
    pub files: Option<Arc<dyn agent_core::FileSystem>>,
}

/// An MCP server the client asks the session to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMcpServer {
    /// A server started as a child process that speaks over its stdio.
    Stdio {
        /// Its name (the prefix of its tools).
        name: String,
        /// The program.
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP server.
    Http {
        /// Its name.
        name: String,
        /// Its URL.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

/// A stored session, as `session/list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The session id (its folder's name).
    pub id: String,
    /// The workspace it ran in.
    pub cwd: PathBuf,
    /// Its first prompt, shortened, when it has one.
    pub title: Option<String>,
    /// When it last changed, RFC 3339.
    pub updated_at: Option<String>,
}

/// One open session, as the protocol side drives it.
pub trait HostSession: Send {
    /// Its id, which is also the ACP session id.
    fn id(&self) -> String;

    /// The workspace root.
    fn workspace(&self) -> PathBuf;

    /// The conversation so far (for `session/load`'s replay).
    fn history(&self) -> Vec<Item>;

    /// Runs one prompt to its end, recording it in the session's files; `cancel` stops it.
    fn prompt<'a>(
        &'a mut self,
        text: String,
        cancel: &'a CancellationToken,
        on_event: &'a mut (dyn FnMut(&AgentEvent) + Send),
    ) -> BoxFuture<'a, Result<Finish, Error>>;

    /// The permission mode.
    fn mode(&self) -> PermissionMode;

    /// Changes the permission mode from the next call on.
    fn set_mode(&mut self, mode: PermissionMode);

    /// The model's name.
    fn model(&self) -> String;

    /// Switches the model from the next prompt on.
    fn set_model(&mut self, name: &str) -> Result<(), Error>;

    /// The session's plan, which the plan tool (`update_plan`) changes and the client is shown
    /// as `plan` updates; `None` when the session keeps none.
    fn plan(&self) -> Option<Arc<agent_exec::plan::PlanBook>> {
        None
    }

    /// Ends the session when the client closes it or leaves: its background jobs are killed
    /// and its end hooks run, as when the REPL exits.
    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
