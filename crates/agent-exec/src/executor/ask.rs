//! Asking: a call the policy says to ask about is put to the session's approver, when there is
//! one that can answer; its answer (or its silence) becomes the call's fate.

use std::panic::AssertUnwindSafe;

use agent_core::{Access, CancellationToken, ToolCall, ToolError, ToolErrorKind, ToolSpec};
use futures_util::FutureExt;

use super::{Executor, outcome::cancelled_before_start, supervise::panic_message};
use crate::permission::{Approval, ApprovalRequest, Ask, PermissionMode};

impl Executor {
    /// Whether a call that needs approval can be put to someone: there is an approver, and the
    /// mode is not dont-ask.
    pub(super) fn can_ask(&self) -> bool {
        self.approver.is_some() && self.policy.mode() != PermissionMode::DontAsk
    }

    /// Asks the approver; `Ok` means the call may run.
    pub(super) async fn ask(
        &self,
        call: &ToolCall,
        spec: &ToolSpec,
        access: &[Access],
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
}

/// The observation of a call the user rejected, with their reason when they gave one.
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
