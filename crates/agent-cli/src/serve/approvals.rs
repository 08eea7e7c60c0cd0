//! Approvals over HTTP: a call the policy asks about is parked here, announced on the session's
//! stream as `approval.requested`, listed by the API, and waits until a client answers it (or the
//! prompt is cancelled, which drops the wait and the entry with it).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use agent_core::BoxFuture;
use agent_exec::{Approval, ApprovalRequest, Approver};
use tokio::sync::oneshot;

use super::{
    api::{Decision, PendingApproval},
    journal::Journal,
};
use crate::events::ExecEvent;

#[derive(Debug, Default)]
struct Parked {
    next: u64,
    waiting: BTreeMap<u64, (PendingApproval, oneshot::Sender<Approval>)>,
}

/// The pending approvals of one session; it is the session's [`Approver`].
#[derive(Debug)]
pub(crate) struct Approvals {
    parked: Mutex<Parked>,
    journal: Arc<Journal>,
}

impl Approvals {
    pub(crate) fn new(journal: Arc<Journal>) -> Arc<Self> {
        Arc::new(Self { parked: Mutex::default(), journal })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Parked> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The calls waiting, oldest first.
    pub(crate) fn list(&self) -> Vec<PendingApproval> {
        self.lock().waiting.values().map(|(pending, _)| pending.clone()).collect()
    }

    /// Answers approval `id`; false when no such approval waits.
    pub(crate) fn answer(&self, id: u64, decision: Decision, reason: Option<String>) -> bool {
        let Some((_, sender)) = self.lock().waiting.remove(&id) else { return false };
        let approval = match decision {
            Decision::AllowOnce => Approval::AllowOnce,
            Decision::AllowAlways => Approval::AllowForSession,
            Decision::Deny => Approval::Deny {
                reason: Some(reason.unwrap_or_else(|| "denied over the API".to_owned())),
            },
        };
        sender.send(approval).is_ok()
    }
}

/// Removes an approval from the list when its wait ends, answered or dropped.
struct Unpark<'a>(&'a Approvals, u64);

impl Drop for Unpark<'_> {
    fn drop(&mut self) {
        self.0.lock().waiting.remove(&self.1);
    }
}

impl Approver for Approvals {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let (sender, receiver) = oneshot::channel();
            let pending = {
                let mut parked = self.lock();
                parked.next += 1;
                let pending = PendingApproval {
                    id: parked.next,
                    call_id: request.call_id.clone(),
                    tool: request.tool.clone(),
                    arguments: request.arguments.clone(),
                    reason: request.reason.clone(),
                    suggested_rules: request.suggested_rules.clone(),
                };
                parked.waiting.insert(pending.id, (pending.clone(), sender));
                pending
            };
            let _unpark = Unpark(self, pending.id);
            self.journal.push(&ExecEvent::ApprovalRequested {
                approval_id: pending.id,
                call_id: pending.call_id,
                tool: pending.tool,
                reason: pending.reason,
                suggested_rules: pending.suggested_rules,
            });
            receiver.await.unwrap_or(Approval::Deny {
                reason: Some("the session closed before anyone answered".to_owned()),
            })
        })
    }
}
