//! The executor a child agent runs under: the parent's tools (narrowed), policy (narrowed), hooks
//! (told the child's id), approver (told the agent's name), MCP connections and workspace.

use std::{path::PathBuf, sync::Arc};

use agent_core::{BoxFuture, Tool, ToolError, ToolErrorKind, ToolSpec};

use super::{Executor, ExecutorConfig};
use crate::{
    checkpointer::Checkpointer,
    hooks::Hooks,
    permission::{Approval, ApprovalRequest, Approver, PermissionMode, PermissionPolicy},
    registry::{LateTools, Registry, ToolLimits},
};

/// What every child of a session inherits, taken from the parent's executor once it is built.
pub(crate) struct ChildTemplate {
    registry: Registry,
    policy: PermissionPolicy,
    approver: Option<Arc<dyn Approver>>,
    hooks: Hooks,
    config: ExecutorConfig,
    late: Option<Arc<dyn LateTools>>,
    /// The parent's: a child's writes belong to the parent's turn, and are undone with it.
    checkpoints: Option<Arc<dyn Checkpointer>>,
}

/// Who a child executor is for.
pub(crate) struct ChildScope<'a> {
    pub(crate) agent_id: &'a str,
    pub(crate) agent_type: &'a str,
    pub(crate) mode: PermissionMode,
    pub(crate) session_dir: Option<PathBuf>,
    /// Tools the child is not offered (the filter left them out) whose call gets this refusal
    /// instead of `unknown_tool`: `task` at the depth limit says which limit.
    pub(crate) withheld: Option<(Vec<String>, String)>,
}

impl Executor {
    /// What a child of this executor inherits (the grants made so far included).
    pub(crate) fn child_template(&self) -> ChildTemplate {
        ChildTemplate {
            registry: self.registry.clone(),
            policy: self.policy.narrowed(self.policy.mode()),
            approver: self.approver.clone(),
            hooks: self.hooks.clone(),
            config: self.config.clone(),
            late: self.late.clone(),
            checkpoints: self.checkpoints.clone(),
        }
    }
}

impl ChildTemplate {
    /// The specs of the tools a child may be given, before a definition narrows them.
    pub(crate) fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.registry.specs()
    }

    /// The mode of the parent.
    pub(crate) fn mode(&self) -> PermissionMode {
        self.policy.mode()
    }

    /// An executor for one child: the tools `keep` accepts, the mode narrowed, the hooks and the
    /// approver told who the child is.
    pub(crate) fn executor(
        &self,
        scope: &ChildScope<'_>,
        keep: impl Fn(&ToolSpec) -> bool,
    ) -> Executor {
        let registry = self.registry.filtered(keep);
        let policy = self.policy.narrowed(scope.mode);
        let mut config = self.config.clone();
        config.session_id = scope.agent_id.to_owned();
        config.session_dir.clone_from(&scope.session_dir);
        let hooks = self.hooks.clone().for_agent(scope.agent_id, scope.agent_type);
        let hooks = hooks.permission_mode(policy.mode());
        let mut executor = Executor::new(registry, policy, config);
        // Set directly rather than through `with_hooks`, which would make the child's id the
        // hooks' `session_id`: hooks see the parent's session and the child's `agent_id`.
        executor.hooks = hooks;
        executor.checkpoints.clone_from(&self.checkpoints);
        executor.late = match &scope.withheld {
            Some((names, reason)) => Some(Arc::new(Withheld {
                inner: self.late.clone(),
                names: names.clone(),
                reason: reason.clone(),
            })),
            None => self.late.clone(),
        };
        if let Some(approver) = &self.approver {
            let named = NamedApprover {
                inner: approver.clone(),
                agent: format!("agent `{}` ({})", scope.agent_type, scope.agent_id),
            };
            executor.approver = Some(Arc::new(named));
        }
        executor
    }
}

/// The parent's late tools (MCP), and a refusal with its reason for tools a child is not given.
struct Withheld {
    inner: Option<Arc<dyn LateTools>>,
    names: Vec<String>,
    reason: String,
}

impl LateTools for Withheld {
    fn refresh(&self) -> BoxFuture<'_, bool> {
        match &self.inner {
            Some(inner) => inner.refresh(),
            None => Box::pin(async { false }),
        }
    }

    fn tools(&self) -> Vec<(Arc<dyn Tool>, ToolLimits)> {
        self.inner.as_ref().map(|inner| inner.tools()).unwrap_or_default()
    }

    fn get(&self, name: &str) -> Option<(Arc<dyn Tool>, ToolLimits)> {
        self.inner.as_ref()?.get(name)
    }

    fn unavailable(&self, name: &str) -> Option<ToolError> {
        if self.names.iter().any(|withheld| withheld == name) {
            return Some(ToolError::new(
                ToolErrorKind::other("child_refused"),
                self.reason.clone(),
            ));
        }
        self.inner.as_ref()?.unavailable(name)
    }
}

/// The parent's approver, with every question saying which agent asks.
struct NamedApprover {
    inner: Arc<dyn Approver>,
    agent: String,
}

impl NamedApprover {
    fn named(&self, request: &ApprovalRequest) -> ApprovalRequest {
        let mut request = request.clone();
        request.reason = format!("{} asks: {}", self.agent, request.reason);
        request
    }
}

impl Approver for NamedApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move { self.inner.approve(&self.named(request)).await })
    }

    fn can_answer(&self, request: &ApprovalRequest) -> bool {
        self.inner.can_answer(request)
    }
}
