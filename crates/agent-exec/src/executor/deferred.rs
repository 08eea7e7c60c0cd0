//! Tools offered only once they become relevant (`job` once a job exists): registered and
//! callable from the start, but left out of the tool list until their condition holds, so that
//! every request does not pay for them.
//!
//! The tool list stays a stable prefix for the server's prompt cache: a deferred tool that opens
//! is appended after every tool offered before it, and an opened tool is never withdrawn, so a
//! request's tools are the previous request's plus new ones at the end (docs/tools.md).

use std::sync::{Arc, Mutex};

/// Says whether a deferred tool has become relevant; asked before each model request until it
/// answers `true` once.
pub type Relevant = Arc<dyn Fn() -> bool + Send + Sync>;

/// The deferred tools of one executor and the order in which they opened.
#[derive(Clone, Default)]
pub(crate) struct Deferred {
    gates: Vec<(String, Relevant)>,
    opened: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.gates.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Deferred").field("tools", &names).field("opened", &self.opened()).finish()
    }
}

impl Deferred {
    /// Holds `name` back until `relevant` says otherwise.
    pub(crate) fn add(&mut self, name: String, relevant: Relevant) {
        self.gates.push((name, relevant));
    }

    /// Whether `name` is deferred (held back, or opened and offered at the end of the list).
    pub(crate) fn is_deferred(&self, name: &str) -> bool {
        self.gates.iter().any(|(gated, _)| gated == name)
    }

    /// The deferred tools that opened, in the order they opened.
    pub(crate) fn opened(&self) -> Vec<String> {
        self.opened.lock().map(|opened| opened.clone()).unwrap_or_default()
    }

    /// Opens the tools whose condition now holds; `true` when any opened.
    pub(crate) fn refresh(&self) -> bool {
        let Ok(mut opened) = self.opened.lock() else { return false };
        let mut changed = false;
        for (name, relevant) in &self.gates {
            if !opened.contains(name) && relevant() {
                opened.push(name.clone());
                changed = true;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn a_tool_opens_once_and_stays_in_opening_order() {
        let a = Arc::new(AtomicBool::new(false));
        let b = Arc::new(AtomicBool::new(false));
        let mut deferred = Deferred::default();
        let (a2, b2) = (a.clone(), b.clone());
        deferred.add("a".into(), Arc::new(move || a2.load(Ordering::SeqCst)));
        deferred.add("b".into(), Arc::new(move || b2.load(Ordering::SeqCst)));
        assert!(!deferred.refresh());
        b.store(true, Ordering::SeqCst);
        assert!(deferred.refresh());
        a.store(true, Ordering::SeqCst);
        b.store(false, Ordering::SeqCst);
        assert!(deferred.refresh());
        assert!(!deferred.refresh());
        assert_eq!(deferred.opened(), ["b", "a"]);
    }
}
