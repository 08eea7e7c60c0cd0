//! Model adapters: [`agent_core::ModelClient`] over OpenAI's Chat Completions and Responses APIs.
//!
//! This is the only crate that knows provider JSON. It owns the wire types, transport, retries,
//! streaming and provider quirks, and a scripted OpenAI-compatible server for tests and demos. It
//! must not know about tools beyond [`agent_core::ToolSpec`].
