//! The built-in tools, one module each.
//!
//! A tool here gets validated input and a [`agent_core::ToolContext`] and returns output or a typed
//! error. It must not contain dispatch logic (lookup, validation, permissions, timeouts, capping):
//! that is `agent-exec`'s job. Tools that start processes do so through `agent-exec`'s sandbox.
