//! Model streams: the SSE decoder and both APIs' stream assemblers, whole against split.

use agent_model::fuzz::{chat_stream, responses_stream, sse_events};

use crate::cuts;

/// The decoder under a cap chosen by the first byte: the body split at any byte, or cut into
/// single bytes, gives the same events and fails (or not) at the same event as the whole body.
pub(super) fn sse(data: &[u8]) {
    let Some((&first, body)) = data.split_first() else { return };
    let cap = if first == 0xff { usize::MAX } else { 1 + usize::from(first) * 8 };
    let whole = sse_events(&[body], cap);
    for at in cuts::points(body.len(), 512) {
        assert_eq!(sse_events(&cuts::split(body, at), cap), whole, "split at {at}");
    }
    assert_eq!(sse_events(&cuts::bytes(body), cap), whole, "byte by byte");
    if whole.1.is_none() {
        for (_, event) in &whole.0 {
            assert!(event.len() <= cap, "an event of {} bytes passed a cap of {cap}", event.len());
        }
    }
}

/// The Chat Completions assembler: split anywhere, the same events and the same error.
pub(super) fn chat(data: &[u8]) {
    let whole = chat_stream(&[data]);
    for at in cuts::points(data.len(), 64) {
        assert_eq!(chat_stream(&cuts::split(data, at)), whole, "split at {at}");
    }
    assert_eq!(chat_stream(&cuts::bytes(data)), whole, "byte by byte");
}

/// The Responses assembler: split anywhere, the same events and the same error.
pub(super) fn responses(data: &[u8]) {
    let whole = responses_stream(&[data]);
    for at in cuts::points(data.len(), 64) {
        assert_eq!(responses_stream(&cuts::split(data, at)), whole, "split at {at}");
    }
    assert_eq!(responses_stream(&cuts::bytes(data)), whole, "byte by byte");
}
