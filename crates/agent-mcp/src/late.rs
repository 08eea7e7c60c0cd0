//! [`McpTools`]: the MCP tools of a session as `agent_exec::LateTools`, so no model request waits
//! for a server.
//!
//! Servers start in the background when the session begins. Before each model request the loop
//! calls [`LateTools::refresh`]: the servers that finished starting since then join with their
//! tools, a server that failed is reported once (with the tail of its stderr), and a server that
//! sent `tools/list_changed` is listed again in the background, its new list joining the turn
//! after.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use agent_core::Tool;
use agent_exec::{LateTools, ToolLimits};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::session::{McpSession, Started};

type Report = Box<dyn Fn(&str) + Send + Sync>;

struct Ready {
    server: String,
    tools: Vec<(Arc<dyn Tool>, ToolLimits)>,
}

/// The MCP tools of a session; register it with `AgentBuilder::late_tools`.
pub struct McpTools {
    session: Arc<McpSession>,
    sender: UnboundedSender<Started>,
    receiver: tokio::sync::Mutex<UnboundedReceiver<Started>>,
    ready: RwLock<Vec<Ready>>,
    /// Servers whose first start has not answered yet.
    pending: Mutex<usize>,
    report: Report,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTools").field("session", &self.session).finish_non_exhaustive()
    }
}

impl McpTools {
    /// Starts every server of `session` in the background (inside a tokio runtime). `report`
    /// receives each problem once: a server that did not start, a tool left out.
    pub fn start(session: McpSession, report: impl Fn(&str) + Send + Sync + 'static) -> Arc<Self> {
        let session = Arc::new(session);
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        for server in session.servers() {
            let server = server.clone();
            let session = session.clone();
            let sender = sender.clone();
            tokio::spawn(async move {
                let _ = sender.send(session.start_one(server).await);
            });
        }
        Arc::new(Self {
            pending: Mutex::new(session.servers().len()),
            session,
            sender,
            receiver: tokio::sync::Mutex::new(receiver),
            ready: RwLock::new(Vec::new()),
            report: Box::new(report),
        })
    }

    /// Waits until every server has started or failed (each within its startup timeout), for
    /// commands that need the whole list at once (`agent tools`).
    pub async fn wait_all(&self) {
        loop {
            if *self.pending.lock().unwrap_or_else(PoisonError::into_inner) == 0 {
                return;
            }
            let next = self.receiver.lock().await.recv().await;
            match next {
                Some(started) => self.take(started),
                // Every sender is gone, so nothing more can arrive.
                None => return,
            }
        }
    }

    /// The session's servers.
    pub fn session(&self) -> &McpSession {
        &self.session
    }

    fn take(&self, started: Started) {
        let name = started.server.name().to_owned();
        let first = {
            let ready = self.ready.read().unwrap_or_else(PoisonError::into_inner);
            !ready.iter().any(|ready| ready.server == name)
        };
        if first {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            *pending = pending.saturating_sub(1);
        }
        for skipped in &started.skipped {
            (self.report)(&skipped.to_string());
        }
        let tools = match started.tools {
            Ok(tools) => tools,
            Err(err) => {
                (self.report)(&err.to_string());
                Vec::new()
            }
        };
        let limits =
            ToolLimits { timeout: Some(started.server.config().tool_max()), output_cap: None };
        let tools: Vec<(Arc<dyn Tool>, ToolLimits)> =
            tools.into_iter().map(|tool| (Arc::new(tool) as Arc<dyn Tool>, limits)).collect();
        let mut ready = self.ready.write().unwrap_or_else(PoisonError::into_inner);
        match ready.iter_mut().find(|ready| ready.server == name) {
            Some(entry) => entry.tools = tools,
            None => ready.push(Ready { server: name, tools }),
        }
        // Configuration order, whatever order the servers became ready in, so the tool list
        // stays stable for prompt caches once every server is up.
        let order =
            |name: &str| self.session.servers().iter().position(|server| server.name() == name);
        ready.sort_by_key(|entry| order(&entry.server));
    }
}

impl LateTools for McpTools {
    fn refresh(&self) -> bool {
        for server in self.session.servers() {
            if server.take_list_changed() {
                let server = server.clone();
                let session = self.session.clone();
                let sender = self.sender.clone();
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        let _ = sender.send(session.refresh(&server).await);
                    });
                }
            }
        }
        let mut changed = false;
        loop {
            // Held by `wait_all` only, which no loop runs beside.
            let Ok(mut receiver) = self.receiver.try_lock() else { break };
            let Some(started) = receiver.try_recv().ok() else { break };
            drop(receiver);
            self.take(started);
            changed = true;
        }
        changed
    }

    fn tools(&self) -> Vec<(Arc<dyn Tool>, ToolLimits)> {
        let ready = self.ready.read().unwrap_or_else(PoisonError::into_inner);
        ready.iter().flat_map(|entry| entry.tools.iter().cloned()).collect()
    }

    fn get(&self, name: &str) -> Option<(Arc<dyn Tool>, ToolLimits)> {
        let ready = self.ready.read().unwrap_or_else(PoisonError::into_inner);
        ready
            .iter()
            .flat_map(|entry| entry.tools.iter())
            .find(|(tool, _)| tool.spec().name == name)
            .cloned()
    }
}
