//! The runtime between a model's tool calls and the tools: registry, dispatch, permissions,
//! sandboxes and the agent loop.
//!
//! This crate owns stages 3–6 of a tool call (parse, validate, permission, run under a time limit and
//! cancellation, cap the output) and turns every failure into an observation the model reads. It sees
//! models only through [`agent_core::ModelClient`]; it must not depend on a concrete model adapter or
//! on the built-in tools.

pub mod code;
pub mod process;
pub mod sandbox;
