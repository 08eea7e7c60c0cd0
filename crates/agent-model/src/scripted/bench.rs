//! SSE parse throughput: a canned event stream through the real client path, without a socket.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use agent_core::{Item, Message, ModelClient, ModelError, ModelRequest, ToolChoice};
use async_openai::{error::OpenAIError, middleware::HttpRequestFactory};
use futures_util::StreamExt;
use serde_json::json;

use super::{
    render::{self, Ids},
    script::{Quirks, ScriptedCall, Turn},
};
use crate::{ChatClient, ClientConfig, ResponsesClient, connection::Connection};

/// What a throughput run measured.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    /// SSE bytes parsed.
    pub bytes: usize,
    /// Model events produced.
    pub events: usize,
    /// Time spent.
    pub elapsed: Duration,
}

impl Throughput {
    /// Megabytes (10^6 bytes) per second.
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Answers every request with the same SSE body.
#[derive(Clone)]
struct Canned(Arc<Vec<u8>>);

impl tower::Service<HttpRequestFactory> for Canned {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: HttpRequestFactory) -> Self::Future {
        let body = self.0.as_ref().clone();
        Box::pin(async move {
            let response = http::Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(body)
                .map_err(|error| OpenAIError::InvalidArgument(error.to_string()))?;
            Ok(reqwest::Response::from(response))
        })
    }
}

/// The same answer as [`sse_parse_throughput`], but only the `data:` payloads deserialised into
/// our wire types: no HTTP body, no SSE decoder, no accumulator. The difference between the two
/// figures is the cost of the client path around our types.
#[doc(hidden)]
pub fn serde_only_throughput(
    responses: bool,
    rounds: usize,
) -> Result<Throughput, serde_json::Error> {
    let events = bench_events(responses);
    let payloads: Vec<&str> = events
        .iter()
        .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
        .filter(|data| *data != "[DONE]")
        .collect();
    let bytes: usize = events.iter().map(String::len).sum();
    let started = Instant::now();
    let mut parsed = 0;
    for _ in 0..rounds {
        for payload in &payloads {
            if responses {
                serde_json::from_str::<crate::responses::wire::StreamEvent>(payload)?;
            } else {
                serde_json::from_str::<crate::chat::wire::ChatResponse>(payload)?;
            }
            parsed += 1;
        }
    }
    Ok(Throughput { bytes: bytes * rounds, events: parsed, elapsed: started.elapsed() })
}

fn bench_events(responses: bool) -> Vec<String> {
    let long = "fn main() { println!(\"hello, world\"); } // ".repeat(40);
    let turn = Turn {
        text: Some("The build failed because a lifetime is missing; let me look. ".repeat(60)),
        tool_calls: vec![
            ScriptedCall::new("call_1", "read_file", json!({"path": "src/lib.rs", "note": long})),
            ScriptedCall::new("call_2", "shell", json!({"command": "cargo test", "note": long})),
        ],
        quirks: Quirks { fragment_chars: 16, ..Quirks::default() },
        ..Turn::default()
    };
    let ids = Ids { n: 1, model: "bench".into() };
    if responses { render::responses_stream(&turn, &ids) } else { render::chat_stream(&turn, &ids) }
}

/// Streams one Chat answer whose text is a single content delta of `bytes` bytes (one SSE event
/// that large, the event cap raised to fit it) through the real client, and returns the time
/// taken: the SSE decoder is linear, so this grows in proportion to `bytes`.
#[doc(hidden)]
pub async fn one_large_event(bytes: usize) -> Result<Duration, ModelError> {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let body = chunk(json!({"content": "A".repeat(bytes)}), None)
        + &chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n";
    let mut config = ClientConfig::new("http://bench.invalid/v1", "bench");
    config.limits.max_event_bytes = bytes + (1 << 20);
    let connection = Connection::canned(&config, Canned(Arc::new(body.into_bytes())))?;
    let client = ChatClient::with_connection(connection);
    let items = [Item::Message(Message::user("go"))];
    let request = ModelRequest {
        instructions: "",
        items: &items,
        tools: &[],
        tool_choice: &ToolChoice::Auto,
        parallel_tool_calls: false,
        continuation: None,
        output_schema: None,
    };
    let started = Instant::now();
    let mut stream = client.stream(request).await?;
    while let Some(event) = stream.next().await {
        event?;
    }
    Ok(started.elapsed())
}

/// Streams a realistic answer (text in 16-character deltas, then two tool calls with long
/// argument fragments) `rounds` times through the Chat (`responses == false`) or Responses
/// client, with our SSE decoding, our serde types and the accumulator, and reports
/// the throughput.
#[doc(hidden)]
pub async fn sse_parse_throughput(
    responses: bool,
    rounds: usize,
) -> Result<Throughput, ModelError> {
    let events = bench_events(responses);
    let body: Vec<u8> = events.concat().into_bytes();
    let config = ClientConfig::new("http://bench.invalid/v1", "bench");
    let connection = Connection::canned(&config, Canned(Arc::new(body.clone())))?;
    let client: Box<dyn ModelClient> = if responses {
        Box::new(ResponsesClient::with_connection(connection))
    } else {
        Box::new(ChatClient::with_connection(connection))
    };
    let items = [Item::Message(Message::user("go"))];
    let started = Instant::now();
    let mut produced = 0;
    for _ in 0..rounds {
        let request = ModelRequest {
            instructions: "",
            items: &items,
            tools: &[],
            tool_choice: &ToolChoice::Auto,
            parallel_tool_calls: false,
            continuation: None,
            output_schema: None,
        };
        let mut stream = client.stream(request).await?;
        while let Some(event) = stream.next().await {
            event?;
            produced += 1;
        }
    }
    Ok(Throughput { bytes: body.len() * rounds, events: produced, elapsed: started.elapsed() })
}
