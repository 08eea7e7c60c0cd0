//! Reading a response body under [`ResponseLimits`]: whole (capped while it is read, never
//! buffered past the cap) or as a stream of SSE payloads pulled only as fast as the caller pulls.
//!
//! This replaces async-openai's body handling. Its whole-response path buffered any body without
//! a cap (1.5 GB took 1.57 GB of memory), and its stream path (`stream_mapped_raw_events`) decoded
//! events on a spawned task into an unbounded channel, so a server faster than the agent grew the
//! queue without limit (12 GB in 30 s). Here nothing runs ahead of the consumer: the next chunk is
//! read from the socket only when the decoder has no event left, and TCP flow control holds the
//! server back.

use std::{marker::PhantomData, pin::Pin};

use agent_core::{ModelError, ModelErrorKind};
use bytes::Bytes;
use futures_util::Stream;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::{
    error,
    limits::{Deadlines, Exceeded, ResponseLimits},
    sse,
};

/// When the attempt that got a response was sent; the transport stores it in the response's
/// extensions so the first-byte deadline counts from there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptStarted(pub(crate) Instant);

/// The body of a successful response, with its deadlines.
pub(crate) struct Body {
    response: reqwest::Response,
    deadlines: Deadlines,
    attempt: Instant,
    /// Bytes read so far.
    read: u64,
}

/// A stream of parsed SSE payloads, ending at `[DONE]` or at the end of the body.
pub(crate) type WireStream<T> = Pin<Box<dyn Stream<Item = Result<T, ModelError>> + Send>>;

impl Body {
    pub(crate) fn new(response: reqwest::Response, deadlines: Deadlines) -> Self {
        let attempt = response
            .extensions()
            .get::<AttemptStarted>()
            .map_or_else(Instant::now, |started| started.0);
        Self { response, deadlines, attempt, read: 0 }
    }

    /// The next chunk, or `None` at the end of the body; fails at a deadline, when the body would
    /// pass `cap` bytes, or when the connection breaks.
    async fn chunk(&mut self, cap: Exceeded) -> Result<Option<Bytes>, ModelError> {
        let next = self.response.chunk();
        let read = match self.deadlines.next_read(self.attempt, Instant::now(), self.read > 0) {
            Some((at, missed)) => tokio::time::timeout_at(at, next)
                .await
                .map_err(|_elapsed| self.deadlines.error(missed))?,
            None => next.await,
        };
        let chunk = read.map_err(|error| {
            ModelError::new(
                ModelErrorKind::Network,
                format!("the response stream broke: {}", error::chain(&error)),
            )
        })?;
        let Some(chunk) = chunk else { return Ok(None) };
        let limit = match cap {
            Exceeded::BodyBytes(limit) | Exceeded::StreamBytes(limit) => limit,
            Exceeded::StreamEvents(_) | Exceeded::EventBytes(_) => u64::MAX,
        };
        self.read = self.read.saturating_add(chunk.len() as u64);
        if self.read > limit {
            return Err(cap.error());
        }
        Ok(Some(chunk))
    }

    /// The whole body, refused as soon as it is known to be larger than `max_body_bytes`: from
    /// its `Content-Length`, else while it is read. Chunks are kept as they came and joined once.
    pub(crate) async fn whole(mut self, limits: &ResponseLimits) -> Result<Vec<u8>, ModelError> {
        let cap = Exceeded::BodyBytes(limits.max_body_bytes);
        if self.response.content_length().is_some_and(|length| length > limits.max_body_bytes) {
            return Err(cap.error());
        }
        let mut chunks = Vec::new();
        while let Some(chunk) = self.chunk(cap).await? {
            chunks.push(chunk);
        }
        Ok(chunks.concat())
    }

    /// The body as a stream of `data:` payloads parsed as `T`, under the stream limits.
    /// `[DONE]` ends it; `event: keepalive` and comments are skipped.
    pub(crate) fn events<T>(self, limits: &ResponseLimits) -> WireStream<T>
    where
        T: DeserializeOwned + Send + 'static,
    {
        let state = Events {
            body: self,
            decoder: sse::Decoder::new(limits.max_event_bytes),
            events: 0,
            limits: limits.clone(),
            ended: false,
            parsed: PhantomData,
        };
        Box::pin(futures_util::stream::unfold(state, |mut state| async move {
            if state.ended {
                return None;
            }
            let next = state.next().await;
            state.ended = !matches!(next, Some(Ok(_)));
            next.map(|item| (item, state))
        }))
    }
}

struct Events<T> {
    body: Body,
    decoder: sse::Decoder,
    events: u64,
    limits: ResponseLimits,
    ended: bool,
    parsed: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Events<T> {
    async fn next(&mut self) -> Option<Result<T, ModelError>> {
        loop {
            let event = match self.decoder.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => {
                    match self.body.chunk(Exceeded::StreamBytes(self.limits.max_stream_bytes)).await
                    {
                        Ok(Some(chunk)) => self.decoder.push(chunk),
                        Ok(None) => return None,
                        Err(error) => return Some(Err(error)),
                    }
                    continue;
                }
                Err(sse::EventTooLarge) => {
                    return Some(Err(Exceeded::EventBytes(self.limits.max_event_bytes).error()));
                }
            };
            self.events += 1;
            if self.events > self.limits.max_stream_events {
                return Some(Err(Exceeded::StreamEvents(self.limits.max_stream_events).error()));
            }
            if event.data == b"[DONE]" {
                return None;
            }
            if event.name == "keepalive" {
                continue;
            }
            return Some(
                serde_json::from_slice(&event.data)
                    .map_err(|parse| error::bad_json(&parse, &event.data)),
            );
        }
    }
}
