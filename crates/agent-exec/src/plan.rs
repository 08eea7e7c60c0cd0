//! The plan a model keeps: items with stable ids, a short text and a status, changed by whole-list
//! replaces or small operations, and kept as session state that compaction never summarizes.
//!
//! [`Plan`] is the pure state and its rules ([`Plan::apply`]); [`PlanBook`] is the session's copy,
//! appended to an append-only log in the session folder (`plan.jsonl`) on every accepted change
//! and read back on resume, and pinned into every compaction's message through [`Pinned`]. This
//! crate names no tool: the tool that edits the plan is registered by whoever builds the agent
//! (agent-tools' `update_plan`), and front ends read [`PlanBook::snapshot`] (or the
//! [`PlanEvent`] it gives) to show or stream it.

mod book;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use self::book::{PLAN_LOG, PlanBook, PlanEvent};

/// The version of [`PlanEvent`] and of the log's lines; bumped only by a change that breaks
/// readers.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// The most items a plan holds, completed and cancelled ones included.
pub const MAX_PLAN_ITEMS: usize = 100;

/// The longest item text, in characters.
pub const MAX_ITEM_CHARS: usize = 300;

/// An item's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on; at most one item at a time.
    InProgress,
    /// Done. Kept in the plan for good.
    Completed,
    /// Given up or removed. Kept in the plan for good.
    Cancelled,
}

impl PlanStatus {
    /// The status's name on the wire: `pending`, `in_progress`, `completed`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Completed => "completed",
            PlanStatus::Cancelled => "cancelled",
        }
    }

    /// Whether work on the item is still open (pending or in progress).
    pub fn unfinished(self) -> bool {
        matches!(self, PlanStatus::Pending | PlanStatus::InProgress)
    }

    /// The checkbox a checklist shows for it.
    pub fn mark(self) -> &'static str {
        match self {
            PlanStatus::Pending => "[ ]",
            PlanStatus::InProgress => "[>]",
            PlanStatus::Completed => "[x]",
            PlanStatus::Cancelled => "[-]",
        }
    }
}

/// One item of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// A stable id (`1`, `2`, … when the model gives none); never reused within a session.
    pub id: String,
    /// What the step is, in a line.
    pub text: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// The plan: items in order, completed and cancelled ones kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The items, in the order the model gave them.
    pub items: Vec<PlanItem>,
    /// The model's latest note on why the plan changed, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The next number an item without an id gets.
    #[serde(default)]
    pub next_id: u64,
}

/// An item of a whole-list replace: an `id` matches the item to keep (or names a new one);
/// without one, the text matches an existing item exactly or starts a new item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaceItem {
    /// The id of the item this is, when the model kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The text.
    pub text: String,
    /// The status.
    pub status: PlanStatus,
}

/// A small change to the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum PlanOp {
    /// Adds an item at the end (pending unless said otherwise).
    Add {
        /// Its id; one is given when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Its text.
        text: String,
        /// Its status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<PlanStatus>,
    },
    /// Changes an item's status.
    SetStatus {
        /// The item.
        id: String,
        /// The new status.
        status: PlanStatus,
    },
    /// Cancels an item that is not finished: it stays in the plan, marked cancelled, since a plan
    /// never loses an item. A completed item cannot be removed.
    Remove {
        /// The item.
        id: String,
    },
}

/// One accepted or proposed change: a whole-list replace, operations, or both (the replace
/// first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanUpdate {
    /// Why the plan changes, if the model says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The whole new list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<Vec<ReplaceItem>>,
    /// Operations, applied in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<PlanOp>,
}

/// Why a change was refused; the plan is then unchanged. The message is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanRefusal {
    /// A replace left out items that are not finished.
    #[error(
        "the new list leaves out unfinished items: {0}; a plan never drops an item silently: keep it in the list, or set its status to cancelled first"
    )]
    DropsUnfinished(String),
    /// More than one item would be in progress.
    #[error(
        "more than one item would be in_progress ({0}); finish or pause one first: at most one item is in_progress"
    )]
    TwoInProgress(String),
    /// An operation named an id the plan does not have.
    #[error("no item has the id `{0}`; the plan's ids are: {1}")]
    UnknownId(String, String),
    /// An id was given twice.
    #[error("the id `{0}` is used twice; ids are unique within a plan")]
    DuplicateId(String),
    /// A completed item was to be removed or reopened as cancelled.
    #[error("item `{0}` is completed and stays in the plan; completed items are never removed")]
    RemoveCompleted(String),
    /// An empty text, or one over the length limit.
    #[error("an item's text must be 1 to {MAX_ITEM_CHARS} characters (got {0})")]
    BadText(usize),
    /// The plan would pass [`MAX_PLAN_ITEMS`].
    #[error("the plan would hold {0} items, more than {MAX_PLAN_ITEMS}")]
    TooMany(usize),
    /// Neither a replace nor an operation.
    #[error("the update changes nothing: give the whole list, or operations")]
    Empty,
}

impl Plan {
    /// The plan after `update`, or why it was refused (the plan itself never changes here).
    pub fn apply(&self, update: &PlanUpdate) -> Result<Plan, PlanRefusal> {
        if update.replace.is_none() && update.ops.is_empty() {
            return Err(PlanRefusal::Empty);
        }
        let mut next = self.clone();
        if let Some(list) = &update.replace {
            next = next.replaced(list)?;
        }
        for op in &update.ops {
            next.operate(op)?;
        }
        if update.explanation.is_some() {
            next.explanation.clone_from(&update.explanation);
        }
        next.check()?;
        Ok(next)
    }

    /// The item with `id`.
    pub fn get(&self, id: &str) -> Option<&PlanItem> {
        self.items.iter().find(|item| item.id == id)
    }

    /// The item in progress, if any.
    pub fn in_progress(&self) -> Option<&PlanItem> {
        self.items.iter().find(|item| item.status == PlanStatus::InProgress)
    }

    /// How many items are completed, of how many that count (cancelled ones do not).
    pub fn progress(&self) -> (usize, usize) {
        let counted = self.items.iter().filter(|item| item.status != PlanStatus::Cancelled);
        let done = counted.clone().filter(|item| item.status == PlanStatus::Completed).count();
        (done, counted.count())
    }

    /// The plan as a compact checklist, one item a line (`[x] 1. read the code`).
    pub fn checklist(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            out.push_str(&format!("{} {}. {}\n", item.status.mark(), item.id, item.text));
        }
        out
    }

    fn fresh_id(&mut self) -> String {
        loop {
            self.next_id += 1;
            let id = self.next_id.to_string();
            if self.get(&id).is_none() {
                return id;
            }
        }
    }

    fn replaced(&self, list: &[ReplaceItem]) -> Result<Plan, PlanRefusal> {
        let mut next = Plan { items: Vec::new(), ..self.clone() };
        let mut used = vec![false; self.items.len()];
        let mut incoming = Vec::with_capacity(list.len());
        for entry in list {
            let found = match &entry.id {
                Some(id) => self.items.iter().position(|item| item.id == *id),
                None => self
                    .items
                    .iter()
                    .enumerate()
                    .position(|(index, item)| !used[index] && item.text == entry.text),
            };
            if let Some(index) = found {
                used[index] = true;
            }
            let id = match (&entry.id, found) {
                (Some(id), _) => Some(id.clone()),
                (None, Some(index)) => Some(self.items[index].id.clone()),
                (None, None) => None,
            };
            incoming.push((id, entry));
        }
        let dropped: Vec<String> = self
            .items
            .iter()
            .zip(&used)
            .filter(|(item, used)| !**used && item.status.unfinished())
            .map(|(item, _)| format!("`{}` ({})", item.id, item.text))
            .collect();
        if !dropped.is_empty() {
            return Err(PlanRefusal::DropsUnfinished(dropped.join(", ")));
        }
        // Finished items the list left out are kept where they were, ahead of the new list: a
        // Codex-style model resends only what is left, and the record of what was done stays.
        for (item, used) in self.items.iter().zip(&used) {
            if !used {
                next.items.push(item.clone());
            }
        }
        for (id, entry) in incoming {
            let id = match id {
                Some(id) => id,
                None => next.fresh_id(),
            };
            next.items.push(PlanItem {
                id,
                text: entry.text.trim().to_owned(),
                status: entry.status,
            });
        }
        Ok(next)
    }

    fn operate(&mut self, op: &PlanOp) -> Result<(), PlanRefusal> {
        match op {
            PlanOp::Add { id, text, status } => {
                let id = match id {
                    Some(id) => id.clone(),
                    None => self.fresh_id(),
                };
                let status = status.unwrap_or(PlanStatus::Pending);
                self.items.push(PlanItem { id, text: text.trim().to_owned(), status });
            }
            PlanOp::SetStatus { id, status } => self.item_mut(id)?.status = *status,
            PlanOp::Remove { id } => {
                let item = self.item_mut(id)?;
                if item.status == PlanStatus::Completed {
                    return Err(PlanRefusal::RemoveCompleted(id.clone()));
                }
                item.status = PlanStatus::Cancelled;
            }
        }
        Ok(())
    }

    fn item_mut(&mut self, id: &str) -> Result<&mut PlanItem, PlanRefusal> {
        let ids = self.ids();
        self.items
            .iter_mut()
            .find(|item| item.id == id)
            .ok_or_else(|| PlanRefusal::UnknownId(id.to_owned(), ids))
    }

    fn ids(&self) -> String {
        if self.items.is_empty() {
            return "none (the plan is empty)".to_owned();
        }
        self.items.iter().map(|item| format!("`{}`", item.id)).collect::<Vec<_>>().join(", ")
    }

    fn check(&self) -> Result<(), PlanRefusal> {
        if self.items.len() > MAX_PLAN_ITEMS {
            return Err(PlanRefusal::TooMany(self.items.len()));
        }
        let mut seen = std::collections::HashSet::new();
        for item in &self.items {
            if !seen.insert(item.id.as_str()) {
                return Err(PlanRefusal::DuplicateId(item.id.clone()));
            }
            let chars = item.text.chars().count();
            if chars == 0 || chars > MAX_ITEM_CHARS {
                return Err(PlanRefusal::BadText(chars));
            }
        }
        let running: Vec<&str> = self
            .items
            .iter()
            .filter(|item| item.status == PlanStatus::InProgress)
            .map(|item| item.id.as_str())
            .collect();
        if running.len() > 1 {
            return Err(PlanRefusal::TwoInProgress(running.join(", ")));
        }
        Ok(())
    }
}

/// Session state that every compaction copies verbatim into its message, so the model never
/// loses it to a summary (the plan is one). The loop asks at each compaction.
pub trait Pinned: Send + Sync + fmt::Debug {
    /// The block of text to keep, heading included; `None` when there is nothing to keep.
    fn pinned(&self) -> Option<String>;
}

#[cfg(test)]
mod tests;
