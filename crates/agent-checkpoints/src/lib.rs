//! Checkpoints: before the first write of a turn to any path, what the path held (content, mode,
//! or absence) is kept in the session's store, so the turn can be undone (docs/checkpoints.md).
//!
//! [`Checkpoints`] is agent-exec's [`Checkpointer`]: the executor tells it about every call that
//! may write, judging only by what the call declared. Each [`Access::Write`] path is recorded
//! before the call runs, and a call that runs processes (an [`Access::Command`], or a tool whose
//! effects say it starts processes) gets a [`TreeScan`] of the workspace before and after, whose
//! [`WriteSet`] names what its commands changed. Content is read only for paths whose metadata
//! moved since the store last saw them. Nothing here names a tool.
//!
//! The store ([`Store`]: content-addressed blobs, one record per turn) and [`undo`] are read
//! without a session too, by `agent undo` and a fork. Registering it:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use agent_checkpoints::{CheckpointConfig, Checkpoints};
//! use agent_exec::Agent;
//!
//! let (session, workspace) = (std::path::Path::new("session"), std::path::Path::new("."));
//! let checkpoints = Checkpoints::open(session, workspace, CheckpointConfig::default())?;
//! let builder = Agent::builder(workspace).checkpoints(Arc::new(checkpoints));
//! # let _ = builder;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod recorder;
mod restore;
mod store;

use std::{
    collections::HashMap,
    path::{Component, Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
};

use agent_core::Access;
use agent_exec::{CallIntent, CheckpointFailed, Checkpointer, PendingCall};
use agent_sandbox::writes::{
    EntryKind, EntryMeta, NotCovered, ScanRules, Skipped, TreeScan, WriteSet,
};

use self::store::PutError;
pub use self::{
    restore::{Conflict, UndoOptions, UndoReport, undo},
    store::{Change, FileState, Record, RecordKind, Store, TurnMark},
};

/// The default per-session store cap: 1 GB.
pub const DEFAULT_STORE_CAP: u64 = 1_000_000_000;

/// How checkpoints are taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// What a command scan covers (size limit, ignored directories).
    pub rules: ScanRules,
    /// Bytes of blobs one session may keep.
    pub store_cap: u64,
    /// Whether commands can write (false under a read-only sandbox: no scan is needed).
    pub commands_write: bool,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self { rules: ScanRules::default(), store_cap: DEFAULT_STORE_CAP, commands_write: true }
    }
}

/// A checkpoint that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file of the store or the workspace.
    #[error("checkpoint {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A record or blob name that does not parse.
    #[error("checkpoint store is damaged: {what}")]
    Corrupt {
        /// What was wrong.
        what: String,
    },
    /// No record with this id.
    #[error("no checkpoint {id} in this session")]
    NoRecord {
        /// The id asked for.
        id: u32,
    },
}

impl CheckpointError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io { path: path.to_path_buf(), source }
    }
}

/// The checkpoints of one session: the store, and the record of the turn under way.
#[derive(Debug)]
pub struct Checkpoints {
    /// Shared with the calls under way ([`Pending`]), which record into it when they end.
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    store: Store,
    root: PathBuf,
    config: CheckpointConfig,
    /// What the store last saw at each path: its metadata and the state it recorded (`None`
    /// when the content could not be kept). A command's scan reads only paths whose metadata
    /// differs from this.
    known: HashMap<PathBuf, (EntryMeta, Option<FileState>)>,
    /// The turn under way and its record (saved after every call that changed something).
    turn: Option<Record>,
    /// The last write set of a command, for front ends and diagnostics.
    last_writes: Option<WriteSet>,
    /// The number of the turn under way, once known (read from `turns.jsonl` the first time).
    last_turn: Option<u32>,
    /// Whether `known` holds a whole scan of the tree, so that a difference is a write no call made.
    baseline: bool,
}

/// What [`Checkpoints::before_call`] learned, for [`Checkpoints::after_call`].
#[derive(Debug)]
pub struct CallGuard {
    paths: Vec<PathBuf>,
    scan: Option<TreeScan>,
}

impl Checkpoints {
    /// Opens the store of the session in `session_dir` for the workspace `root`.
    pub fn open(
        session_dir: &Path,
        root: &Path,
        config: CheckpointConfig,
    ) -> Result<Self, CheckpointError> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let store = Store::open(session_dir, config.store_cap)?;
        store.set_root(&root)?;
        let state = State {
            store,
            root,
            config,
            known: HashMap::new(),
            turn: None,
            last_writes: None,
            last_turn: None,
            baseline: false,
        };
        Ok(Self { state: Arc::new(Mutex::new(state)) })
    }

    /// Begins a user prompt: its number (from 1, counting the session's earlier prompts) is
    /// returned. `transcript_offset` is the transcript's length before the prompt was written.
    /// Costs one appended line; a turn that writes nothing leaves no record.
    pub fn begin_turn(&self, transcript_offset: u64, prompt: &str) -> Result<u32, CheckpointError> {
        let mut state = self.lock();
        state.turn = None;
        let turn = match state.last_turn {
            Some(turn) => turn + 1,
            None => state.store.turns()?.last().map_or(1, |mark| mark.turn + 1),
        };
        state.last_turn = Some(turn);
        let first = prompt.lines().next().unwrap_or_default();
        let prompt: String = first.chars().take(80).collect();
        state.store.mark_turn(&TurnMark { turn, transcript_offset, prompt })?;
        Ok(turn)
    }

    /// Continues in another session's store (after `/clear`, or a fork the front end switched
    /// to). The new store starts empty, so the workspace is read again at its first command.
    pub fn switch(&self, session_dir: &Path) -> Result<(), CheckpointError> {
        let mut state = self.lock();
        let store = Store::open(session_dir, state.config.store_cap)?;
        store.set_root(&state.root)?;
        state.store = store;
        state.turn = None;
        state.last_turn = None;
        // Blobs live per store: paths known with content must be read again into the new one.
        state.known.clear();
        state.baseline = false;
        Ok(())
    }

    /// The write set of the last command scanned, if any (the seam for "files a command changed").
    pub fn last_writes(&self) -> Option<WriteSet> {
        self.lock().last_writes.clone()
    }

    /// The store's directory.
    pub fn dir(&self) -> PathBuf {
        self.lock().store.dir().to_path_buf()
    }

    /// Before a call runs: records the paths it declared it writes, and scans the workspace if
    /// it runs processes that may write (`judged_read_only`: the policy found every program of
    /// its command read-only). `None` when the call can change nothing.
    pub fn before_call(
        &self,
        access: &[Access],
        runs_processes: bool,
        judged_read_only: bool,
    ) -> Option<CallGuard> {
        let mut state = self.lock();
        let mut paths = Vec::new();
        let mut commands = false;
        for access in access {
            match access {
                Access::Write(path) => paths.push(PathBuf::from(path)),
                Access::Command { .. } => commands = true,
                Access::Read(_) | Access::Network(_) => {}
            }
        }
        let scan =
            ((commands || runs_processes) && !judged_read_only && state.config.commands_write)
                .then(|| state.scan_and_keep());
        if paths.is_empty() && scan.is_none() {
            return None;
        }
        let mut rels = Vec::new();
        for path in paths {
            match state.relative(&path) {
                Ok(rel) => {
                    state.first_touch(&rel);
                    rels.push(rel);
                }
                Err(why) => state.skip(Skipped { path, why }),
            }
        }
        Some(CallGuard { paths: rels, scan })
    }

    /// After the call: records what its paths hold now, and what its commands changed.
    pub fn after_call(&self, guard: CallGuard) {
        self.lock().after_call(guard);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while recording leaves a record that is still valid JSON on disk; carry on.
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl State {
    fn after_call(&mut self, guard: CallGuard) {
        let mut changed = guard.paths;
        if let Some(before) = guard.scan {
            let rules = self.config.rules.clone();
            let after = TreeScan::take(&self.root, &rules);
            let set = before.diff(&after, &rules);
            for path in set.changed() {
                let path = path.to_path_buf();
                if changed.contains(&path) {
                    continue;
                }
                if set.created.contains(&path) {
                    // It did not exist before this command: its before is its absence, whatever
                    // it holds now.
                    self.created(&path);
                } else {
                    self.first_touch_scanned(&path);
                }
                changed.push(path);
            }
            for skipped in &set.not_covered {
                self.skip(skipped.clone());
            }
            self.last_writes = Some(set);
        }
        for path in changed {
            self.settle(&path);
        }
        self.save_turn();
    }
}

impl Checkpointer for Checkpoints {
    fn begin_turn(&self, transcript_offset: u64, prompt: &str) -> Result<u32, CheckpointFailed> {
        Checkpoints::begin_turn(self, transcript_offset, prompt).map_err(CheckpointFailed::new)
    }

    fn switch(&self, session_dir: &Path) -> Result<(), CheckpointFailed> {
        Checkpoints::switch(self, session_dir).map_err(CheckpointFailed::new)
    }

    fn before_call(&self, call: &CallIntent<'_>) -> Option<Box<dyn PendingCall>> {
        let guard = Checkpoints::before_call(
            self,
            call.access,
            call.runs_processes,
            call.judged_read_only,
        )?;
        Some(Box::new(Pending { state: Arc::clone(&self.state), guard }))
    }
}

/// A call under way, recorded into the session's state when it ends.
struct Pending {
    state: Arc<Mutex<State>>,
    guard: CallGuard,
}

impl PendingCall for Pending {
    fn ended(self: Box<Self>) {
        let Pending { state, guard } = *self;
        lock(&state).after_call(guard);
    }
}

#[cfg(test)]
mod tests;
