//! The runtime between a model's tool calls and the tools: registry, dispatch, permissions, hooks
//! and the agent loop, with the facilities a loop needs (compaction, the plan, child agents,
//! telemetry) and seams for what others keep (`Background`, `Checkpointer`, `LateTools`).
//!
//! The OS sandbox, process spawning, background jobs and the secret list are the `agent-sandbox`
//! crate, re-exported here as [`sandbox`], [`process`], [`jobs`] and [`secret`].
//!
//! This crate owns stages 3–6 of a tool call (parse, validate, permission, run under a time limit and
//! cancellation, cap the output) and turns every failure into an observation the model reads. It sees
//! models only through [`agent_core::ModelClient`]; it must not depend on a concrete model adapter or
//! on the built-in tools.
//!
//! The front door is [`Agent::builder`]: tools, permission policy, workspace and limits in, a
//! [`Finish`](agent::Finish) out of every prompt, the conversation kept in between. Here the model
//! is a recorded conversation played back offline; any `ModelClient` (`agent_model::ChatClient`
//! for a real server) takes its place:
//!
//! ```
//! use agent_core::{CallOutput, Item, Message, ToolCall};
//! use agent_exec::{Agent, agent::Finish};
//! use agent_model::ReplayClient;
//! use agent_tools::BuiltinTools;
//!
//! let call = ToolCall {
//!     call_id: "c1".into(),
//!     name: "uppercase".into(),
//!     arguments: r#"{"text":"hi"}"#.into(),
//!     item_id: None,
//!     shape: agent_core::CallShape::Function,
//! };
//! let output =
//!     CallOutput { call_id: "c1".into(), output: "HI".into(), ok: true, error: None, images: vec![] };
//! let recording = vec![
//!     Item::Message(Message::user("shout hi")),
//!     Item::ToolCall(call),
//!     Item::ToolOutput(output),
//!     Item::Message(Message::assistant("HI")),
//! ];
//! let workspace = tempfile::tempdir()?;
//! let mut agent = Agent::builder(workspace.path())
//!     .builtin_tools(&Default::default())?
//!     .build(ReplayClient::new("example", recording))?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let finish = runtime.block_on(agent.prompt("shout hi"));
//! assert_eq!(finish, Finish::Answered("HI".into()));
//! // The tool really ran: its output is in the conversation.
//! assert!(matches!(&agent.conversation().items[2], Item::ToolOutput(out) if out.output == "HI"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod agent;
pub mod ask;
mod background;
mod builder;
mod checkpointer;
pub mod child;
pub mod compaction;
mod conversation;
mod error;
mod executor;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
pub mod hooks;
mod output;
mod permission;
pub mod plan;
pub mod project_doc;
mod registry;
mod schema_tool;
pub mod telemetry;
mod transcript;
mod workspace;

// The OS half lives in its own crate and keeps its paths here (`agent_exec::sandbox::SandboxPolicy`,
// `agent_exec::jobs::Jobs`), so code written against this crate's sandbox keeps compiling.
pub use agent_sandbox::{jobs, network, process, sandbox, secret, writes};

pub use crate::{
    background::Background,
    builder::{Agent, AgentBuilder, DEFAULT_INSTRUCTIONS},
    checkpointer::{CallIntent, CheckpointFailed, Checkpointer, PendingCall},
    error::{Error, Result},
    executor::{Executor, ExecutorConfig, Outcome, ToolLimit, deferred::Relevant},
    hooks::{Hook, HookEvent, Hooks},
    output::DEFAULT_OUTPUT_CAP,
    permission::{
        Approval, ApprovalRequest, Approver, Ask, Decision, PermissionMode, PermissionPolicy,
        PolicyBuilder, Remedy, RuleAction, RuleWarning, Verdict, secrets_for_rules,
    },
    registry::{LateTools, Registry, ToolLimits},
    schema_tool::SchemaTool,
    transcript::{Loaded, Transcript},
    workspace::Workspace,
};

// The Rust blocks of these documents are compiled (and, unless marked `no_run`, run) as doctests
// of this crate, so the documented API cannot drift from the real one.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/executor.md")]
struct ExecutorDocs;
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDocs;
#[cfg(doctest)]
#[doc = include_str!("../../../docs/permissions.md")]
struct PermissionsDocs;
#[cfg(doctest)]
#[doc = include_str!("../../../docs/sandbox.md")]
struct SandboxDocs;
