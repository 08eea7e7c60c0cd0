//! What one hook answered: its exit code, stderr and stdout JSON read the way Claude Code reads
//! them (exit 0 continues, exit 2 blocks, JSON on stdout may decide more).

use serde::Deserialize;
use serde_json::Value;

use super::{Hook, HookEvent, HookResult};
use crate::{
    output::human,
    process::{ProcessOutput, SpawnError},
};

/// A `PreToolUse` permission decision other than deny (which blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Run the call without asking, where the policy would have asked; deny rules and the
    /// workspace boundary still hold.
    Allow,
    /// Ask the user (the session's approver) even where the policy would have allowed the call.
    Ask,
}

/// One hook's answer.
#[derive(Debug, Default)]
pub(super) struct Reply {
    block: Option<String>,
    permission: Option<(Permission, Option<String>)>,
    updated_input: Option<Value>,
    context: Vec<String>,
    stop: Option<String>,
    /// What went wrong with the hook itself, when something did.
    pub(super) problem: Option<String>,
}

/// The JSON a hook may print on stdout: Claude Code's fields, all optional. Unknown fields are
/// ignored, as Claude Code ignores them, so scripts written for it do not break here.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Printed {
    #[serde(rename = "continue")]
    keep_going: Option<bool>,
    stop_reason: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

impl Reply {
    pub(super) fn from_process(hook: &Hook, output: Result<ProcessOutput, SpawnError>) -> Self {
        let output = match output {
            Ok(output) => output,
            Err(err) => return Self::failed(hook, format!("could not be started: {err}")),
        };
        if output.timed_out {
            return Self::failed(
                hook,
                format!("timed out after {} and was killed", human(hook.timeout)),
            );
        }
        if output.cancelled {
            // The user cancelled the turn; the caller sees that on its own token, and a hook
            // stopped for it is neither a problem to report nor a reason to block.
            return Self::default();
        }
        let stderr = output.stderr.trim();
        match output.exit_code {
            Some(0) => Self::printed(hook, output.output.trim()),
            Some(2) => Self {
                block: Some(if stderr.is_empty() {
                    format!("blocked by the {} hook `{}`", hook.event, hook.command)
                } else {
                    stderr.to_owned()
                }),
                ..Self::default()
            },
            Some(code) => {
                Self::failed(hook, with_stderr(format!("exited with code {code}"), stderr))
            }
            None => Self::failed(
                hook,
                with_stderr(format!("was killed by signal {}", output.signal.unwrap_or(0)), stderr),
            ),
        }
    }

    /// A hook that did not work: reported, and blocking only when it is `fail_closed`.
    fn failed(hook: &Hook, problem: String) -> Self {
        let block = hook.fail_closed.then(|| {
            format!(
                "the {} hook `{}` {problem}, and it is set to fail closed",
                hook.event, hook.command
            )
        });
        Self { block, problem: Some(problem), ..Self::default() }
    }

    /// Exit 0: stdout is JSON when it looks like an object, otherwise plain text, which only the
    /// prompt and session-start events use (as context for the model), as in Claude Code.
    fn printed(hook: &Hook, stdout: &str) -> Self {
        if !stdout.starts_with('{') {
            let plain = matches!(hook.event, HookEvent::UserPromptSubmit | HookEvent::SessionStart);
            let context =
                if plain && !stdout.is_empty() { vec![stdout.to_owned()] } else { vec![] };
            return Self { context, ..Self::default() };
        }
        let printed: Printed = match serde_json::from_str(stdout) {
            Ok(printed) => printed,
            Err(err) => {
                return Self::failed(hook, format!("printed JSON that does not parse ({err})"));
            }
        };
        let mut reply = Self::default();
        let specific = printed.hook_specific_output.unwrap_or_default();
        let reason = specific.permission_decision_reason.or(printed.reason);
        let decision = specific.permission_decision.or(printed.decision);
        match decision.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("") => {}
            Some("deny" | "block") => {
                reply.block = Some(reason.unwrap_or_else(|| {
                    format!("blocked by the {} hook `{}`", hook.event, hook.command)
                }));
            }
            Some("allow" | "approve") => reply.permission = Some((Permission::Allow, reason)),
            Some("ask") => reply.permission = Some((Permission::Ask, reason)),
            Some(other) => {
                return Self::failed(
                    hook,
                    format!(
                        "printed an unknown decision `{other}` (use allow, deny, ask or block)"
                    ),
                );
            }
        }
        reply.updated_input = specific.updated_input.or(printed.updated_input);
        reply.context.extend(specific.additional_context.or(printed.additional_context));
        if printed.keep_going == Some(false) {
            reply.stop = Some(printed.stop_reason.unwrap_or_else(|| {
                format!("the {} hook `{}` stopped the run", hook.event, hook.command)
            }));
        }
        reply
    }

    /// Adds this reply to the event's result; `true` when no further hook should run.
    pub(super) fn merge_into(self, result: &mut HookResult) -> bool {
        result.context.extend(self.context);
        if let Some(input) = self.updated_input {
            result.updated_input = Some(input);
        }
        if let Some((permission, reason)) = self.permission {
            // Ask beats allow, whichever hook said it first.
            if result.permission != Some(Permission::Ask) {
                result.permission = Some(permission);
                result.permission_reason = reason;
            }
        }
        if self.block.is_some() {
            result.block = self.block;
        }
        if self.stop.is_some() {
            result.stop = self.stop;
        }
        result.block.is_some() || result.stop.is_some()
    }
}

fn with_stderr(problem: String, stderr: &str) -> String {
    if stderr.is_empty() {
        return problem;
    }
    let short: String = stderr.chars().take(300).collect();
    format!("{problem}: {}", short.replace('\n', " "))
}
