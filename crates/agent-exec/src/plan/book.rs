//! [`PlanBook`]: the session's plan, its append-only log in the session folder, and what front
//! ends read of it.

use std::{
    fs::OpenOptions,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    sync::{
        Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
};

use serde::{Deserialize, Serialize};

use super::{PLAN_SCHEMA_VERSION, Pinned, Plan, PlanRefusal, PlanUpdate};

/// The log's file name inside the session folder.
pub const PLAN_LOG: &str = "plan.jsonl";

/// One accepted change: a line of the log, and what front ends stream (`plan.updated` in
/// `exec --json`). Versioned by `schema_version` ([`PLAN_SCHEMA_VERSION`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEvent {
    /// [`PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The change's number in the session, from 1.
    pub seq: u64,
    /// What the model asked for.
    pub update: PlanUpdate,
    /// The plan after it.
    pub plan: Plan,
}

/// The session's plan, shared by the tool that edits it, the compaction that pins it and the
/// front end that shows it.
#[derive(Debug, Default)]
pub struct PlanBook {
    plan: Mutex<Plan>,
    seq: AtomicU64,
    log: Option<PathBuf>,
}

impl PlanBook {
    /// A plan kept in memory only.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plan of the session folder `dir`: read back from its log when there is one (a
    /// resumed session), and appended to on every change. A line that does not parse (a torn
    /// last write) is skipped; the last good line wins.
    pub fn open(dir: &Path) -> Self {
        let path = dir.join(PLAN_LOG);
        let mut plan = Plan::default();
        let mut seq = 0;
        if let Ok(file) = std::fs::File::open(&path) {
            for line in BufReader::new(file).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<PlanEvent>(&line) {
                    plan = event.plan;
                    seq = event.seq;
                }
            }
        }
        Self { plan: Mutex::new(plan), seq: AtomicU64::new(seq), log: Some(path) }
    }

    /// Applies `update`: the event of the accepted change (already on disk when the book has a
    /// log), or why it was refused, with the plan unchanged.
    pub fn update(&self, update: PlanUpdate) -> Result<PlanEvent, PlanRefusal> {
        let mut plan = self.lock();
        let next = plan.apply(&update)?;
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let event = PlanEvent { schema_version: PLAN_SCHEMA_VERSION, seq, update, plan: next };
        if let Some(path) = &self.log {
            // The log is the record a resumed session starts from; a failed write loses only the
            // record, not the change, so it is not the model's error.
            if let Err(err) = append(path, &event) {
                tracing::warn!(path = %path.display(), %err, "could not append to the plan log");
            }
        }
        plan.clone_from(&event.plan);
        Ok(event)
    }

    /// The plan now.
    pub fn snapshot(&self) -> Plan {
        self.lock().clone()
    }

    /// How many changes were accepted in this session, resumed ones included: a front end that
    /// shows the plan after each change compares it with the number it last saw.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    /// Where the log is, when the book has one.
    pub fn log_path(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    fn lock(&self) -> MutexGuard<'_, Plan> {
        // The plan is replaced whole under the lock, so a poisoned lock still holds a whole plan.
        self.plan.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn append(path: &Path, event: &PlanEvent) -> std::io::Result<()> {
    let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(line.as_bytes())
}

impl Pinned for PlanBook {
    fn pinned(&self) -> Option<String> {
        let plan = self.lock();
        if plan.items.is_empty() {
            return None;
        }
        let (done, total) = plan.progress();
        Some(format!(
            "[harness] The plan ({done} of {total} done; kept verbatim through every compaction, \
             never summarized; ids are stable):\n{}",
            plan.checklist()
        ))
    }
}
