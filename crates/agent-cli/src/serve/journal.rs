//! A session's events, numbered from 1 and kept in a bounded buffer: every SSE stream of the
//! session reads from it, and a stream that reconnects with `Last-Event-ID` gets what it missed
//! from it, as long as the buffer still holds it.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
};

use tokio::sync::Notify;

use crate::events::ExecEvent;

/// Events kept per session for replay (docs/limits.md).
pub(crate) const MAX_EVENTS: usize = 4096;
/// Bytes of event text kept per session for replay (docs/limits.md).
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// One numbered event, as its SSE `data` line.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) id: u64,
    pub(crate) data: Arc<str>,
}

/// Why a stream cannot go on from where it asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gap {
    /// Events after the asked id have already left the buffer; `oldest` is the first kept.
    Evicted { oldest: u64 },
    /// The asked id was never given out (a stream of an earlier server, say).
    Unknown { last: u64 },
    /// The session was closed: nothing more will come.
    Closed,
}

#[derive(Debug, Default)]
struct Inner {
    /// The id the next event gets.
    next: u64,
    events: VecDeque<Entry>,
    bytes: usize,
    closed: bool,
}

/// The event buffer of one session.
#[derive(Debug)]
pub(crate) struct Journal {
    inner: Mutex<Inner>,
    notify: Notify,
}

impl Default for Journal {
    fn default() -> Self {
        Self { inner: Mutex::new(Inner { next: 1, ..Inner::default() }), notify: Notify::new() }
    }
}

impl Journal {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Plain data: a panic while it was held cannot leave it half-changed.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an event and wakes every stream; the oldest events go when a bound is passed
    /// (the newest always stays).
    pub(crate) fn push(&self, event: &ExecEvent) -> u64 {
        let data: Arc<str> = match serde_json::to_string(event) {
            Ok(text) => text.into(),
            Err(_) => return self.last_id(),
        };
        let id = {
            let mut inner = self.lock();
            let id = inner.next;
            inner.next += 1;
            inner.bytes += data.len();
            inner.events.push_back(Entry { id, data });
            while inner.events.len() > 1
                && (inner.events.len() > MAX_EVENTS || inner.bytes > MAX_BYTES)
            {
                if let Some(gone) = inner.events.pop_front() {
                    inner.bytes -= gone.data.len();
                }
            }
            id
        };
        self.notify.notify_waiters();
        id
    }

    /// The id of the newest event (0 before the first).
    pub(crate) fn last_id(&self) -> u64 {
        self.lock().next - 1
    }

    /// Ends every stream; nothing is pushed after this.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Up to `limit` events after `last`, or why the stream cannot have them.
    pub(crate) fn after(&self, last: u64, limit: usize) -> Result<Vec<Entry>, Gap> {
        let inner = self.lock();
        if last >= inner.next {
            return Err(Gap::Unknown { last });
        }
        let oldest = inner.events.front().map_or(inner.next, |entry| entry.id);
        if last + 1 < oldest {
            return Err(Gap::Evicted { oldest });
        }
        let skip = usize::try_from(last + 1 - oldest).unwrap_or(usize::MAX);
        let found: Vec<Entry> = inner.events.iter().skip(skip).take(limit).cloned().collect();
        if found.is_empty() && inner.closed {
            return Err(Gap::Closed);
        }
        Ok(found)
    }

    /// Waits until there are events after `last` and returns up to `limit` of them.
    pub(crate) async fn wait_after(&self, last: u64, limit: usize) -> Result<Vec<Entry>, Gap> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before looking, so a push between the look and the wait is not missed.
            notified.as_mut().enable();
            let found = self.after(last, limit)?;
            if !found.is_empty() {
                return Ok(found);
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> ExecEvent {
        ExecEvent::TextDelta { text: "x".repeat(n) }
    }

    #[test]
    fn a_resume_gets_exactly_what_follows_or_says_it_is_gone() {
        let journal = Journal::default();
        assert_eq!(journal.after(0, 10).map(|found| found.len()), Ok(0));
        for _ in 0..MAX_EVENTS + 5 {
            journal.push(&text(1));
        }
        let last = journal.last_id();
        assert_eq!(last, (MAX_EVENTS + 5) as u64);
        let ids: Vec<u64> = journal.after(last - 3, 10).unwrap().iter().map(|e| e.id).collect();
        assert_eq!(ids, [last - 2, last - 1, last]);
        assert_eq!(journal.after(0, 10).unwrap_err(), Gap::Evicted { oldest: 6 });
        assert_eq!(journal.after(5, 1).unwrap()[0].id, 6);
        assert_eq!(journal.after(last + 1, 1).unwrap_err(), Gap::Unknown { last: last + 1 });
        journal.close();
        assert_eq!(journal.after(last, 1).unwrap_err(), Gap::Closed);
    }

    #[test]
    fn the_bytes_kept_are_bounded_and_the_newest_event_always_stays() {
        let journal = Journal::default();
        for _ in 0..10 {
            journal.push(&text(MAX_BYTES / 4));
        }
        let kept = journal.after(journal.last_id() - 1, 10).unwrap();
        assert_eq!(kept.len(), 1);
        assert!(journal.lock().bytes <= MAX_BYTES);
        journal.push(&text(MAX_BYTES * 2));
        assert_eq!(journal.lock().events.len(), 1);
    }
}
