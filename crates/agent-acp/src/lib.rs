//! The Agent Client Protocol agent: an editor (the client) drives this runtime's sessions over
//! stdio, through the official SDK (`agent-client-protocol`, protocol v1, no unstable features).
//!
//! The crate owns the protocol side only: [`serve`] answers the client's requests and maps the
//! loop's [`agent_exec::agent::AgentEvent`]s onto `session/update` notifications; a [`Host`] (the
//! `agent` binary) builds the sessions, so configuration, models and tools stay where they are.
//! Decisions: `docs/acp.md`.

#![deny(missing_docs)]

mod approver;
mod asker;
mod error;
mod files;
mod frames;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
mod host;
mod modes;
mod replay;
mod server;
mod session;
mod updates;

pub use approver::AcpApprover;
pub use asker::AcpAsker;
pub use error::Error;
pub use files::ClientFiles;
pub use frames::{MAX_FRAME_BYTES, read_frame};
pub use host::{ClientMcpServer, Host, HostSession, Listed, Open, Opening};
pub use modes::{mode_from_id, mode_id};
pub use server::{Frames, serve};
pub use updates::{PlanEntry, PlanEntryStatus, plan_update};

/// The ACP protocol version this agent speaks.
pub const PROTOCOL_VERSION: u16 = 1;
