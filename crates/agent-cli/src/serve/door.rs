//! The session door: the one place where `agent serve` builds and drives a session, exactly as
//! `agent exec` and `agent acp` do (`setup::open`, `Session::start`, `Session::prompt_until`),
//! with `JsonStream` turning the loop's events into the `exec --json` schema. Each session lives
//! on a thread of its own with its own single-threaded runtime, since opening a session blocks
//! on that runtime (hooks, required MCP servers) and the agent's futures are not `Send`-bound to
//! the server's runtime.

use std::{
    panic::AssertUnwindSafe,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
};

use agent_core::CancellationToken;
use agent_exec::{Approver, PermissionMode, agent::Finish, jobs::EndPolicy};
use tokio::sync::oneshot;

use super::journal::Journal;
use crate::{
    Options,
    events::{self, ExecEvent, FailReason, JsonStream},
    hooks::Trust,
    setup::{self, Launch},
};

/// What the server keeps of an open session.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub(crate) id: String,
    /// The session's folder (transcript, checkpoints).
    pub(crate) dir: PathBuf,
    pub(crate) transcript: PathBuf,
    pub(crate) workspace: PathBuf,
    pub(crate) model: String,
    pub(crate) mode: String,
}

/// What a session's thread is told to do.
enum Order {
    Prompt { text: String, cancel: CancellationToken },
    Close(oneshot::Sender<()>),
}

/// The way to a session's thread.
#[derive(Debug)]
pub(crate) struct Door {
    orders: mpsc::Sender<Order>,
}

impl std::fmt::Debug for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Prompt { .. } => "Prompt",
            Self::Close(_) => "Close",
        })
    }
}

/// Who answers for the person at the other end of the API: approvals and the model's questions.
pub(crate) struct People {
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) asker: Arc<dyn agent_exec::ask::Asker>,
}

/// A session that did not open, and why (its details are on the server's stderr too).
#[derive(Debug)]
pub(crate) struct NotOpened(pub(crate) String);

/// Opens a session on a thread of its own. `busy` is cleared when a prompt has ended, just before
/// its last event.
pub(crate) async fn open(
    options: Options,
    resume: Option<String>,
    journal: Arc<Journal>,
    people: People,
    busy: Arc<AtomicBool>,
) -> Result<(Opened, Door), NotOpened> {
    let (reply, opened) = oneshot::channel();
    let (orders, inbox) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("agent-session".to_owned()).spawn(move || {
        let runtime = match setup::tokio_runtime() {
            Ok(runtime) => runtime,
            Err(err) => {
                let _ = reply.send(Err(NotOpened(crate::terminal::error_text(&err))));
                return;
            }
        };
        let launch = Launch {
            resume: resume.as_deref(),
            replay: None,
            // Someone answers over HTTP, as an editor does under `agent acp`.
            default_mode: PermissionMode::Default,
            approver: Some(people.approver),
            asker: Some(people.asker),
            trust: Trust::OnlyTrusted,
            mcp_servers: Vec::new(),
        };
        let mut session = match setup::open(&options, launch, &runtime) {
            Ok(Ok(session)) => session,
            Ok(Err(_)) => {
                let why = "the session could not start (the reason is on the server's stderr)";
                let _ = reply.send(Err(NotOpened(why.to_owned())));
                return;
            }
            Err(err) => {
                let _ = reply.send(Err(NotOpened(crate::terminal::error_text(&err))));
                return;
            }
        };
        let source = if resume.is_some() { "resume" } else { "startup" };
        if let Err(stopped) = runtime.block_on(session.start(source)) {
            let why = format!("a SessionStart hook stopped the session: {}", stopped.0);
            let _ = reply.send(Err(NotOpened(why)));
            return;
        }
        let policy = session.agent.executor().policy();
        let opened = Opened {
            id: session.log.id().to_owned(),
            dir: session.log.dir().to_path_buf(),
            transcript: session.log.transcript().path().to_path_buf(),
            workspace: policy.workspace().root().to_path_buf(),
            model: session.model_name().to_owned(),
            mode: policy.mode().to_string(),
        };
        if reply.send(Ok(opened)).is_err() {
            return;
        }
        serve_orders(&mut session, &runtime, &inbox, &journal, &busy);
    });
    if let Err(err) = spawned {
        return Err(NotOpened(format!("starting the session's thread failed: {err}")));
    }
    match opened.await {
        Ok(result) => result.map(|opened| (opened, Door { orders })),
        Err(_) => Err(NotOpened("the session's thread ended while opening".to_owned())),
    }
}

impl Door {
    /// Starts a prompt; false when the session's thread is gone.
    pub(crate) fn prompt(&self, text: String, cancel: CancellationToken) -> bool {
        self.orders.send(Order::Prompt { text, cancel }).is_ok()
    }

    /// Ends the session's jobs, runs its `SessionEnd` hooks, stops its MCP servers and its
    /// thread; resolves when all that is done.
    pub(crate) async fn close(&self) {
        let (done, finished) = oneshot::channel();
        if self.orders.send(Order::Close(done)).is_ok() {
            let _ = finished.await;
        }
    }
}

/// Runs the session's orders until it is closed or the server drops its door.
fn serve_orders(
    session: &mut setup::Session,
    runtime: &tokio::runtime::Runtime,
    inbox: &mpsc::Receiver<Order>,
    journal: &Journal,
    busy: &AtomicBool,
) {
    let mut closed = None;
    while let Ok(order) = inbox.recv() {
        match order {
            Order::Prompt { text, cancel } => {
                if !run_prompt(session, runtime, journal, busy, text, &cancel) {
                    break;
                }
            }
            Order::Close(done) => {
                closed = Some(done);
                break;
            }
        }
    }
    runtime.block_on(async {
        let _ = session.end_jobs(EndPolicy::Kill).await;
        session.end("exit").await;
        // The server lives on to serve other sessions: nothing of this one may.
        session.stop_mcp().await;
    });
    journal.close();
    if let Some(done) = closed {
        let _ = done.send(());
    }
}

/// Runs one prompt, its events into the journal as `exec --json` writes them; false when it
/// panicked, which ends the session (its state is no longer known).
fn run_prompt(
    session: &mut setup::Session,
    runtime: &tokio::runtime::Runtime,
    journal: &Journal,
    busy: &AtomicBool,
    text: String,
    cancel: &CancellationToken,
) -> bool {
    let mut stream = JsonStream::default();
    journal.push(&ExecEvent::RunStarted {
        schema_version: events::SCHEMA_VERSION,
        session_id: session.log.id().to_owned(),
        model: session.agent.model().name().to_owned(),
    });
    let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let mut show = |event: &agent_exec::agent::AgentEvent| {
            if let Some(event) = stream.event(event) {
                journal.push(&event);
            }
        };
        runtime.block_on(session.prompt_until(text, cancel, &mut show))
    }));
    // Idle before the last event, so a client that reads it may send the next prompt at once.
    busy.store(false, Ordering::SeqCst);
    match run {
        Ok(Ok(finish)) => {
            journal.push(&stream.finish(&finish, exit_code(&finish)));
            true
        }
        Ok(Err(err)) => {
            let message = crate::terminal::error_text(&err.into());
            journal.push(&stream.failed(FailReason::Error, message, 1));
            true
        }
        Err(_) => {
            let message = "the agent crashed; this is a bug, and the session was closed";
            journal.push(&stream.failed(FailReason::Panic, message.to_owned(), 101));
            false
        }
    }
}

/// The exit code `agent exec` would have ended this run with.
fn exit_code(finish: &Finish) -> u8 {
    match finish {
        Finish::Answered(_) => 0,
        Finish::Cancelled => 130,
        Finish::MaxTurns(_)
        | Finish::ModelError(_)
        | Finish::Stopped(_)
        | Finish::InvalidOutput(_) => 1,
    }
}
