//! One session, assembled once: from resolved configuration to a running agent with everything
//! the `agent` program gives it (tools chosen for the model, plan and child agents, skills and
//! custom commands, hooks, MCP and LSP servers, the sandbox and its network proxy, checkpoints,
//! telemetry, project instructions), and the turn boundaries every front end shares.
//!
//! The CLI's `exec`, REPL, `tools call`, `mcp serve`, `acp`, `serve` and `batch` all open their
//! sessions here, and so can a program of your own (docs/library.md).

#![deny(missing_docs)]

pub mod agents;
pub mod checkpoints;
pub mod commands;
pub mod config;
mod error;
pub mod fork;
mod frontend;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
pub mod hooks;
pub mod log;
pub mod mcp;
pub mod network;
mod overrides;
pub mod plugins;
mod session;
pub mod settings;
pub mod shapes;
pub mod skills;
pub mod telemetry;
pub mod visible;
pub mod waiting;

pub use self::{
    error::{Error, Result},
    frontend::{Frontend, Silent},
    overrides::Overrides,
    session::{
        Launch, Session, StoppedByHook, model_client, tokio_runtime,
        toolbox::{Toolbox, ToolboxUse},
    },
    settings::Settings,
};

/// The library guide's programs compile (and the ones that need no server run) as this crate's
/// doctests: it depends on every crate they use.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
struct LibraryDocs;
