//! Checkpoints: before the first write of a turn to any path, what the path held (content, mode,
//! or absence) is kept in the session's store, so the turn can be undone (docs/checkpoints.md).
//!
//! The executor asks [`Checkpoints`] around every call that may write, judging only by what the
//! call declared: each [`Access::Write`] path is recorded before the call runs, and a call that
//! runs processes (an [`Access::Command`], or a tool whose effects say it starts processes) gets
//! a [`TreeScan`] of the workspace before and after, whose [`WriteSet`] names what its commands
//! changed. Content is read only for paths whose metadata moved since the store last saw them.
//! Nothing here names a tool.

mod restore;
mod store;

use std::{
    collections::HashMap,
    path::{Component, Path, PathBuf},
    sync::Mutex,
};

use agent_core::Access;
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
    state: Mutex<State>,
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
        Ok(Self { state: Mutex::new(state) })
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
        let mut state = self.lock();
        let mut changed = guard.paths;
        if let Some(before) = guard.scan {
            let rules = state.config.rules.clone();
            let after = TreeScan::take(&state.root, &rules);
            let set = before.diff(&after, &rules);
            for path in set.changed() {
                let path = path.to_path_buf();
                if changed.contains(&path) {
                    continue;
                }
                if set.created.contains(&path) {
                    // It did not exist before this command: its before is its absence, whatever
                    // it holds now.
                    state.created(&path);
                } else {
                    state.first_touch_scanned(&path);
                }
                changed.push(path);
            }
            for skipped in &set.not_covered {
                state.skip(skipped.clone());
            }
            state.last_writes = Some(set);
        }
        for path in changed {
            state.settle(&path);
        }
        state.save_turn();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while recording leaves a record that is still valid JSON on disk; carry on.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    /// The turn's record, begun if needed.
    fn turn(&mut self) -> &mut Record {
        if self.turn.is_none() {
            let turn = self.last_turn.unwrap_or(0);
            let id = self.store.next_id().unwrap_or(1);
            self.turn = Some(Record {
                id,
                turn,
                kind: RecordKind::Turn,
                changes: Vec::new(),
                not_covered: Vec::new(),
                undone_by: None,
            });
        }
        self.turn.get_or_insert_with(unreachable_record)
    }

    fn skip(&mut self, skipped: Skipped) {
        let turn = self.turn();
        if !turn.not_covered.contains(&skipped) {
            turn.not_covered.push(skipped);
        }
    }

    /// `path` relative to the root, refused outside it and inside `.git`.
    fn relative(&self, path: &Path) -> Result<PathBuf, NotCovered> {
        let joined = if path.is_absolute() { path.to_path_buf() } else { self.root.join(path) };
        let mut clean = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    clean.pop();
                }
                Component::CurDir => {}
                other => clean.push(other),
            }
        }
        let rel = clean.strip_prefix(&self.root).map_err(|_| NotCovered::OutsideRoot)?;
        if rel.components().next().is_some_and(|first| first.as_os_str() == ".git") {
            return Err(NotCovered::GitDir);
        }
        Ok(rel.to_path_buf())
    }

    /// Scans the workspace and keeps the content of every covered file whose metadata moved
    /// since the store last saw it (all of them, the first time).
    fn scan_and_keep(&mut self) -> TreeScan {
        let scan = TreeScan::take(&self.root, &self.config.rules);
        let mut outside = Vec::new();
        for (rel, meta) in scan.covered() {
            if self.known.get(rel).is_some_and(|(seen, _)| seen == meta) {
                continue;
            }
            // Once a scan has seen the whole tree, `known` follows every call's writes; a path
            // that moved since then moved while no call ran (a background job writing after its
            // call returned). Its earlier content is gone, so the turn names it instead of
            // folding it silently into the baseline.
            if self.baseline {
                outside.push(rel.to_path_buf());
            }
            let state = self.read_state(rel).ok().flatten();
            self.known.insert(rel.to_path_buf(), (*meta, state));
        }
        if self.baseline {
            let gone: Vec<PathBuf> = self
                .known
                .keys()
                .filter(|rel| scan.get(rel).is_none())
                .filter(|rel| std::fs::symlink_metadata(self.root.join(rel)).is_err())
                .cloned()
                .collect();
            for rel in gone {
                self.known.remove(&rel);
                outside.push(rel);
            }
        }
        self.baseline = true;
        outside.sort();
        for path in outside {
            self.skip(Skipped { path, why: NotCovered::OutsideCall });
        }
        scan
    }

    /// What `rel` holds now, its content kept; `Ok(None)` when it could not be kept (over the cap).
    fn read_state(&mut self, rel: &Path) -> Result<Option<FileState>, NotCovered> {
        let path = self.root.join(rel);
        let meta = match EntryMeta::of(&path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Some(FileState::Absent));
            }
            Err(err) => return Err(NotCovered::Unreadable { error: err.to_string() }),
        };
        let state = match meta.kind {
            EntryKind::Dir => FileState::Dir { mode: meta.mode },
            EntryKind::Symlink => match std::fs::read_link(&path) {
                Ok(target) => FileState::Symlink { target },
                Err(err) => return Err(NotCovered::Unreadable { error: err.to_string() }),
            },
            EntryKind::Other => {
                return Err(NotCovered::Unreadable { error: "not a regular file".into() });
            }
            EntryKind::File if meta.size > self.config.rules.max_file_bytes => {
                return Err(NotCovered::TooLarge {
                    bytes: meta.size,
                    limit: self.config.rules.max_file_bytes,
                });
            }
            EntryKind::File => {
                let bytes = std::fs::read(&path)
                    .map_err(|err| NotCovered::Unreadable { error: err.to_string() })?;
                match self.store.put(&bytes) {
                    Ok(hash) => FileState::File { hash, mode: meta.mode, size: meta.size },
                    Err(PutError::OverCap) => return Ok(None),
                    Err(PutError::Io(err)) => {
                        return Err(NotCovered::Unreadable { error: err.to_string() });
                    }
                }
            }
        };
        Ok(Some(state))
    }

    /// Records the state a command's before-scan kept for `rel`, which the command then changed.
    fn first_touch_scanned(&mut self, rel: &Path) {
        if self.turn.as_ref().is_some_and(|turn| turn.changes.iter().any(|c| c.path == rel)) {
            return;
        }
        let cap = self.store.cap();
        match self.known.get(rel).cloned() {
            Some((_, Some(before))) => {
                let change = Change { path: rel.to_path_buf(), after: before.clone(), before };
                self.turn().changes.push(change);
            }
            Some((_, None)) => {
                self.skip(Skipped { path: rel.to_path_buf(), why: NotCovered::OverCap { cap } })
            }
            // Seen by the scan but never kept (unreadable): it cannot be put back.
            None => self.first_touch(rel),
        }
    }

    /// Records `rel`'s state before the turn's first write to it.
    fn first_touch(&mut self, rel: &Path) {
        if self.turn.as_ref().is_some_and(|turn| turn.changes.iter().any(|c| c.path == rel)) {
            return;
        }
        let path = self.root.join(rel);
        let known = self.known.get(rel).cloned();
        let before = match (EntryMeta::of(&path), known) {
            (Ok(meta), Some((seen, state))) if seen == meta => Ok(state),
            (Err(_), Some((_, state))) => Ok(state),
            _ => self.read_state(rel),
        };
        let cap = self.store.cap();
        match before {
            Ok(Some(before)) => {
                let change = Change { path: rel.to_path_buf(), after: before.clone(), before };
                self.turn().changes.push(change);
            }
            Ok(None) => {
                self.skip(Skipped { path: rel.to_path_buf(), why: NotCovered::OverCap { cap } })
            }
            Err(why) => self.skip(Skipped { path: rel.to_path_buf(), why }),
        }
    }

    /// Records that the turn created `rel` (unless an earlier call of the turn touched it).
    fn created(&mut self, rel: &Path) {
        let turn = self.turn();
        if !turn.changes.iter().any(|c| c.path == rel) {
            let absent = FileState::Absent;
            turn.changes.push(Change {
                path: rel.to_path_buf(),
                before: absent.clone(),
                after: absent,
            });
        }
    }

    /// Records what `rel` holds after a call.
    fn settle(&mut self, rel: &Path) {
        if !self.turn.as_ref().is_some_and(|turn| turn.changes.iter().any(|c| c.path == rel)) {
            return;
        }
        let cap = self.store.cap();
        let after = self.read_state(rel);
        let meta = EntryMeta::of(&self.root.join(rel)).ok();
        match (after, meta) {
            (Ok(Some(FileState::Absent)), _) => {
                self.known.remove(rel);
            }
            (Ok(state), Some(meta)) => {
                self.known.insert(rel.to_path_buf(), (meta, state.clone()));
                if state.is_none() {
                    self.skip(Skipped {
                        path: rel.to_path_buf(),
                        why: NotCovered::OverCap { cap },
                    });
                }
            }
            (Err(why), _) => self.skip(Skipped { path: rel.to_path_buf(), why }),
            (Ok(_), None) => {}
        }
        let now = self.known.get(rel).and_then(|(_, state)| state.clone());
        let now = if self.known.contains_key(rel) { now } else { Some(FileState::Absent) };
        let turn = self.turn();
        match now {
            Some(after) => {
                if let Some(change) = turn.changes.iter_mut().find(|c| c.path == rel) {
                    change.after = after;
                }
            }
            // The content it was left with could not be kept: it cannot be checked at undo, so
            // it is not covered at all.
            None => turn.changes.retain(|c| c.path != rel),
        }
    }

    fn save_turn(&mut self) {
        let Some(turn) = &mut self.turn else { return };
        let mut record = turn.clone();
        record.changes.retain(|change| change.before != change.after);
        record.changes.sort_by(|a, b| a.path.cmp(&b.path));
        if record.changes.is_empty() && record.not_covered.is_empty() {
            return;
        }
        if let Err(err) = self.store.save(&record) {
            tracing::warn!(%err, "a checkpoint could not be saved");
        }
    }
}

/// Never called: [`State::turn`] fills the record first. A value rather than a panic, since
/// library code does not panic.
fn unreachable_record() -> Record {
    Record {
        id: 0,
        turn: 0,
        kind: RecordKind::Turn,
        changes: Vec::new(),
        not_covered: Vec::new(),
        undone_by: None,
    }
}

#[cfg(test)]
mod tests;
