//! The server's open sessions: each with its event journal, its pending approvals, the door to
//! its thread, and whether a prompt runs. Bounded in number (docs/limits.md).

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use agent_core::CancellationToken;
use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{
    api::{CreateSession, Problem, SessionInfo},
    approvals::Approvals,
    door::{self, Door, Opened},
    journal::Journal,
    questions::Questions,
};
use crate::Options;

/// The most sessions open at once, unless `--max-sessions` says otherwise (docs/limits.md).
pub(crate) const MAX_SESSIONS: u16 = 64;
/// The most event streams one session serves at once (docs/limits.md).
pub(crate) const MAX_STREAMS: usize = 8;

/// Why a request was not carried out: each becomes an HTTP status and a [`Problem`].
#[derive(Debug)]
pub(crate) enum Refusal {
    /// 400: the request itself is wrong.
    Bad(String),
    /// 404: no such session (or approval).
    NotFound(String),
    /// 409: the session is busy, or already open.
    Conflict(String),
    /// 410: the events asked for are no longer kept.
    Gone(String),
    /// 422: the session could not be opened as asked.
    Unopened(String),
    /// 429: a bound of docs/limits.md was reached.
    Full(String),
    /// 500: a failure of ours.
    Failed(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, error) = match self {
            Self::Bad(error) => (StatusCode::BAD_REQUEST, error),
            Self::NotFound(error) => (StatusCode::NOT_FOUND, error),
            Self::Conflict(error) => (StatusCode::CONFLICT, error),
            Self::Gone(error) => (StatusCode::GONE, error),
            Self::Unopened(error) => (StatusCode::UNPROCESSABLE_ENTITY, error),
            Self::Full(error) => (StatusCode::TOO_MANY_REQUESTS, error),
            Self::Failed(error) => (StatusCode::INTERNAL_SERVER_ERROR, error),
        };
        (status, axum::Json(Problem { error })).into_response()
    }
}

/// One open session.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) opened: Opened,
    /// What it was opened with (a fork opens with the same).
    options: Options,
    pub(crate) journal: Arc<Journal>,
    pub(crate) approvals: Arc<Approvals>,
    /// The model's questions waiting for an answer.
    pub(crate) questions: Arc<Questions>,
    door: Door,
    busy: Arc<AtomicBool>,
    cancel: Mutex<CancellationToken>,
    /// Event streams open now.
    pub(crate) streams: AtomicUsize,
}

impl Live {
    pub(crate) fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.opened.id.clone(),
            workspace: self.opened.workspace.display().to_string(),
            model: self.opened.model.clone(),
            permission_mode: self.opened.mode.clone(),
            busy: self.busy.load(Ordering::SeqCst),
            last_event_id: self.journal.last_id(),
        }
    }

    /// Starts a prompt; returns the id of the last event before it.
    pub(crate) fn prompt(&self, text: String) -> Result<u64, Refusal> {
        let claim = self.claim()?;
        let after = self.journal.last_id();
        let cancel = CancellationToken::new();
        *self.cancel.lock().unwrap_or_else(PoisonError::into_inner) = cancel.clone();
        if !self.door.prompt(text, cancel) {
            return Err(Refusal::Failed("the session has ended".to_owned()));
        }
        claim.hand_over();
        Ok(after)
    }

    /// Cancels the running prompt, if any: its model request and tools stop.
    pub(crate) fn cancel(&self) {
        self.cancel.lock().unwrap_or_else(PoisonError::into_inner).cancel();
    }

    /// Marks the session busy for as long as the returned claim lives; refused when a prompt
    /// (or another claim) holds it.
    pub(crate) fn claim(&self) -> Result<Claim<'_>, Refusal> {
        self.busy
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .map(|_| Claim(&self.busy))
            .map_err(|_| Refusal::Conflict(format!("session {} is busy", self.opened.id)))
    }
}

/// The session held busy (an undo, a fork, a prompt being handed over).
pub(crate) struct Claim<'a>(&'a AtomicBool);

impl Claim<'_> {
    /// Leaves the session busy: the session's thread clears the flag when the prompt has run.
    fn hand_over(self) {
        std::mem::forget(self);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Every open session of the server.
#[derive(Debug)]
pub(crate) struct Hub {
    options: Options,
    max: usize,
    sessions: Mutex<BTreeMap<String, Arc<Live>>>,
    /// Sessions being opened, counted against the bound.
    opening: AtomicUsize,
}

/// A slot taken against the session bound while a session opens.
struct Opening<'a>(&'a AtomicUsize);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Hub {
    pub(crate) fn new(mut options: Options, max: usize) -> Self {
        // `agent --fork X serve` must not fork every session; forks are asked for one by one.
        options.fork = None;
        Self { options, max, sessions: Mutex::default(), opening: AtomicUsize::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Live>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, id: &str) -> Result<Arc<Live>, Refusal> {
        self.lock()
            .get(id)
            .cloned()
            .ok_or_else(|| Refusal::NotFound(format!("no open session {id}")))
    }

    pub(crate) fn list(&self) -> Vec<Arc<Live>> {
        self.lock().values().cloned().collect()
    }

    /// Opens a session as asked.
    pub(crate) async fn create(&self, request: CreateSession) -> Result<Arc<Live>, Refusal> {
        let workspace = PathBuf::from(&request.workspace);
        if !workspace.is_absolute() {
            return Err(Refusal::Bad("the workspace must be an absolute path".to_owned()));
        }
        let workspace =
            workspace.canonicalize().ok().filter(|path| path.is_dir()).ok_or_else(|| {
                Refusal::Bad(format!("the workspace {} is not a directory", request.workspace))
            })?;
        if let Some(id) = &request.resume
            && self.lock().contains_key(id)
        {
            return Err(Refusal::Conflict(format!("session {id} is already open here")));
        }
        let mut options = self.options.clone();
        options.workspace = Some(workspace);
        if request.profile.is_some() {
            options.profile = request.profile;
        }
        if let Some(mode) = request.permission_mode {
            options.permission_mode = Some(mode.into());
        }
        self.open(options, request.resume).await
    }

    /// Opens a new session whose history is `live`'s up to the end of `turn`.
    pub(crate) async fn fork(&self, live: &Live, turn: Option<u32>) -> Result<Arc<Live>, Refusal> {
        let _idle = live.claim()?;
        // The same workspace, profile and mode as the original.
        let mut options = live.options.clone();
        options.fork = Some(match turn {
            Some(turn) => format!("{}:{turn}", live.opened.id),
            None => live.opened.id.clone(),
        });
        self.open(options, None).await
    }

    async fn open(&self, options: Options, resume: Option<String>) -> Result<Arc<Live>, Refusal> {
        let _slot = {
            let sessions = self.lock();
            if sessions.len() + self.opening.load(Ordering::SeqCst) >= self.max {
                return Err(Refusal::Full(format!(
                    "{} sessions are open, the most this server keeps (--max-sessions); close one",
                    self.max
                )));
            }
            self.opening.fetch_add(1, Ordering::SeqCst);
            Opening(&self.opening)
        };
        let journal = Arc::new(Journal::default());
        let approvals = Approvals::new(journal.clone());
        let questions = Questions::new(journal.clone());
        let busy = Arc::new(AtomicBool::new(false));
        let people = door::People { approver: approvals.clone(), asker: questions.clone() };
        let opened =
            door::open(options.clone(), resume, journal.clone(), people, busy.clone()).await;
        let (opened, door) = opened.map_err(|failed| Refusal::Unopened(failed.0))?;
        let live = Arc::new(Live {
            opened,
            options,
            journal,
            approvals,
            questions,
            door,
            busy,
            cancel: Mutex::new(CancellationToken::new()),
            streams: AtomicUsize::new(0),
        });
        self.lock().insert(live.opened.id.clone(), live.clone());
        Ok(live)
    }

    /// Closes a session: its prompt is cancelled, then it ends as `session/close` ends one.
    pub(crate) async fn close(&self, id: &str) -> Result<(), Refusal> {
        let live = self
            .lock()
            .remove(id)
            .ok_or_else(|| Refusal::NotFound(format!("no open session {id}")))?;
        live.cancel();
        live.door.close().await;
        Ok(())
    }

    /// Closes every session (the server is stopping).
    pub(crate) async fn close_all(&self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            let _ = self.close(&id).await;
        }
    }
}
