//! Entry points for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): the SSE decoder and
//! both APIs' stream assemblers, fed a body cut into chunks exactly where the caller says.
//!
//! The glue repeats what `body.rs` and `events.rs` do around the decoder and the
//! accumulators (the event cap, `[DONE]`, keepalives, the empty stream, the first error ending
//! it), without the HTTP client and the async runtime, so one input costs microseconds.

use std::{collections::VecDeque, sync::Arc};

use agent_core::{ModelError, ModelErrorKind, ModelEvent};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::{
    chat::{stream::ChatAccumulator, stream::Shared, wire::ChatResponse},
    error,
    events::Accumulator,
    responses::{stream::ResponsesAccumulator, wire::StreamEvent},
    sse,
};

/// One event the SSE decoder dispatched: its name and its data.
pub type SseEvent = (String, Vec<u8>);

/// An event grew past the decoder's cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// Every event of `chunks` (pushed one after another) with an event cap of `max_event_bytes`,
/// ending at the first event over the cap.
pub fn sse_events(chunks: &[&[u8]], max_event_bytes: usize) -> (Vec<SseEvent>, Option<TooLarge>) {
    let mut decoder = sse::Decoder::new(max_event_bytes);
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.push(Bytes::copy_from_slice(chunk));
        loop {
            match decoder.next_event() {
                Ok(Some(event)) => events.push((event.name, event.data)),
                Ok(None) => break,
                Err(sse::EventTooLarge) => return (events, Some(TooLarge)),
            }
        }
    }
    (events, None)
}

/// What a Chat Completions stream with this body comes to: its events, then the error that ended
/// it, if one did.
pub fn chat_stream(chunks: &[&[u8]]) -> (Vec<ModelEvent>, Option<ModelError>) {
    assemble::<ChatResponse, _>(chunks, ChatAccumulator::new(Arc::new(Shared::default())))
}

/// What a Responses stream with this body comes to, as [`chat_stream`].
pub fn responses_stream(chunks: &[&[u8]]) -> (Vec<ModelEvent>, Option<ModelError>) {
    assemble::<StreamEvent, _>(chunks, ResponsesAccumulator::default())
}

/// The cap on one event in the stream targets: small, so the fuzzer reaches it.
const MAX_EVENT_BYTES: usize = 4096;

fn assemble<T, A>(chunks: &[&[u8]], mut accumulator: A) -> (Vec<ModelEvent>, Option<ModelError>)
where
    T: DeserializeOwned,
    A: Accumulator<Chunk = T>,
{
    let mut delivered = Vec::new();
    let mut out = VecDeque::new();
    let mut received = false;
    let (events, too_large) = sse_events(chunks, MAX_EVENT_BYTES);
    let mut done = false;
    for (name, data) in events {
        if accumulator.is_complete() {
            break;
        }
        if data == b"[DONE]" {
            done = true;
            break;
        }
        if name == "keepalive" {
            continue;
        }
        let step = serde_json::from_slice::<T>(&data)
            .map_err(|parse| error::bad_json(&parse, &data))
            .and_then(|chunk| {
                received = true;
                accumulator.push(chunk, &mut out)
            });
        // The stream's first error ends it and drops what that step queued (`events::pump`);
        // what earlier steps queued was handed out already.
        if let Err(error) = step {
            return (delivered, Some(error));
        }
        delivered.extend(out.drain(..));
    }
    if accumulator.is_complete() {
        return (delivered, None);
    }
    let failure = if too_large.is_some() && !done {
        Some(ModelError::new(ModelErrorKind::BadResponse, "an event over the cap"))
    } else if !received {
        Some(ModelError::new(ModelErrorKind::BadResponse, "an empty event stream"))
    } else {
        accumulator.finish(&mut out).err()
    };
    if failure.is_none() {
        delivered.extend(out.drain(..));
    }
    (delivered, failure)
}
