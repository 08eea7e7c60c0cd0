//! Model adapters: [`agent_core::ModelClient`] over OpenAI's Chat Completions and Responses APIs.
//!
//! This is the only crate that knows provider JSON. It owns the wire types, transport, retries,
//! streaming and provider quirks, and a scripted OpenAI-compatible server for tests and demos. It
//! must not know about tools beyond [`agent_core::ToolSpec`].
//!
//! - [`ChatClient`] speaks Chat Completions, the API every compatible server has.
//! - [`ResponsesClient`] speaks the Responses API, continuing stored responses with
//!   `previous_response_id`, or stateless with encrypted reasoning.
//! - [`ReplayClient`] plays a recorded conversation back, offline.
//! - [`ClientConfig`] (base URL, [`ApiKey`], model, [`ResponseLimits`], [`RetryPolicy`])
//!   configures both.
//! - `scripted` (feature `scripted-server`) is a real loopback HTTP server that plays a script of
//!   turns and faults, for the tests and demos of every crate.
//!
//! Our own lenient wire types absorb odd fields from compatible servers; our transport has one
//! retry policy; bodies are read by us under deadlines and size caps, and streams are decoded by
//! our own linear SSE decoder as fast as the caller pulls (see `docs/models.md`).
//!
//! ```no_run
//! use agent_core::{Item, Message, ModelClient, ModelRequest, ToolChoice};
//! use agent_model::{ApiKey, ChatClient, ClientConfig};
//! use futures_util::StreamExt;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ClientConfig::new("https://api.openai.com/v1", "gpt-4.1")
//!     .with_api_key(ApiKey::new("sk-…"));
//! let client = ChatClient::new(&config)?;
//! let items = [Item::Message(Message::user("Say hi."))];
//! let request = ModelRequest {
//!     instructions: "You are terse.",
//!     items: &items,
//!     tools: &[],
//!     tool_choice: &ToolChoice::Auto,
//!     parallel_tool_calls: false,
//!     continuation: None,
//!     output_schema: None,
//! };
//! let mut events = client.stream(request).await?;
//! while let Some(event) = events.next().await {
//!     let _event = event?;
//! }
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod body;
mod chat;
mod config;
mod connection;
mod custom;
mod empty_answer;
mod error;
mod events;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
mod images;
mod lenient;
mod limits;
mod quirks;
mod replay;
mod responses;
#[cfg(feature = "scripted-server")]
pub mod scripted;
mod server_window;
mod sse;
mod tokens;
mod tools;
mod transport;
mod vocabulary;

pub use crate::{
    chat::ChatClient,
    config::{ClientConfig, RetryPolicy},
    images::{MAX_REQUEST_IMAGE_BYTES, sees_images},
    limits::ResponseLimits,
    replay::ReplayClient,
    responses::ResponsesClient,
    server_window::server_context_window,
    tokens::{
        BpeCounter, DEFAULT_CONTEXT_WINDOW, Encoding, context_window, counter_for, estimate_tokens,
        fixed_tokens, tool_tokens,
    },
    tools::{chat_tools_json, responses_tools_json},
};
/// The key type lives in agent-core so the model client and the web search tool share it.
pub use agent_core::ApiKey;

// The Rust blocks of this document are compiled and run as doctests of this crate, so the
// documented API cannot drift from the real one.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/models.md")]
struct ModelsDocs;
