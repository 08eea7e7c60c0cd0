//! The vocabulary of the agent: what a conversation is made of, what a tool is, and what a model is.
//!
//! Every other crate speaks in these types. This crate owns:
//!
//! - conversation [`Item`]s (messages, tool calls, tool outputs, reasoning) that every adapter maps
//!   to and from its wire format;
//! - the [`Tool`] trait (object-safe, boxed futures) with [`ToolSpec`], [`ToolContext`],
//!   [`ToolOutput`] and [`ToolError`], and the typed-tool adapter [`Typed`] over [`TypedTool`], where
//!   one Rust input type gives the JSON Schema, the OpenAI strict schema and the argument validation;
//! - strict-schema conversion and argument validation in [`schema`];
//! - the [`ModelClient`] trait with its request and streamed [`ModelEvent`]s, the only way the agent
//!   loop ever sees a model.
//!
//! It must not do IO, spawn processes, read the environment, or know any provider's wire format:
//! everything here is testable with plain values.
//!
//! ```
//! use agent_core::{Effects, ToolContext, ToolError, ToolOutput, Typed, TypedTool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Input of the `shout` tool.
//! #[derive(Deserialize, JsonSchema)]
//! struct ShoutInput {
//!     /// The text to shout.
//!     text: String,
//! }
//!
//! struct Shout;
//!
//! impl TypedTool for Shout {
//!     type Input = ShoutInput;
//!     const NAME: &'static str = "shout";
//!     fn description(&self) -> String {
//!         "Returns the text in upper case.".to_owned()
//!     }
//!     fn effects(&self) -> Effects {
//!         Effects::READ_ONLY
//!     }
//!     async fn run(&self, input: ShoutInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(input.text.to_uppercase()))
//!     }
//! }
//!
//! let tool = Typed::new(Shout)?;
//! assert!(tool.spec().strict);
//! assert_eq!(tool.spec().parameters["additionalProperties"], false);
//! // The input type's name and doc comment are not sent: the tool description says it all.
//! assert!(tool.spec().parameters.get("title").is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod api_key;
mod context;
mod edits;
mod error;
mod files;
mod item;
mod model;
mod output;
pub mod schema;
mod shape;
mod tokens;
mod tool;
mod typed;

pub use crate::{
    api_key::ApiKey,
    context::{Boundary, DomainRule, HiddenPath, ToolContext},
    edits::{EditNote, EditObserver, EditedFile},
    error::{ToolError, ToolErrorKind},
    files::FileSystem,
    item::{CallOutput, Image, Item, Message, Reasoning, Role, ToolCall},
    model::{
        Continuation, ModelClient, ModelEndpoint, ModelError, ModelErrorKind, ModelEvent,
        ModelRequest, ModelStream, StopReason, ToolChoice, Usage,
    },
    output::{AnswerError, OutputSchema},
    shape::{
        BuiltinTool, CallShape, Grammar, GrammarSyntax, Reshaped, TextFormat, TextInput, ToolShape,
    },
    tokens::{CharEstimate, TokenCounter},
    tool::{Access, BoxFuture, Effects, PreparedCall, Tool, ToolOutput, ToolSpec},
    typed::{Typed, TypedTool},
};

/// The cancellation token shared by the loop, the executor and every tool.
pub use tokio_util::sync::CancellationToken;
