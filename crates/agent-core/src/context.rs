//! `ToolContext`: what a running tool knows about the call and the session around it.

use std::{path::Path, sync::Arc};

use tokio_util::sync::CancellationToken;

/// The context of one tool call. Cheap to clone: shared parts are reference-counted.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root (canonical, absolute). Tools resolve relative paths against it.
    pub workspace: Arc<Path>,
    /// Cancelled when the user interrupts, the batch is cancelled, or the call times out.
    pub cancel: CancellationToken,
    /// The `call_id` this call answers.
    pub call_id: Arc<str>,
    /// The session the call belongs to.
    pub session_id: Arc<str>,
    /// The tenant, for multi-tenant hosts.
    pub tenant_id: Option<Arc<str>>,
    /// The end user, for multi-user hosts.
    pub user_id: Option<Arc<str>>,
    /// When the permission policy allowed the call only because it judged every program of a
    /// command read-only: those programs, as the command names them. A tool that starts processes
    /// must let them execute nothing but these and its own shell (the bash tool does it with the
    /// sandbox's execute allow-list), so a program they start unasked cannot run. `None` when a
    /// person, a rule or the mode allowed the call.
    pub exec_allowlist: Option<Arc<[String]>>,
}

impl ToolContext {
    /// A context for `call_id` in `workspace`, with a fresh token and no tenant or user.
    pub fn new(workspace: Arc<Path>, session_id: Arc<str>, call_id: impl Into<Arc<str>>) -> Self {
        Self {
            workspace,
            cancel: CancellationToken::new(),
            call_id: call_id.into(),
            session_id,
            tenant_id: None,
            user_id: None,
            exec_allowlist: None,
        }
    }
}
