//! The recorder behind [`Checkpoints`]: what the store last saw of the tree, and how each call's
//! writes become the changes (or the named gaps) of the turn's record.

use super::*;

impl State {
    /// The turn's record, begun if needed.
    pub(super) fn turn(&mut self) -> &mut Record {
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

    pub(super) fn skip(&mut self, skipped: Skipped) {
        let turn = self.turn();
        if !turn.not_covered.contains(&skipped) {
            turn.not_covered.push(skipped);
        }
    }

    /// `path` relative to the root, refused outside it and inside `.git`.
    pub(super) fn relative(&self, path: &Path) -> Result<PathBuf, NotCovered> {
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
    pub(super) fn scan_and_keep(&mut self) -> TreeScan {
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
    pub(super) fn read_state(&mut self, rel: &Path) -> Result<Option<FileState>, NotCovered> {
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
    pub(super) fn first_touch_scanned(&mut self, rel: &Path) {
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
    pub(super) fn first_touch(&mut self, rel: &Path) {
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
    pub(super) fn created(&mut self, rel: &Path) {
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
    pub(super) fn settle(&mut self, rel: &Path) {
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

    pub(super) fn save_turn(&mut self) {
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
