//! Approvals go to the editor: the policy's "ask" becomes `session/request_permission`, and the
//! protocol's allow-once / allow-always / reject map one to one onto our approvals.

use std::sync::{Arc, OnceLock};

use agent_client_protocol::{
    Client,
    v1::{
        ConnectionTo,
        schema::{
            PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
            RequestPermissionRequest, SessionNotification, ToolCallStatus, ToolCallUpdateFields,
        },
    },
};
use agent_core::BoxFuture;
use agent_exec::{Approval, ApprovalRequest, Approver};

use crate::updates;

/// The option ids, which are also what the answer names.
const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject";

/// Asks the client that opened the session.
///
/// Made before the session (the executor takes its approver when it is built) and bound to the
/// session's id once the host has opened it; until then nothing can ask.
pub struct AcpApprover {
    connection: ConnectionTo<Client>,
    session: OnceLock<String>,
}

impl AcpApprover {
    /// An approver that asks through `connection`.
    pub fn new(connection: ConnectionTo<Client>) -> Arc<Self> {
        Arc::new(Self { connection, session: OnceLock::new() })
    }

    /// Names the session the requests are about.
    pub(crate) fn bind(&self, session: &str) {
        let _ = self.session.set(session.to_owned());
    }
}

impl Approver for AcpApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let Some(session) = self.session.get() else {
                return Approval::Deny { reason: Some("the session is not open yet".to_owned()) };
            };
            let always = match request.suggested_rules.as_slice() {
                [] => "Allow always (this exact call, this session)".to_owned(),
                rules => format!("Allow always ({}, this session)", rules.join(", ")),
            };
            let options = vec![
                PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(ALLOW_ALWAYS, always, PermissionOptionKind::AllowAlways),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ];
            let fields = ToolCallUpdateFields::new().title(format!(
                "{} — {}",
                title_of(request),
                request.reason
            ));
            let tool_call = agent_client_protocol::v1::schema::ToolCallUpdate::new(
                request.call_id.clone(),
                fields,
            );
            let asked = RequestPermissionRequest::new(session.clone(), tool_call, options);
            // Dropped when the prompt is cancelled: the executor stops waiting, and the client,
            // which sent the cancel, answers this request as cancelled itself.
            let answer = self.connection.send_request(asked).block_task().await;
            let approval = match answer.map(|answer| answer.outcome) {
                Ok(RequestPermissionOutcome::Selected(selected)) => match &*selected.option_id.0 {
                    ALLOW_ONCE => Approval::AllowOnce,
                    ALLOW_ALWAYS => Approval::AllowForSession,
                    _ => Approval::Deny { reason: Some("rejected in the editor".to_owned()) },
                },
                Ok(RequestPermissionOutcome::Cancelled) => {
                    Approval::Deny { reason: Some("the prompt was cancelled".to_owned()) }
                }
                Ok(_) | Err(_) => Approval::Deny {
                    reason: Some("the editor gave no answer to the permission request".to_owned()),
                },
            };
            if !matches!(approval, Approval::Deny { .. }) {
                let running = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                let update = updates::update(&request.call_id, running);
                let _ = self
                    .connection
                    .send_notification(SessionNotification::new(session.clone(), update));
            }
            approval
        })
    }
}

/// The call's title as its announcement had it.
fn title_of(request: &ApprovalRequest) -> String {
    updates::tool_call(
        std::path::Path::new(""),
        &request.call_id,
        &request.tool,
        &request.arguments,
    )
    .title
}
