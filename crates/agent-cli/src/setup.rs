//! The CLI's door to agent-session: each front end (`exec`, the REPL, `acp`, `serve`) describes
//! the session it wants here and gets the one session agent-session assembles, with the
//! terminal as its front end and configuration problems turned into exit codes.

use std::{
    io::{BufRead, IsTerminal, Write},
    path::PathBuf,
    process::ExitCode,
    sync::Arc,
};

use agent_exec::{Approver, PermissionMode};
use agent_session::{Error, Frontend, hooks::Trust};
pub(crate) use agent_session::{Session, StoppedByHook};

use crate::{Options, terminal::visible};

/// How a front end wants its session built.
pub(crate) struct Launch<'a> {
    /// Continue this session id.
    pub(crate) resume: Option<&'a str>,
    /// Play this recorded transcript back instead of calling a model.
    pub(crate) replay: Option<PathBuf>,
    /// The permission mode when neither a flag nor the profile names one.
    pub(crate) default_mode: PermissionMode,
    /// Who answers approval prompts; `None` denies every call that would ask.
    pub(crate) approver: Option<Arc<dyn Approver>>,
    /// Who answers the model's questions (`ask_user`); `None` keeps the tool out of the list.
    pub(crate) asker: Option<Arc<dyn agent_exec::ask::Asker>>,
    /// Whether the user may be asked to trust the project's hooks.
    pub(crate) trust: Trust,
    /// MCP servers the front end adds to the configured ones (an ACP client's), by name.
    pub(crate) mcp_servers: Vec<(String, agent_mcp::ServerConfig)>,
}

/// Opens the session `launch` describes with the options' configuration, or the exit code of a
/// configuration problem already explained on stderr.
pub(crate) fn open(
    options: &Options,
    launch: Launch<'_>,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Result<Session, ExitCode>> {
    let launch = agent_session::Launch {
        resume: launch.resume,
        replay: launch.replay,
        default_mode: launch.default_mode,
        approver: launch.approver,
        asker: launch.asker,
        trust: launch.trust,
        frontend: Arc::new(Terminal),
        mcp_servers: launch.mcp_servers,
    };
    match Session::open(&options.overrides(), launch, runtime) {
        Ok(session) => Ok(Ok(session)),
        Err(err @ (Error::NoProvider | Error::RequiredServer)) => {
            eprintln!("agent: {err}");
            Ok(Err(ExitCode::from(2)))
        }
        Err(err) => Err(err.into()),
    }
}

/// A single-threaded async runtime: the agent's own work is light, tools run in processes.
pub(crate) fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(agent_session::tokio_runtime()?)
}

/// The terminal as a session's front end: notices on stderr, questions answered on stdin when
/// it is a terminal.
pub(crate) struct Terminal;

impl Frontend for Terminal {
    fn say(&self, message: &str) {
        eprintln!("agent: {}", visible(message));
    }

    fn can_ask(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn confirm(&self, lines: &[String], question: &str) -> bool {
        if let Some((first, rest)) = lines.split_first() {
            eprintln!("agent: {first}");
            for line in rest {
                eprintln!("{line}");
            }
        }
        eprint!("{question} [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            return false;
        }
        matches!(answer.trim(), "y" | "Y" | "yes")
    }
}
