//! The pump from a stream of parsed wire chunks to [`ModelEvent`]s, shared by both adapters.

use std::collections::VecDeque;

use agent_core::{ModelError, ModelErrorKind, ModelEvent, ModelStream};
use futures_util::StreamExt;

use crate::{body::WireStream, connection::Connection};

/// Turns wire chunks into events. `push` may queue deltas or complete items; `finish` runs when
/// the HTTP stream ends and must fail if the response never reached a terminal state.
pub(crate) trait Accumulator: Send {
    type Chunk;

    fn push(
        &mut self,
        chunk: Self::Chunk,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError>;

    fn finish(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;

    /// Whether the terminal event was already queued, so nothing more needs to be read.
    fn is_complete(&self) -> bool;
}

struct Pump<'a, A: Accumulator> {
    inner: WireStream<A::Chunk>,
    accumulator: A,
    queue: VecDeque<ModelEvent>,
    ended: bool,
    /// Whether any chunk arrived, to name the empty body for what it is.
    received: bool,
    connection: &'a Connection,
}

/// Drives `accumulator` over `inner`, pulling the next chunk only when the caller wants the next
/// event and none is queued, so a fast server is held back rather than buffered. The first error
/// ends the stream: a response that broke
/// after output began is reported, never replayed.
pub(crate) fn pump<'a, A>(
    inner: WireStream<A::Chunk>,
    accumulator: A,
    connection: &'a Connection,
) -> ModelStream<'a>
where
    A: Accumulator + 'a,
    A::Chunk: 'static,
{
    let state = Pump {
        inner,
        accumulator,
        queue: VecDeque::new(),
        ended: false,
        received: false,
        connection,
    };
    Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.queue.pop_front() {
                return Some((Ok(event), state));
            }
            if state.ended {
                return None;
            }
            if state.accumulator.is_complete() {
                state.ended = true;
                continue;
            }
            let step = match state.inner.next().await {
                Some(Ok(chunk)) => {
                    state.received = true;
                    state.accumulator.push(chunk, &mut state.queue)
                }
                Some(Err(wire)) => Err(wire),
                // A success with an empty event stream is how some servers report a failure they
                // hit after sending the headers (llama-cpp-python: streaming with tool_choice
                // "auto" in its chatml-function-calling mode). It is an error, never an answer.
                None if !state.received => {
                    state.ended = true;
                    Err(ModelError::new(
                        ModelErrorKind::BadResponse,
                        "the server answered with an empty event stream (no event, no [DONE]); \
                         it probably failed after accepting the request, and its log says why",
                    ))
                }
                None => {
                    state.ended = true;
                    state.accumulator.finish(&mut state.queue)
                }
            };
            if let Err(failure) = step {
                state.ended = true;
                state.queue.clear();
                return Some((Err(state.connection.scrub(failure)), state));
            }
        }
    }))
}

/// The events of a whole (non-streamed) response, as a stream.
pub(crate) fn ready<'a>(events: VecDeque<ModelEvent>) -> ModelStream<'a> {
    Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))
}

/// The longest model name kept from a response: a real one is a few dozen bytes, and it ends up
/// in a telemetry attribute, so a server cannot make that attribute large.
const MAX_MODEL_NAME: usize = 256;

/// The model a response names, when it names one of sensible length.
pub(crate) fn served_model(name: Option<String>) -> Option<String> {
    name.filter(|name| !name.is_empty() && name.len() <= MAX_MODEL_NAME)
}
