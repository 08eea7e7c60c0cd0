//! The executor: the one controlled path from a model's tool call to the observation it reads.
//!
//! look up → parse and validate → permission policy (and approval) → run under a time limit and
//! a cancellation token → cap the output → [`Outcome`]. Every failure on the way is an outcome
//! with a stable error code; nothing here panics, and a panicking tool is caught.

mod late;
mod tool_hooks;

use std::{
    any::Any,
    panic::AssertUnwindSafe,
    path::PathBuf,
    sync::Arc,
    task::Poll,
    time::{Duration, Instant},
};

use agent_core::{
    Boundary, CallOutput, CancellationToken, Image, ToolCall, ToolContext, ToolError,
    ToolErrorKind, ToolOutput,
};
use futures_util::FutureExt;
use tracing::Instrument;

use self::tool_hooks::Overrides;
use crate::{
    background::Background,
    hooks::Hooks,
    output::{self, DEFAULT_OUTPUT_CAP},
    permission::{
        Approval, ApprovalRequest, Approver, Ask, PermissionMode, PermissionPolicy, Remedy, Verdict,
    },
    registry::{LateTools, Registry},
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
        }
    }
}

/// What one call produced: the observation the model reads, and facts for the harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The `call_id` of the call.
    pub call_id: String,
    /// The tool's registered name (the name as called when no tool matched).
    pub tool: String,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The stable error code when it did not.
    pub error_code: Option<&'static str>,
    /// The model-visible text: the tool's (capped) output, or the error observation.
    pub text: String,
    /// Wall time from the start of dispatch (or from the approver's answer) to the outcome.
    pub duration: Duration,
    /// Whether the output was cut by the output cap.
    pub truncated: bool,
    /// Where the whole output of a truncated call was saved, when it was.
    pub output_path: Option<PathBuf>,
    /// For a call refused because it needed approval and nobody could be asked: what would
    /// allow it, for the front end to show its user in its own terms.
    pub remedy: Option<Remedy>,
    /// A hook asked to stop the whole run after this call, with this reason.
    pub stop: Option<String>,
    /// Images the tool returned beside its text, for models that see images.
    pub images: Vec<Image>,
}

impl Outcome {
    /// The transcript item answering the call.
    pub fn to_call_output(&self) -> CallOutput {
        self.clone().into_call_output()
    }

    /// The transcript item answering the call, without copying the text.
    pub fn into_call_output(self) -> CallOutput {
        CallOutput {
            call_id: self.call_id,
            output: self.text,
            ok: self.ok,
            error: self.error_code.map(str::to_owned),
            images: self.images,
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
    background: Option<Arc<dyn Background>>,
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
            background: None,
        }
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

    /// The same executor, running `hooks` around every call (see [`crate::hooks`]). Hooks with
    /// no session details get this executor's session id and workspace.
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

    /// The configuration.
    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// Runs one call and returns its one outcome. Never panics (the tokio runtime must have its
    /// timer enabled). Cancelling `cancel` stops the call: it is cancelled before it starts, its
    /// approval is abandoned, or its tool's token is cancelled and it gets the grace period.
    pub async fn execute(&self, call: &ToolCall, cancel: &CancellationToken) -> Outcome {
        let span = tracing::debug_span!("tool_call", tool = %call.name, call_id = %call.call_id);
        if span.is_disabled() {
            return self.execute_in_span(call, cancel).await;
        }
        let outcome = self.execute_in_span(call, cancel).instrument(span.clone()).await;
        span.in_scope(|| {
            tracing::debug!(
                ok = outcome.ok,
                error = outcome.error_code,
                duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
                truncated = outcome.truncated,
                "tool call finished"
            );
        });
        outcome
    }

    async fn execute_in_span(&self, call: &ToolCall, cancel: &CancellationToken) -> Outcome {
        if self.hooks.is_empty() {
            return self.dispatch(call, cancel, &Overrides::default()).await;
        }
        // The cold path: boxed so that sessions without hooks keep a small future.
        Box::pin(self.execute_hooked(call, cancel)).await
    }

    /// Stages 3–6 for one call, with what the `PreToolUse` hooks changed.
    async fn dispatch(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
        overrides: &Overrides,
    ) -> Outcome {
        let mut start = Instant::now();
        let call = &*overrides.call(call);
        let Some(entry) = self.entry(&call.name) else {
            return self.failure(call, &call.name, self.unknown_tool(&call.name), start);
        };
        let tool = &entry.tool;
        let spec = tool.spec();
        if cancel.is_cancelled() {
            return self.failure(call, &spec.name, cancelled_before_start(), start);
        }

        let prepared =
            match std::panic::catch_unwind(AssertUnwindSafe(|| tool.prepare(&call.arguments))) {
                Ok(Ok(prepared)) => prepared,
                Ok(Err(err)) => {
                    let err = overrides.explain(args_error(err));
                    return self.failure(call, &spec.name, err, start);
                }
                Err(panic) => return self.failure(call, &spec.name, panicked(&panic), start),
            };

        let decision = self.policy.decide(spec, prepared.access());
        match overrides.verdict(decision.verdict) {
            Verdict::Allow => {}
            Verdict::Deny(err) => return self.failure(call, &spec.name, err, start),
            Verdict::Ask(ask) => {
                // Asking is the cold path; boxing it keeps the hot future small.
                let asked = Box::pin(self.ask(call, spec, prepared.access(), &ask, cancel)).await;
                // The call's time, not the time a person took to read the prompt, is reported.
                start = Instant::now();
                if let Err(err) = asked {
                    let mut outcome = self.failure(call, &spec.name, err, start);
                    if !self.can_ask() {
                        outcome.remedy = Some(ask.remedy);
                    }
                    return outcome;
                }
            }
        }

        // A fresh token rather than a child of `cancel`: a child costs a lock on the parent, and
        // the supervisor forwards the caller's cancellation to it whenever the tool is still
        // running, so the tool sees the same thing either way.
        let token = CancellationToken::new();
        let ctx = ToolContext {
            workspace: Arc::clone(&self.workspace),
            cancel: token.clone(),
            call_id: call.call_id.as_str().into(),
            session_id: Arc::clone(&self.session_id),
            tenant_id: self.tenant_id.clone(),
            user_id: self.user_id.clone(),
            exec_allowlist: decision.read_only_programs.map(Into::into),
        };
        let timeout = entry.limits.timeout.unwrap_or(self.config.default_timeout);
        let future = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.run(prepared, ctx))) {
            Ok(future) => future,
            Err(panic) => return self.failure(call, &spec.name, panicked(&panic), start),
        };
        let result = self.supervise(future, &token, cancel, timeout).await;
        let cap = entry.limits.output_cap.unwrap_or(self.config.output_cap);
        match result {
            Ok(output) => self.success(call, &spec.name, output, cap, start).await,
            Err(mut err) => {
                let mut spilled = None;
                if let Some(cut) = output::cut(&err.message, cap) {
                    let saved = self.spill(call, &err.message).await;
                    err.message = cut.render(&saved);
                    spilled = Some(saved.ok());
                }
                let mut outcome = self.failure(call, &spec.name, err, start);
                outcome.truncated = spilled.is_some();
                outcome.output_path = spilled.flatten();
                outcome
            }
        }
    }

    /// Drives a tool's future under its time limit and the caller's token, catching panics.
    async fn supervise(
        &self,
        future: agent_core::BoxFuture<'_, Result<ToolOutput, ToolError>>,
        token: &CancellationToken,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let mut future = AssertUnwindSafe(future).catch_unwind();
        let flatten = |res: std::thread::Result<Result<ToolOutput, ToolError>>| match res {
            Ok(res) => res,
            Err(panic) => Err(panicked(&panic)),
        };
        // Most tools finish on their first poll; trying once first keeps the timer out of the hot
        // path entirely.
        if let Poll::Ready(res) =
            std::future::poll_fn(|cx| Poll::Ready(future.poll_unpin(cx))).await
        {
            return flatten(res);
        }
        Box::pin(self.supervise_pending(future, token, cancel, timeout)).await
    }

    /// The slow path of [`Executor::supervise`]: the tool did not finish on its first poll.
    async fn supervise_pending(
        &self,
        mut future: futures_util::future::CatchUnwind<
            AssertUnwindSafe<agent_core::BoxFuture<'_, Result<ToolOutput, ToolError>>>,
        >,
        token: &CancellationToken,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let flatten = |res: std::thread::Result<Result<ToolOutput, ToolError>>| match res {
            Ok(res) => res,
            Err(panic) => Err(panicked(&panic)),
        };
        let started = Instant::now();
        let stopped_by_cancel = tokio::select! {
            biased;
            res = &mut future => return flatten(res),
            () = cancel.cancelled() => true,
            () = tokio::time::sleep(timeout) => false,
        };
        token.cancel();
        let stopped = tokio::time::timeout(self.config.grace, &mut future).await.is_ok();
        if stopped_by_cancel {
            tracing::debug!(stopped, "tool call cancelled");
        } else {
            tracing::warn!(timeout_ms = timeout.as_millis(), stopped, "tool call timed out");
        }
        if !stopped {
            tracing::warn!(
                grace_ms = self.config.grace.as_millis(),
                "tool abandoned after the grace period"
            );
        }
        let after = human(started.elapsed());
        let how = if stopped {
            "the tool was stopped".to_owned()
        } else {
            format!("the tool did not stop within {} and was abandoned", human(self.config.grace))
        };
        if stopped_by_cancel {
            Err(ToolError::new(
                ToolErrorKind::Cancelled,
                format!(
                    "the call was cancelled after {after}; {how}. Do not retry unless the user asks"
                ),
            ))
        } else {
            Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "the call timed out after {}; {how}. Try a smaller or faster call, or run long jobs in the background",
                    human(timeout)
                ),
            ))
        }
    }

    /// Whether a call that needs approval can be put to someone: there is an approver, and the
    /// mode is not dont-ask.
    fn can_ask(&self) -> bool {
        self.approver.is_some() && self.policy.mode() != PermissionMode::DontAsk
    }

    /// Asks the approver; `Ok` means the call may run.
    async fn ask(
        &self,
        call: &ToolCall,
        spec: &agent_core::ToolSpec,
        access: &[agent_core::Access],
        ask: &Ask,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        let request = ApprovalRequest {
            call_id: call.call_id.clone(),
            tool: spec.name.clone(),
            arguments: call.arguments.clone(),
            access: access.to_vec(),
            reason: ask.reason.clone(),
            suggested_rules: ask.remedy.rules.clone(),
        };
        // An approver may serve callers it cannot ask (`Approver::can_answer`).
        let approver = match &self.approver {
            Some(approver) if self.can_ask() && approver.can_answer(&request) => approver,
            _ => return Err(self.policy.unanswered(spec, ask)),
        };
        let approval = tokio::select! {
            approval = AssertUnwindSafe(approver.approve(&request)).catch_unwind() => approval,
            () = cancel.cancelled() => return Err(cancelled_before_start()),
        };
        match approval {
            Ok(Approval::AllowOnce) => Ok(()),
            Ok(Approval::AllowForSession) => {
                self.policy.grant_for_session(spec, access, ask);
                Ok(())
            }
            Ok(Approval::Deny { reason }) => Err(rejected(reason.as_deref())),
            Err(panic) => Err(ToolError::new(
                ToolErrorKind::PermissionDenied,
                format!(
                    "the approval prompt failed ({}), so the call was not run",
                    panic_message(&panic)
                ),
            )),
        }
    }

    async fn success(
        &self,
        call: &ToolCall,
        tool: &str,
        output: ToolOutput,
        cap: usize,
        start: Instant,
    ) -> Outcome {
        let (text, truncated, output_path) = match output::cut(&output.text, cap) {
            None => (output.text, false, None),
            Some(cut) => {
                let spilled = self.spill(call, &output.text).await;
                (cut.render(&spilled), true, spilled.ok())
            }
        };
        Outcome {
            call_id: call.call_id.clone(),
            tool: tool.to_owned(),
            ok: true,
            error_code: None,
            text,
            duration: start.elapsed(),
            truncated,
            output_path,
            remedy: None,
            stop: None,
            images: output.images,
        }
    }

    fn failure(&self, call: &ToolCall, tool: &str, err: ToolError, start: Instant) -> Outcome {
        Outcome {
            call_id: call.call_id.clone(),
            tool: tool.to_owned(),
            ok: false,
            error_code: Some(err.kind.as_str()),
            text: err.observation(),
            duration: start.elapsed(),
            truncated: false,
            output_path: None,
            remedy: None,
            stop: None,
            images: Vec::new(),
        }
    }

    /// Saves a full output to the session directory on the blocking pool.
    async fn spill(&self, call: &ToolCall, text: &str) -> Result<PathBuf, String> {
        let Some(dir) = &self.config.session_dir else {
            return Err("no session directory is configured".to_owned());
        };
        let path = output::spill_path(dir, &call.call_id);
        let text = text.to_owned();
        match tokio::task::spawn_blocking(move || output::save(&path, &text)).await {
            Ok(saved) => saved,
            Err(err) => Err(err.to_string()),
        }
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

fn args_error(err: agent_core::schema::ArgsError) -> ToolError {
    let next = match err {
        agent_core::schema::ArgsError::Json { .. } => {
            "send the arguments as one JSON object that fits the tool's schema"
        }
        agent_core::schema::ArgsError::Invalid { .. } => {
            "fix the arguments to fit the tool's schema and call it again"
        }
    };
    let mut err = ToolError::from(err);
    err.message = format!("{}; {next}", err.message);
    err
}

fn cancelled_before_start() -> ToolError {
    ToolError::new(
        ToolErrorKind::Cancelled,
        "the call was cancelled before it ran. Do not retry unless the user asks",
    )
}

fn rejected(reason: Option<&str>) -> ToolError {
    let message = match reason {
        Some(reason) if !reason.trim().is_empty() => format!(
            "the user rejected this call: {}. Do not retry it unchanged; follow the user's reason or ask what to do instead",
            reason.trim()
        ),
        _ => "the user rejected this call. Do not retry it unchanged; ask the user what to do instead"
            .to_owned(),
    };
    ToolError::new(ToolErrorKind::Rejected, message)
}

fn panicked(panic: &Box<dyn Any + Send>) -> ToolError {
    ToolError::new(
        ToolErrorKind::ToolError,
        format!(
            "the tool crashed ({}); this is a bug in the tool, not in your arguments. Try another approach",
            panic_message(panic)
        ),
    )
}

fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    let message = if let Some(text) = panic.downcast_ref::<&str>() {
        text
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.as_str()
    } else {
        "panic"
    };
    message.chars().take(300).collect()
}

/// A duration as people write it: `2s`, `150ms`, `1.5s`.
pub(crate) fn human(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(millis: u64, expect: &str) {
        assert_eq!(human(Duration::from_millis(millis)), expect);
    }

    #[test]
    fn durations_read_naturally() {
        check(150, "150ms");
        check(2000, "2s");
        check(1500, "1.5s");
    }
}
