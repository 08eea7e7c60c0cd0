//! Dispatch: the one entry path of a call, stages 1–6 in the order they happen.
//!
//! [`Executor::dispatch`] looks the tool up once. Without hooks it goes straight to
//! [`Executor::run_entry`]; with hooks the `PreToolUse` and `PostToolUse` events wrap that same
//! function (see `tool_hooks`), so every call, hooked or not, passes the same stages.

use std::{panic::AssertUnwindSafe, sync::Arc, time::Instant};

use agent_core::{CancellationToken, ToolCall, ToolContext, ToolError};

use super::{
    Executor, Outcome, outcome::cancelled_before_start, supervise::panicked, text_input,
    tool_hooks::Overrides,
};
use crate::{checkpointer::CallIntent, output, permission::Verdict, registry::Entry};

impl Executor {
    /// Looks the tool up, then runs the call, with its hooks around it when there are any.
    pub(super) async fn dispatch(&self, call: &ToolCall, cancel: &CancellationToken) -> Outcome {
        let Some(entry) = self.entry(&call.name) else {
            return self.failure(call, &call.name, self.unknown_tool(&call.name), Instant::now());
        };
        let spec = entry.tool.spec();
        let call = match text_input::json_call(call, spec) {
            Ok(call) => call,
            Err(err) => return self.failure(call, &spec.name, err, Instant::now()),
        };
        let call = &*call;
        if self.hooks.is_empty() {
            return self.run_entry(call, &entry, cancel, &Overrides::default()).await;
        }
        // The cold path: boxed so that sessions without hooks keep a small future.
        Box::pin(self.run_hooked(call, &entry, cancel)).await
    }

    /// Stages 2–6 for one call of a tool that was found, with what the `PreToolUse` hooks
    /// changed: parse and validate, judge (and ask), run under supervision, cap the output.
    pub(super) async fn run_entry(
        &self,
        call: &ToolCall,
        entry: &Entry,
        cancel: &CancellationToken,
        overrides: &Overrides,
    ) -> Outcome {
        let mut start = Instant::now();
        let call = &*overrides.call(call);
        let tool = &entry.tool;
        let spec = tool.spec();
        if cancel.is_cancelled() {
            return self.failure(call, &spec.name, cancelled_before_start(), start);
        }
        // A skill's `allowed-tools` narrows the turn; only what it admits reaches the policy.
        if let Some(limit) = self.tool_limit.as_ref().filter(|limit| !limit.admits(spec)) {
            return self.failure(call, &spec.name, limit.refusal(spec), start);
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

        if !prepared.pending_steps().is_empty() {
            return self.run_steps(call, entry, prepared, cancel).await;
        }

        let decision = self.policy.decide(spec, prepared.access());
        let asked_policy = matches!(decision.verdict, Verdict::Ask(_));
        match overrides.verdict(decision.verdict) {
            Verdict::Allow => {
                self.otel.decision(true, if asked_policy { "hook" } else { "config" });
            }
            Verdict::Deny(err) => {
                self.otel.decision(false, "config");
                return self.failure(call, &spec.name, err, start);
            }
            Verdict::Ask(ask) => {
                // Asking is the cold path; boxing it keeps the hot future small.
                let asked = Box::pin(self.ask(call, spec, prepared.access(), &ask, cancel)).await;
                // The call's time, not the time a person took to read the prompt, is reported.
                start = Instant::now();
                // Who said no: the person asked, or the policy when nobody could be asked.
                self.otel.decision(asked.is_ok(), if self.can_ask() { "user" } else { "config" });
                if let Err(err) = asked {
                    let mut outcome = self.failure(call, &spec.name, err, start);
                    if !self.can_ask() {
                        outcome.remedy = Some(ask.remedy);
                    }
                    return outcome;
                }
            }
        }

        self.run_prepared(call, entry, prepared, decision.read_only_programs, cancel, start).await
    }

    /// Stage 5–6 for a call that was judged: run it under supervision and cap its output.
    pub(super) async fn run_prepared(
        &self,
        call: &ToolCall,
        entry: &Entry,
        prepared: agent_core::PreparedCall,
        read_only_programs: Option<Vec<String>>,
        cancel: &CancellationToken,
        start: Instant,
    ) -> Outcome {
        let tool = &entry.tool;
        let spec = tool.spec();
        // A fresh token rather than a child of `cancel`: a child costs a lock on the parent, and
        // the supervisor forwards the caller's cancellation to it whenever the tool is still
        // running, so the tool sees the same thing either way.
        let token = CancellationToken::new();
        let cap = entry.limits.output_cap.unwrap_or(self.config.output_cap);
        let ctx = ToolContext {
            workspace: Arc::clone(&self.workspace),
            cancel: token.clone(),
            call_id: call.call_id.as_str().into(),
            session_id: Arc::clone(&self.session_id),
            tenant_id: self.tenant_id.clone(),
            user_id: self.user_id.clone(),
            exec_allowlist: read_only_programs.map(Into::into),
            files: self.files.clone(),
            // The cap applied below, so a tool can keep a part it returns within it.
            output_cap: Some(cap),
        };
        // What the call declared it writes is recorded before it runs (and its commands' writes
        // found after), so its turn can be undone.
        let checkpoint = self.checkpoints.as_ref().and_then(|checkpoints| {
            checkpoints.before_call(&CallIntent {
                access: prepared.access(),
                runs_processes: spec.effects.runs_processes,
                judged_read_only: ctx.exec_allowlist.is_some(),
            })
        });
        let timeout = entry.limits.timeout.unwrap_or(self.config.default_timeout);
        let future = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.run(prepared, ctx))) {
            Ok(future) => future,
            Err(panic) => return self.failure(call, &spec.name, panicked(&panic), start),
        };
        let result = self.supervise(future, &token, cancel, timeout).await;
        if let Some(pending) = checkpoint {
            pending.ended();
        }
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
}

/// An argument error, with what to do next.
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
