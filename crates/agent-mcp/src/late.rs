//! [`McpTools`]: the MCP tools of a session as `agent_exec::LateTools`, so no model request waits
//! for a server.
//!
//! Servers start in the background when the session begins. Before each model request the loop
//! calls [`LateTools::refresh`]: the servers that finished starting since then join with their
//! tools, a server that failed is reported once (with the tail of its stderr), and a server that
//! sent `tools/list_changed` is listed again, its new list joining//! before the next request.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex, PoisonError, RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_core::{BoxFuture, Tool};
use agent_exec::{LateTools, ToolLimits};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::session::{McpSession, Started};

type Report = Arc<dyn Fn(&str) + Send + Sync>;

struct Ready {
    server: String,
    tools: Vec<(Arc<dyn Tool>, ToolLimits)>,
}

/// The MCP tools of a session; register it with `AgentBuilder::late_tools`.
pub struct McpTools {
    session: Arc<McpSession>,
    receiver: tokio::sync::Mutex<UnboundedReceiver<Started>>,
    ready: RwLock<Vec<Ready>>,
    /// Servers whose first start has answered.
    answered: Mutex<HashSet<String>>,
    /// Servers whose last start failed, with the report.
    failed: Mutex<Vec<(String, String)>>,
    /// Results were taken in outside `refresh`, so the next `refresh` reports a change.
    changed: AtomicBool,
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
        let report: Report = Arc::new(report);
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        for server in session.servers() {
            let server = server.clone();
            let session = session.clone();
            let sender = sender.clone();
            let report = report.clone();
            tokio::spawn(async move {
                let started = session.start_one(server).await;
                // Reported as soon as it is known, once; the session goes on without it.
                report_problems(&started, report.as_ref());
                let _ = sender.send(started);
            });
        }
        Arc::new(Self {
            answered: Mutex::new(HashSet::new()),
            failed: Mutex::new(Vec::new()),
            changed: AtomicBool::new(false),
            session,
            receiver: tokio::sync::Mutex::new(receiver),
            ready: RwLock::new(Vec::new()),
            report,
        })
    }

    /// Waits until every server has started or failed (each within its startup timeout), for
    /// commands that need the whole list at once (`agent tools`).
    pub async fn wait_all(&self) {
        self.wait_until(|_| true).await;
    }

    /// Waits for the servers marked `required = true`; the first that failed to start is the
    /// error, and the session should not begin without it.
    pub async fn wait_required(&self) -> Result<(), String> {
        let required = |server: &str| {
            self.session.servers().iter().any(|s| s.name() == server && s.config().required)
        };
        self.wait_until(required).await;
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        match failed.iter().find(|(server, _)| required(server)) {
            Some((_, error)) => Err(error.clone()),
            None => Ok(()),
        }
    }

    /// Takes in results until every server `wanted` names has answered its first start.
    async fn wait_until(&self, wanted: impl Fn(&str) -> bool) {
        loop {
            let waiting = {
                let answered = self.answered.lock().unwrap_or_else(PoisonError::into_inner);
                self.session
                    .servers()
                    .iter()
                    .any(|server| wanted(server.name()) && !answered.contains(server.name()))
            };
            if !waiting {
                return;
            }
            let next = self.receiver.lock().await.recv().await;
            match next {
                Some(started) => {
                    self.take(started);
                    self.changed.store(true, Ordering::Release);
                }
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
        self.answered.lock().unwrap_or_else(PoisonError::into_inner).insert(name.clone());
        let tools = match started.tools {
            Ok(tools) => tools,
            Err(err) => {
                let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
                failed.push((name.clone(), err.to_string()));
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
    fn refresh(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            // A server that announced a new tool list is listed again now, before the request,
            // so the model sees the new list from this turn on. Servers still starting are not
            // waited for.
            for server in self.session.servers() {
                if !server.take_list_changed().await {
                    continue;
                }
                let started = self.session.refresh(server).await;
                report_problems(&started, self.report.as_ref());
                self.take(started);
                self.changed.store(true, Ordering::Release);
            }
            let mut changed = self.changed.swap(false, Ordering::AcqRel);
            loop {
                // Held by `wait_until` only, which no loop runs beside.
                let Ok(mut receiver) = self.receiver.try_lock() else { break };
                let Some(started) = receiver.try_recv().ok() else { break };
                drop(receiver);
                self.take(started);
                changed = true;
            }
            changed
        })
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

fn report_problems(started: &Started, report: &(dyn Fn(&str) + Send + Sync)) {
    for skipped in &started.skipped {
        report(&skipped.to_string());
    }
    if let Err(err) = &started.tools {
        report(&err.to_string());
    }
}
