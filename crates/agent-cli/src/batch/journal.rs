//! The batch directory's state, so that a batch killed in any way (`kill -9` included) can be run
//! again: finished tasks are skipped, interrupted ones start over clean, and no result is
//! reported twice.
//!
//! A task is finished when `state/results/<id>.json` exists: it is written whole to a temporary
//! name and renamed, so it is there complete or not at all. RESULTS.jsonl is derived from those
//! files: each result is appended as one line after its file is in place, and a run first
//! rebuilds RESULTS.jsonl from them (dropping a torn last line or a line written twice). The
//! journal (`state/journal.jsonl`) records each start with the agent's process group, so the next
//! run can kill what the previous one left running.

use std::{
    collections::{BTreeMap, HashSet},
    io::Write,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{child, record::TaskResult};

/// How long a run waits for the previous run's killed agents to be gone.
const REAP_WAIT: Duration = Duration::from_secs(10);

/// A task's start, as the journal records it.
#[derive(Debug, Serialize, Deserialize)]
struct Started {
    id: String,
    attempt: u32,
    pgid: u32,
    dir: PathBuf,
}

/// The files of one batch directory.
#[derive(Debug)]
pub(crate) struct Journal {
    root: PathBuf,
}

impl Journal {
    /// Opens (creating) the batch directory `root`, which must be absolute.
    pub(crate) fn open(root: &Path) -> anyhow::Result<Self> {
        for dir in ["state/results", "state/logs", "state/git", "patches", "work", "data"] {
            let dir = root.join(dir);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(Self { root: root.to_owned() })
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Where the tasks' copies are: `<batch>/work`.
    pub(crate) fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The results of finished tasks, by id.
    pub(crate) fn finished(&self) -> BTreeMap<String, TaskResult> {
        let mut done = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(self.root.join("state/results")) else { return done };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let parsed = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<TaskResult>(&bytes).ok());
            if let Some(result) = parsed {
                done.insert(result.id.clone(), result);
            }
        }
        done
    }

    /// Rewrites RESULTS.jsonl to hold each finished task once: the lines already there, in
    /// their order, then any finished task a killed run had not yet appended.
    pub(crate) fn repair(&self, finished: &BTreeMap<String, TaskResult>) -> anyhow::Result<()> {
        let path = self.root.join("RESULTS.jsonl");
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let mut seen = HashSet::new();
        let mut text = String::new();
        let listed = old.lines().filter_map(|line| serde_json::from_str::<TaskResult>(line).ok());
        let ids = listed.map(|result| result.id).chain(finished.keys().cloned());
        for id in ids {
            if let Some(result) = finished.get(&id).filter(|_| seen.insert(id.clone())) {
                text.push_str(&serde_json::to_string(result)?);
                text.push('\n');
            }
        }
        write_atomically(&path, text.as_bytes())
    }

    /// Kills the agents a previous run of this batch left running (by the process groups its
    /// journal recorded, and by the workspace on their command line, for one killed before it
    /// could record its group) and waits until they are gone.
    pub(crate) fn kill_leftovers(&self) -> usize {
        let work = self.work();
        let mut marker = b"--workspace\0".to_vec();
        marker.extend_from_slice(work.as_os_str().as_encoded_bytes());
        marker.push(b'/');
        let mut groups: Vec<u32> = self
            .starts()
            .into_iter()
            .filter(|start| cmdline(start.pgid).is_some_and(|line| contains(&line, &marker)))
            .map(|start| start.pgid)
            .collect();
        groups.extend(processes().filter(|&pid| {
            cmdline(pid).is_some_and(|line| contains(&line, &marker)) && pid != std::process::id()
        }));
        groups.sort_unstable();
        groups.dedup();
        for &group in &groups {
            child::kill(group);
        }
        let start = Instant::now();
        while groups.iter().any(|&pid| alive(pid)) && start.elapsed() < REAP_WAIT {
            std::thread::sleep(Duration::from_millis(20));
        }
        groups.len()
    }

    /// The number of earlier starts of task `id` (its next attempt's number is one more).
    pub(crate) fn attempts(&self, id: &str) -> u32 {
        self.starts().iter().filter(|start| start.id == id).count() as u32
    }

    /// Records the start of a task's agent, with its process group.
    pub(crate) fn started(&self, id: &str, attempt: u32, pgid: u32, dir: &Path) {
        let line = Started { id: id.to_owned(), attempt, pgid, dir: dir.to_owned() };
        if let Ok(mut text) = serde_json::to_string(&line) {
            text.push('\n');
            let _ = append(&self.root.join("state/journal.jsonl"), text.as_bytes());
        }
    }

    /// Writes a task's result: its file first (atomically), then its line in RESULTS.jsonl.
    /// Callers hold one lock around it, so lines are never interleaved.
    pub(crate) fn record(&self, result: &TaskResult) -> anyhow::Result<()> {
        let text = serde_json::to_string(result)?;
        let file = self.root.join("state/results").join(format!("{}.json", result.id));
        write_atomically(&file, text.as_bytes())?;
        append(&self.root.join("RESULTS.jsonl"), format!("{text}\n").as_bytes())
    }

    /// Writes a task's patch under `patches/`; its path relative to the batch directory.
    pub(crate) fn patch(&self, id: &str, patch: &[u8]) -> anyhow::Result<String> {
        let name = format!("patches/{id}.patch");
        write_atomically(&self.root.join(&name), patch)?;
        Ok(name)
    }

    fn starts(&self) -> Vec<Started> {
        let text =
            std::fs::read_to_string(self.root.join("state/journal.jsonl")).unwrap_or_default();
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, bytes)
        .with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("renaming to {}", path.display()))
}

/// Appends `bytes` in one write, so a kill leaves either the whole line or none of it.
fn append(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(bytes).with_context(|| format!("appending to {}", path.display()))
}

fn processes() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
}

fn cmdline(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok().filter(|line| !line.is_empty())
}

/// Whether `pid` still runs: a zombie, waiting for init to reap it, does not.
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    state.is_some_and(|state| state != 'Z' && state != 'X')
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}
