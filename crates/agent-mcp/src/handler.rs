//! The client side of one server connection: what we tell a server about ourselves (capabilities,
//! the handshake's version), a 2025 server's `elicitation/create` answered through
//! [`Questions`], its `tools/list_changed`, and the `subscriptions/listen` a 2026 server needs
//! for it.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
        FormElicitationCapability, Implementation, SubscriptionFilter,
    },
    service::{NotificationContext, RequestContext, RunningService, Subscription},
};

use crate::{protocol, questions::Questions};

/// The client side of one connection: reports `tools/list_changed` and answers a legacy
/// server's `elicitation/create`.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    pub(crate) server: String,
    pub(crate) changed: Arc<AtomicBool>,
    pub(crate) questions: Arc<Questions>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Elicitation (form mode) is declared only when someone answers: a client that declares
        // it and declines everything would make servers ask questions no one sees.
        let mut capabilities = ClientCapabilities::default();
        if self.questions.answered() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("agent", env!("CARGO_PKG_VERSION")),
        );
        // Used by the `initialize` handshake only (the 2026 probe names its own version), which
        // must name a version that has one.
        config.protocol_version = protocol::handshake_version();
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.questions.elicit(&self.server, None, request).await)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::Release);
    }
}

/// Asks a server that announces `tools.listChanged` for those notifications, where the protocol
/// needs a subscription for them; `None` when it does not announce them or refuses (then they
/// come unasked, if at all).
pub(crate) async fn listen(service: &RunningService<RoleClient, Handler>) -> Option<Subscription> {
    let announces = service
        .peer()
        .peer_info()
        .and_then(|info| info.capabilities.tools.as_ref().and_then(|tools| tools.list_changed))
        .unwrap_or(false);
    if !announces {
        return None;
    }
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let listening = service.peer().listen(filter);
    match tokio::time::timeout(Duration::from_secs(5), listening).await {
        Ok(Ok(subscription)) => Some(subscription),
        _ => None,
    }
}
