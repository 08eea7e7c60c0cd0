//! [`LspSession`]: the session's language servers, started on demand, restarted with backoff,
//! turned off after repeated failures, and the per-document state that turns each edit into the
//! errors it introduced.
//!
//! An edit's work (start the server, open or change the document, wait for that version's
//! diagnostics) runs on a task of its own; the observation waits for it only up to
//! [`LspConfig::wait`]. A task still running then keeps going, and its report is delivered with
//! the next observation that touches the file. The servers' lifecycle is in [`lifecycle`].

mod disk;
mod lifecycle;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
    time::Instant,
};

use agent_core::{BoxFuture, EditNote, EditObserver, EditedFile};
use agent_sandbox::secret::Secrets;
use ls_types::Uri;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::{
    LspError,
    config::{LspConfig, ServerConfig},
    diff::{self, Delta, Diag},
    report::{self, Cause, FileReport, Outcome},
    server::{Server, Waited},
};

/// The language servers of one session. Cheap to clone; the servers stop when the last clone is
/// dropped (their whole process groups are killed).
#[derive(Clone, Debug)]
pub struct LspSession {
    inner: Arc<Inner>,
    /// Held by the session's users, not by its own tasks: when the last user's clone goes, the
    /// servers are killed even while a task still waits on one.
    _owner: Option<Arc<Owner>>,
}

/// Kills the servers when the session's last user lets go.
#[derive(Debug)]
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        let inner = &self.0;
        inner.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        for (_, task) in inner.waiting.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
            task.abort();
        }
        // A start in progress holds the lock; it sees `closed` when it ends and kills its server.
        if let Ok(mut servers) = inner.servers.try_lock() {
            for slot in servers.values() {
                if let Slot::Running(server, _) = slot {
                    server.kill();
                }
            }
            servers.clear();
        }
    }
}

#[derive(Debug)]
struct Inner {
    config: LspConfig,
    /// The workspace root: the server's root unless a root marker is found below it.
    root: PathBuf,
    secrets: Secrets,
    cache: PathBuf,
    /// Keeps a temporary cache directory alive.
    _temp: Option<tempfile::TempDir>,
    servers: tokio::sync::Mutex<HashMap<(String, PathBuf), Slot>>,
    docs: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<Doc>>>>,
    /// Reports still being worked out after their observation said "pending".
    waiting: Mutex<Vec<(PathBuf, JoinHandle<FileReport>)>>,
    /// Set when the session's users are gone.
    closed: std::sync::atomic::AtomicBool,
    /// From sending the last edit's text to its diagnostics' arrival: the server's share.
    server_time: Mutex<Option<std::time::Duration>>,
}

/// One language server's state in this session.
#[derive(Debug)]
enum Slot {
    /// Running, after `failures` earlier failures (they still count towards turning it off).
    Running(Arc<Server>, u32),
    /// Failed `failures` times; the next start may happen at `until`.
    Backoff { failures: u32, until: Instant, generation: u64 },
    /// Off for the rest of the session; the notice is given once.
    Off { noticed: bool },
}

/// What the session knows of one document.
#[derive(Debug, Default)]
struct Doc {
    /// The server generation it is open in (0: not open).
    generation: u64,
    version: i32,
    /// The text the server has.
    text: String,
    /// The file on disk when `text` was read from it, so a command's change is seen (`None`
    /// when the text did not come from the disk).
    stamp: Option<disk::Stamp>,
    /// The diagnostics last reported (or the baseline before the first edit).
    known: Option<(String, Vec<Diag>)>,
}

impl LspSession {
    /// A session for the workspace at `root`; the servers' sandbox hides `secrets`.
    pub fn new(
        config: LspConfig,
        root: impl Into<PathBuf>,
        secrets: Secrets,
    ) -> Result<Self, LspError> {
        let (cache, temp) = match &config.cache_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|err| LspError::Start(format!("cache directory: {err}")))?;
                (dir.clone(), None)
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("agent-lsp-")
                    .tempdir()
                    .map_err(|err| LspError::Start(format!("cache directory: {err}")))?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let root = root.into();
        let root = root.canonicalize().unwrap_or(root);
        let inner = Arc::new(Inner {
            config,
            root,
            secrets,
            cache,
            _temp: temp,
            servers: tokio::sync::Mutex::default(),
            docs: Mutex::default(),
            waiting: Mutex::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
            server_time: Mutex::default(),
        });
        Ok(Self { _owner: Some(Arc::new(Owner(inner.clone()))), inner })
    }

    /// A handle for the session's own tasks, which does not keep the servers alive.
    fn worker(&self) -> LspSession {
        LspSession { inner: self.inner.clone(), _owner: None }
    }

    /// The configuration.
    pub fn config(&self) -> &LspConfig {
        &self.inner.config
    }

    /// Whether some server takes `path`.
    pub fn covers(&self, path: &Path) -> bool {
        self.inner.config.server_for(path).is_some()
    }

    /// The process groups of the servers running now (for tests and `/proc` checks).
    pub async fn server_pids(&self) -> Vec<u32> {
        let servers = self.inner.servers.lock().await;
        servers
            .values()
            .filter_map(|slot| match slot {
                Slot::Running(server, _) => server.pid(),
                _ => None,
            })
            .collect()
    }

    /// How long the server took over the last edit whose diagnostics arrived, from sending its
    /// text to their arrival: the rest of an edit's wait is the harness's own (the bench's
    /// `lsp.harness_share_ms`).
    pub fn last_server_time(&self) -> Option<std::time::Duration> {
        *self.inner.server_time.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills every running server (as a crash would); the next edit restarts them.
    pub async fn kill_servers(&self) {
        for slot in self.inner.servers.lock().await.values() {
            if let Slot::Running(server, _) = slot {
                server.kill();
            }
        }
    }

    /// Stops every server now, instead of when the last clone is dropped.
    pub async fn shutdown(&self) {
        let mut servers = self.inner.servers.lock().await;
        for slot in servers.values() {
            if let Slot::Running(server, _) = slot {
                server.kill();
            }
        }
        servers.clear();
    }

    /// The observation for `files` after a call changed them: the errors each edit introduced,
    /// the count it fixed, "pending" for those not in by the deadline, and the late reports of
    /// earlier edits of the same files.
    pub async fn observe(&self, files: &[EditedFile]) -> String {
        self.observe_as(files, Cause::Edit).await
    }

    /// What the commands of a call changed in the files the servers have open, reported as
    /// [`LspSession::observe`] reports an edit ("This command introduced …"); empty when they
    /// changed none. The cost is one `stat` per open document, and a read of those whose
    /// metadata moved (or that were written too recently for the metadata to tell).
    pub async fn after_command(&self) -> String {
        let files = self.changed_on_disk();
        if files.is_empty() {
            return String::new();
        }
        self.observe_as(&files, Cause::Command).await
    }

    async fn observe_as(&self, files: &[EditedFile], cause: Cause) -> String {
        let deadline = tokio::time::Instant::now() + self.inner.config.wait;
        let covered: Vec<&EditedFile> = files.iter().filter(|f| self.covers(&f.path)).collect();
        if covered.is_empty() {
            return String::new();
        }
        let mut reports = self.take_late(covered.iter().map(|f| f.path.as_path()));
        let mut tasks = Vec::new();
        for file in covered {
            let session = self.worker();
            let edited = file.clone();
            let task = tokio::spawn(async move { session.sync(edited, cause).await });
            tasks.push((file.path.clone(), task));
        }
        for (path, mut task) in tasks {
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(Ok(report)) => reports.push(report),
                Ok(Err(_)) => {}
                Err(_) => {
                    reports.push(FileReport {
                        shown: self.shown(&path),
                        server: self.server_name(&path),
                        outcome: Outcome::Pending { waited: self.inner.config.wait },
                        late: false,
                        cause,
                    });
                    self.inner
                        .waiting
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((path, task));
                }
            }
        }
        report::render(&reports, self.inner.config.max_shown)
    }

    /// Every error and warning of `path` now (opening it when the server has not seen it), or
    /// of every file the running servers have reported on when `path` is `None`.
    pub async fn diagnostics(
        &self,
        path: Option<&Path>,
    ) -> Result<Vec<(String, Vec<Diag>)>, LspError> {
        let Some(path) = path else {
            let servers = self.inner.servers.lock().await;
            let mut all = Vec::new();
            for slot in servers.values() {
                if let Slot::Running(server, _) = slot {
                    for (uri, diags) in server.all_published() {
                        let shown = uri
                            .parse::<Uri>()
                            .ok()
                            .and_then(|u| u.to_file_path().map(|p| self.shown(&p)))
                            .unwrap_or(uri);
                        all.push((shown, diags));
                    }
                }
            }
            all.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(all);
        };
        let config = self.inner.config.server_for(path).ok_or(LspError::NoServer)?.clone();
        let server = self.server(&config, path).await?;
        let doc = self.doc(path);
        let mut doc = doc.lock().await;
        let (text, stamp) =
            disk::read(path).map_err(|err| LspError::Start(format!("read: {err}")))?;
        let (version, since) = self.send_text(&server, &config, path, &mut doc, &text)?;
        doc.stamp = Some(stamp);
        let uri = uri_of(path)?;
        match server.wait_for(&uri, version, since, self.inner.config.give_up, config.settle).await
        {
            Waited::Arrived(diags, _) => {
                doc.known = Some((text, diags.clone()));
                Ok(vec![(self.shown(path), diags)])
            }
            Waited::Gone => Err(LspError::Gone),
            Waited::TimedOut => Err(LspError::Pending),
        }
    }

    fn take_late<'a>(&self, paths: impl Iterator<Item = &'a Path>) -> Vec<FileReport> {
        let paths: Vec<&Path> = paths.collect();
        let mut waiting = self.inner.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut late = Vec::new();
        let mut keep = Vec::new();
        for (path, task) in waiting.drain(..) {
            if paths.contains(&path.as_path()) && task.is_finished() {
                late.push(task);
            } else {
                keep.push((path, task));
            }
        }
        *waiting = keep;
        drop(waiting);
        late.into_iter()
            .filter_map(|task| futures_util::FutureExt::now_or_never(task)?.ok())
            .map(|report| FileReport { late: true, ..report })
            .collect()
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.inner.root).unwrap_or(path).display().to_string()
    }

    fn server_name(&self, path: &Path) -> String {
        let program =
            self.inner.config.server_for(path).map(ServerConfig::program).unwrap_or_default();
        Path::new(program)
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
    }

    fn doc(&self, path: &Path) -> Arc<tokio::sync::Mutex<Doc>> {
        let mut docs = self.inner.docs.lock().unwrap_or_else(PoisonError::into_inner);
        docs.entry(path.to_path_buf()).or_default().clone()
    }

    /// One edited file, start to end, without a deadline of its own beyond `give_up`.
    async fn sync(&self, edited: EditedFile, cause: Cause) -> FileReport {
        let path = edited.path.clone();
        let outcome = self.sync_outcome(edited).await;
        FileReport {
            shown: self.shown(&path),
            server: self.server_name(&path),
            outcome,
            late: false,
            cause,
        }
    }

    async fn sync_outcome(&self, edited: EditedFile) -> Outcome {
        let Some(config) = self.inner.config.server_for(&edited.path).cloned() else {
            return Outcome::Nothing;
        };
        let server = match self.server(&config, &edited.path).await {
            Ok(server) => server,
            Err(LspError::Off { notice: true, reason }) => return Outcome::TurnedOff { reason },
            Err(_) => return Outcome::Nothing,
        };
        let doc = self.doc(&edited.path);
        let mut doc = doc.lock().await;
        let Ok(uri) = uri_of(&edited.path) else { return Outcome::Nothing };
        if edited.deleted {
            if doc.generation == server.generation {
                server.notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri.as_str()}}),
                );
            }
            *doc = Doc::default();
            return Outcome::Nothing;
        }
        let Ok((after, stamp)) = disk::read(&edited.path) else { return Outcome::Nothing };
        let give_up = self.inner.config.give_up;
        // The first edit of a file: its errors before the edit are the baseline.
        if doc.known.is_none()
            && let Some(before) = edited.before.as_deref()
        {
            {
                let Ok((version, since)) =
                    self.send_text(&server, &config, &edited.path, &mut doc, before)
                else {
                    return Outcome::Nothing;
                };
                match server.wait_for(&uri, version, since, give_up, config.settle).await {
                    Waited::Arrived(diags, _) => doc.known = Some((before.to_owned(), diags)),
                    Waited::Gone => return Outcome::Crashed,
                    Waited::TimedOut => return Outcome::NoAnswer,
                }
            }
        }
        if doc.generation == server.generation && doc.text == after && doc.known.is_some() {
            doc.stamp = Some(stamp);
            return Outcome::Delta(Delta::default());
        }
        let sent = Instant::now();
        let Ok((version, since)) = self.send_text(&server, &config, &edited.path, &mut doc, &after)
        else {
            return Outcome::Nothing;
        };
        doc.stamp = Some(stamp);
        match server.wait_for(&uri, version, since, give_up, config.settle).await {
            Waited::Arrived(diags, at) => {
                *self.inner.server_time.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(at.saturating_duration_since(sent));
                let delta = match &doc.known {
                    Some((old_text, old)) => diff::delta(old, old_text, &diags, &after),
                    // Changed by a command with no record of before: this is the baseline.
                    None => Delta::default(),
                };
                doc.known = Some((after, diags));
                Outcome::Delta(delta)
            }
            Waited::Gone => Outcome::Crashed,
            Waited::TimedOut => Outcome::NoAnswer,
        }
    }

    /// Opens the document with `text` (in a server that has not seen it) or changes it to
    /// `text`; returns the version sent and the publish counter before it.
    fn send_text(
        &self,
        server: &Server,
        config: &ServerConfig,
        path: &Path,
        doc: &mut Doc,
        text: &str,
    ) -> Result<(i32, u64), LspError> {
        let uri = uri_of(path)?;
        let since = server.seq();
        if doc.generation != server.generation {
            doc.generation = server.generation;
            doc.version = 1;
            server.notify(
                "textDocument/didOpen",
                json!({"textDocument": {
                    "uri": uri.as_str(),
                    "languageId": config.language_id(path),
                    "version": doc.version,
                    "text": text,
                }}),
            );
        } else {
            doc.version += 1;
            server.notify(
                "textDocument/didChange",
                json!({
                    "textDocument": {"uri": uri.as_str(), "version": doc.version},
                    "contentChanges": [{"text": text}],
                }),
            );
        }
        doc.text = text.to_owned();
        doc.stamp = None;
        Ok((doc.version, since))
    }
}

fn uri_of(path: &Path) -> Result<Uri, LspError> {
    Uri::from_file_path(path)
        .ok_or_else(|| LspError::Start(format!("{} is not absolute", path.display())))
}

impl EditObserver for LspSession {
    fn after_edit<'a>(&'a self, files: &'a [EditedFile]) -> BoxFuture<'a, EditNote> {
        Box::pin(async move { EditNote { text: self.observe(files).await } })
    }
}
