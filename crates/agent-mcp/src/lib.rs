//! MCP on both sides: the tools of any MCP server as ordinary registry tools, and the
//! registry served to MCP clients ([`ToolServer`]).
//!
//! The protocol and its transports are the official Rust SDK, `rmcp`. An MCP tool implements
//! `agent_core::Tool` ([`McpTool`]), so it takes the one dispatch path of the built-ins:
//! validation, permission, time limit and cancellation, output cap. Decisions: `docs/mcp.md`.

#![deny(missing_docs)]

mod config;
mod content;
mod elicitation;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
mod handler;
mod incoming;
mod late;
mod launch;
mod name;
mod protocol;
mod questions;
mod search;
mod serve;
mod serve_http;
mod server;
mod session;
mod tool;

pub use crate::{
    config::{ConfigError, MAX_TIMEOUT_SECS, ServerConfig, TransportKind},
    elicitation::{APPROVAL_KEY, RuleAdvice},
    late::{McpTools, ToolBudget, ToolCost},
    name::{MAX_NAME, hashed_name, tool_name},
    protocol::{Protocol, is_modern},
    questions::{Answer, AskApprover, Elicit, Field, Question, Questions, defaults},
    serve::{ServeError, ToolServer, annotations, mcp_tool},
    serve_http::{HttpAccess, HttpServer},
    server::{MAX_RESTARTS, Server, ServerEnv, StartError, UNAVAILABLE},
    session::{McpSession, ServerStatus, Started},
    tool::{BadTool, MAX_ROUNDS, McpTool, effects},
};
