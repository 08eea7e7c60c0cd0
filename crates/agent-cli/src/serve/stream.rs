//! A session's events over Server-Sent Events: each event's `data` is one line of the
//! `exec --json` stream, its `id` the event's number in the session, so a client that reconnects
//! with `Last-Event-ID` gets exactly what it missed.

use std::{
    collections::VecDeque,
    convert::Infallible,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;

use super::{
    hub::{Live, MAX_STREAMS, Refusal},
    journal::{Entry, Gap},
};

/// Events taken from the journal at once for one stream.
const BATCH: usize = 256;

/// A comment line this often keeps proxies and clients from timing out an idle stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Counts the stream against the session's bound while it lives.
struct Slot(Arc<Live>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The stream of `live`'s events after `last`. Refused when those events are no longer kept
/// (the client should read the transcript instead), or when the session has its most streams.
pub(crate) fn events(
    live: Arc<Live>,
    last: u64,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Refusal> {
    match live.journal.after(last, 0) {
        Ok(_) | Err(Gap::Closed) => {}
        Err(Gap::Evicted { oldest }) => {
            return Err(Refusal::Gone(format!(
                "the events after {last} are no longer kept (the oldest kept is {oldest}); \
                 read the transcript, then stream from the session's last_event_id"
            )));
        }
        Err(Gap::Unknown { last }) => {
            return Err(Refusal::Gone(format!(
                "event {last} was never sent in this session (a stream of an earlier server?)"
            )));
        }
    }
    if live.streams.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        live.streams.fetch_sub(1, Ordering::SeqCst);
        return Err(Refusal::Full(format!(
            "session {} already has {MAX_STREAMS} event streams open",
            live.opened.id
        )));
    }
    let state = (Slot(live), last, VecDeque::<Entry>::new());
    let stream = futures_util::stream::unfold(state, |(slot, mut last, mut ready)| async move {
        if ready.is_empty() {
            // A gap here means the client read too slowly and the journal moved past it, or
            // the session closed: the stream ends, and a reconnect says which.
            ready = slot.0.journal.wait_after(last, BATCH).await.ok()?.into();
        }
        let entry = ready.pop_front()?;
        last = entry.id;
        let event = Event::default().id(entry.id.to_string()).data(&*entry.data);
        Some((Ok(event), (slot, last, ready)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
