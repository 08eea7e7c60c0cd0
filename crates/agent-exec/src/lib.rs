//! The runtime between a model's tool calls and the tools: registry, dispatch, permissions,
//! sandboxes and the agent loop.
//!
//! This crate owns stages 3–6 of a tool call (parse, validate, permission, run under a time limit and
//! cancellation, cap the output) and turns every failure into an observation the model reads. It sees
//! models only through [`agent_core::ModelClient`]; it must not depend on a concrete model adapter or
//! on the built-in tools.

pub mod agent;
mod batch;
pub mod code;
mod error;
mod executor;
mod output;
pub mod permission;
pub mod process;
mod registry;
pub mod sandbox;
mod schema_tool;
pub mod secret;
mod workspace;

pub use crate::{
    error::{Error, Result},
    executor::{Executor, ExecutorConfig, Outcome},
    output::DEFAULT_OUTPUT_CAP,
    permission::{
        Approval, ApprovalRequest, Approver, PermissionMode, PermissionPolicy, PolicyBuilder,
        RuleAction, RuleWarning, Verdict,
    },
    registry::{Registry, ToolLimits},
    schema_tool::SchemaTool,
    workspace::Workspace,
};
