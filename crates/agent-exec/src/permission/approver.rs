//! The `Approver`: who answers when the policy says "ask".

use agent_core::{Access, BoxFuture};

/// What the approver is asked about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The `call_id` of the call.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The raw argument text the model sent.
    pub arguments: String,
    /// What the call will touch.
    pub access: Vec<Access>,
    /// Why the policy asks, in one line (`edits need approval in default mode`).
    pub reason: String,
    /// The narrowest rules that would allow calls like this one for the rest of the session
    /// (`Bash(cargo test *)`); empty when no rule is safe to suggest (interpreters, protected
    /// paths, commands no rule can approve).
    pub suggested_rules: Vec<String>,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    AllowOnce,
    /// Run this call and allow the same kind of call until the session ends: the suggested rules
    /// when there are some, otherwise calls with exactly this tool and access.
    AllowForSession,
    /// Do not run it; the reason (if any) is passed to the model.
    Deny {
        /// What the user said, passed to the model.
        reason: Option<String>,
    },
}

/// Answers "ask" decisions, typically by prompting the user.
///
/// Implementors may take as long as they need (the call's time limit starts after approval);
/// the executor stops waiting when the batch is cancelled. Object-safe: the executor holds an
/// `Arc<dyn Approver>`.
pub trait Approver: Send + Sync {
    /// Decides whether the call may run.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;

    /// Whether this call can be put to someone at all. An approver that serves several callers
    /// (an MCP server whose clients may or may not support elicitation) says `false` for a call
    /// whose caller cannot be asked; the executor then refuses it exactly as it does without an
    /// approver, naming the rule or mode that would allow it.
    fn can_answer(&self, _request: &ApprovalRequest) -> bool {
        true
    }
}
