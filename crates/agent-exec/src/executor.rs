//! The executor: the one controlled path from a model's tool call to the observation it reads.
//!
//! look up → parse and validate → permission policy (and approval) → run under a time limit and
//! a cancellation token → cap the output → [`Outcome`]. Every failure on the way is an outcome
//! with a stable error code; nothing here panics, and a panicking tool is caught.
//!
//! This file holds the executor and its configuration; the stages live beside it, one room
//! each: `dispatch` (the one entry path, the stages in order), `lookup` (which tool a name
//! means, registered or late), `limit` (the tools a turn may use), `tool_hooks` (the hooks
//! around a call), `ask` (the approver), `supervise` (time limit, cancellation, panics),
//! `outcome` (what a call produced), `batch` (all calls of one turn), `text_input` (raw-text
//! calls as their tool's JSON) and `steps` (calls that stand for other calls, each run through
//! this same path).

mod ask;
mod batch;
pub(crate) mod child;
pub(crate) mod deferred;
mod dispatch;
mod limit;
mod lookup;
mod outcome;
mod steps;
mod supervise;
mod text_input;
mod tool_hooks;

use std::{path::PathBuf, sync::Arc, time::Duration};

use agent_core::{Boundary, CancellationToken, ToolCall, ToolErrorKind};
use opentelemetry::context::FutureExt;
use tracing::Instrument;

pub use self::{limit::ToolLimit, outcome::Outcome};
use crate::{
    background::Background,
    checkpointer::Checkpointer,
    hooks::Hooks,
    output::DEFAULT_OUTPUT_CAP,
    permission::{Approver, PermissionPolicy},
    plan::Pinned,
    registry::{LateTools, Registry},
    telemetry::Otel,
};

/// How the executor runs calls. Build it with [`ExecutorConfig::new`] and change fields as needed.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The session id passed to tools.
    pub session_id: String,
    /// Where full outputs of truncated calls are saved (`<session_dir>/outputs/<call_id>.txt`);
    /// without it, truncated output is not saved and the notice says so.
    pub session_dir: Option<PathBuf>,
    /// The time limit of a call whose tool sets none.
    pub default_timeout: Duration,
    /// How long a cancelled or timed-out tool gets to stop before it is abandoned.
    pub grace: Duration,
    /// The output cap, in characters, of a tool that sets none.
    pub output_cap: usize,
    /// How many read-only calls of one batch run at once.
    pub max_parallel: usize,
    /// The tenant passed to tools, for multi-tenant hosts.
    pub tenant_id: Option<String>,
    /// The end user passed to tools, for multi-user hosts.
    pub user_id: Option<String>,
    /// What the session's spans may carry beyond their shape (no content by default).
    pub telemetry: crate::telemetry::Telemetry,
}

impl ExecutorConfig {
    /// Defaults: 120 s per call, 2 s grace, 12,000-character outputs, 8 parallel reads, no
    /// session directory.
    pub fn new(session_id: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            session_dir: None,
            default_timeout: Duration::from_secs(120),
            grace: Duration::from_secs(2),
            output_cap: DEFAULT_OUTPUT_CAP,
            max_parallel: 8,
            tenant_id: None,
            user_id: None,
            telemetry: crate::telemetry::Telemetry::default(),
        }
    }
}

/// Runs tool calls: owns the registry, the permission policy and the approver of a session.
pub struct Executor {
    registry: Registry,
    policy: PermissionPolicy,
    approver: Option<Arc<dyn Approver>>,
    hooks: Hooks,
    config: ExecutorConfig,
    workspace: Arc<dyn Boundary>,
    session_id: Arc<str>,
    tenant_id: Option<Arc<str>>,
    user_id: Option<Arc<str>>,
    late: Option<Arc<dyn LateTools>>,
    /// Tools offered once relevant (`job` once a job exists).
    deferred: deferred::Deferred,
    background: Option<Arc<dyn Background>>,
    otel: Otel,
    pinned: Option<Arc<dyn Pinned>>,
    /// The session's checkpoints, told about every call that may write (docs/checkpoints.md).
    checkpoints: Option<Arc<dyn Checkpointer>>,
    /// Where the file tools read and write instead of the disk (an editor's buffers).
    files: Option<Arc<dyn agent_core::FileSystem>>,
    /// The tools this turn may use, when an invoked skill limits them (`allowed-tools`).
    tool_limit: Option<ToolLimit>,
}

impl Executor {
    /// An executor with no approver: calls that need approval are denied with a message naming
    /// the flag or rule that would allow them.
    pub fn new(registry: Registry, policy: PermissionPolicy, config: ExecutorConfig) -> Self {
        Self {
            workspace: Arc::new(policy.workspace().clone()),
            session_id: config.session_id.as_str().into(),
            tenant_id: config.tenant_id.as_deref().map(Arc::from),
            user_id: config.user_id.as_deref().map(Arc::from),
            registry,
            policy,
            approver: None,
            hooks: Hooks::default(),
            config,
            late: None,
            deferred: deferred::Deferred::default(),
            background: None,
            otel: Otel::new(),
            pinned: None,
            checkpoints: None,
            files: None,
            tool_limit: None,
        }
    }

    /// Limits the tools calls may use from the next call on, until set to `None`: a front end
    /// sets it for the turn that invokes a skill with `allowed-tools` and clears it after. A
    /// call outside the limit is refused before the permission policy is asked; one inside it is
    /// judged as always, so the limit only takes away.
    pub fn set_tool_limit(&mut self, limit: Option<ToolLimit>) {
        self.tool_limit = limit;
    }

    /// Has the file tools read and write through `files` from the next call on (`None`: the
    /// disk), as an editor that holds the session's buffers asks.
    pub fn set_file_system(&mut self, files: Option<Arc<dyn agent_core::FileSystem>>) {
        self.files = files;
    }

    /// The same executor, with session state every compaction keeps verbatim (the plan, see
    /// [`crate::plan`]).
    pub fn with_pinned(mut self, pinned: Arc<dyn Pinned>) -> Self {
        self.pinned = Some(pinned);
        self
    }

    /// The state compaction keeps verbatim, when there is some.
    pub fn pinned(&self) -> Option<&dyn Pinned> {
        self.pinned.as_deref()
    }

    /// The same executor, recording what each call writes in `checkpoints` so a turn can be
    /// undone.
    pub fn with_checkpoints(mut self, checkpoints: Arc<dyn Checkpointer>) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// The session's checkpoints, when they are kept.
    pub fn checkpoints(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.checkpoints.as_ref()
    }

    /// The same executor, with the session's background work (the built-in tools' job table):
    /// the agent loop tells the model what finished (see [`Background`]).
    pub fn with_background(mut self, background: Arc<dyn Background>) -> Self {
        self.background = Some(background);
        self
    }

    /// The session's background work, when it has some.
    pub fn background(&self) -> Option<&dyn Background> {
        self.background.as_deref()
    }

    /// The same executor, asking `approver` when the policy says "ask".
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The same executor, running `hooks` around every call (see [`crate::hooks`]). The hooks
    /// are told this executor's session id and workspace, whatever they were given before.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks.session(&self.config.session_id, self.policy.workspace().root());
        self
    }

    /// The hooks, for the loop and front ends to run the events that are not about one call.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The registry, to add or remove tools between turns.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The permission policy.
    pub fn policy(&self) -> &PermissionPolicy {
        &self.policy
    }

    /// The permission policy, to change its mode between prompts.
    pub fn policy_mut(&mut self) -> &mut PermissionPolicy {
        &mut self.policy
    }

    /// The configuration.
    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// Runs one call and returns its one outcome. Never panics (the tokio runtime must have its
    /// timer enabled). Cancelling `cancel` stops the call: it is cancelled before it starts, its
    /// approval is abandoned, or its tool's token is cancelled and it gets the grace period.
    pub async fn execute(&self, call: &ToolCall, cancel: &CancellationToken) -> Outcome {
        let span = self.otel.tool(call, &self.config.telemetry);
        let outcome = match &span.cx {
            Some(cx) => self.execute_logged(call, cancel).with_context(cx.clone()).await,
            None => self.execute_logged(call, cancel).await,
        };
        span.finish(&self.otel, &outcome, &self.config.telemetry);
        outcome
    }

    /// Ends the session's `invoke_agent` span (dropping the executor, or the agent that owns it,
    /// does the same): a program that flushes its telemetry before it exits calls this first,
    /// so the root span is exported. The next prompt starts a new one.
    pub fn end_session_span(&self) {
        self.otel.end_session();
    }

    /// The session's tracer and instruments.
    pub(crate) fn otel(&self) -> &Otel {
        &self.otel
    }

    /// [`Executor::execute`] inside its `tool_call` log span.
    async fn execute_logged(&self, call: &ToolCall, cancel: &CancellationToken) -> Outcome {
        let span = tracing::debug_span!("tool_call", tool = %call.name, call_id = %call.call_id);
        if span.is_disabled() {
            return self.dispatch(call, cancel).await;
        }
        let outcome = self.dispatch(call, cancel).instrument(span.clone()).await;
        span.in_scope(|| {
            tracing::debug!(
                ok = outcome.ok,
                error = outcome.error_code.as_ref().map(ToolErrorKind::as_str),
                duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
                truncated = outcome.truncated,
                "tool call finished"
            );
        });
        outcome
    }
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("registry", &self.registry)
            .field("mode", &self.policy.mode())
            .field("approver", &self.approver.is_some())
            .finish_non_exhaustive()
    }
}
