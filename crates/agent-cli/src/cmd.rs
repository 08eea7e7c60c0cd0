//! The one-shot commands: `agent exec` (one prompt), `agent tools` (the tools without a model) and
//! `agent sandbox` (the OS sandbox's report).

pub(crate) mod acp;
pub(crate) mod agents;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod plugin;
pub(crate) mod sandbox;
pub(crate) mod skills;
pub(crate) mod tools;
pub(crate) mod undo;
pub(crate) mod worktree;
