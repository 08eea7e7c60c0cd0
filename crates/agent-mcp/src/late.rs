//! [`McpTools`]: the MCP tools of a session as `agent_exec::LateTools`, so no model request waits
//! for a server.
//!
//! Servers start in the background when the session begins. Before each model request the loop
//! calls [`LateTools::refresh`]: the servers that finished starting since then join with their
//! tools, a server that failed is reported once (with the tail of its stderr), and a server that
//! sent `tools/list_changed` is listed again, its new list joining before the next request.
//!
//! With a [`ToolBudget`], tools whose schemas together take more tokens than the budget are not
//! offered one by one: the model gets `tool_search` (see `search.rs`) and the tools it loads.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex, PoisonError, RwLock, Weak,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_core::{BoxFuture, Tool, ToolError, ToolErrorKind, ToolSpec, Typed};
use agent_exec::{LateTools, ToolLimits};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::{
    search::{self, Entry, Loaded, ToolSearch},
    server::StartError,
    session::{McpSession, Started},
};

type Report = Arc<dyn Fn(&str) + Send + Sync>;

/// What one tool's schema costs in every request, in tokens.
pub type ToolCost = Arc<dyn Fn(&ToolSpec) -> usize + Send + Sync>;

/// How many tokens the MCP tools' schemas may take together before they are deferred: over the
/// budget, the model gets `tool_search` instead of the tools, and loads the ones it needs.
#[derive(Clone)]
pub struct ToolBudget {
    /// The most tokens the schemas of all MCP tools may take together.
    pub tokens: usize,
    /// Counts one tool's schema. This crate knows no wire format, so the front end passes the
    /// model side's count of the tool as sent (the CLI: `agent_model::tool_tokens`).
    pub cost: ToolCost,
}

impl ToolBudget {
    /// The default budget, in tokens.
    pub const DEFAULT_TOKENS: usize = 8_000;
}

impl std::fmt::Debug for ToolBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBudget").field("tokens", &self.tokens).finish_non_exhaustive()
    }
}

struct Ready {
    server: String,
    tools: Vec<(Arc<dyn Tool>, ToolLimits)>,
    /// What the tools' schemas cost together, in tokens (0 without a budget).
    tokens: usize,
}

/// What is offered: every server's tools, and `tool_search` while they are over the budget.
#[derive(Default)]
struct Offer {
    servers: Vec<Ready>,
    search: Option<Arc<dyn Tool>>,
}

/// The MCP tools of a session; register it with `AgentBuilder::late_tools`.
pub struct McpTools {
    session: Arc<McpSession>,
    receiver: tokio::sync::Mutex<UnboundedReceiver<(Started, usize)>>,
    offer: RwLock<Offer>,
    /// Servers whose first start has answered.
    answered: Mutex<HashSet<String>>,
    /// Servers whose last start failed, with the report.
    failed: Mutex<Vec<StartError>>,
    /// Results were taken in outside `refresh`, or tools were loaded, so the next `refresh`
    /// reports a change.
    changed: AtomicBool,
    report: Report,
    budget: Option<ToolBudget>,
    /// The tools `tool_search` loaded, offered while the others are deferred.
    loaded: Mutex<HashSet<String>>,
    /// The budget was reported as passed (once a session).
    over_reported: AtomicBool,
    this: Weak<McpTools>,
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
        Self::start_with_budget(session, None, report)
    }

    /// [`McpTools::start`], deferring the tools behind `tool_search` while their schemas take
    /// more than `budget`.
    pub fn start_with_budget(
        session: McpSession,
        budget: Option<ToolBudget>,
        report: impl Fn(&str) + Send + Sync + 'static,
    ) -> Arc<Self> {
        let session = Arc::new(session);
        let report: Report = Arc::new(report);
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        for server in session.servers() {
            let server = server.clone();
            let session = session.clone();
            let sender = sender.clone();
            let report = report.clone();
            let budget = budget.clone();
            tokio::spawn(async move {
                let started = session.start_one(server).await;
                // Reported as soon as it is known, once; the session goes on without it.
                report_problems(&started, report.as_ref());
                let tokens = count(budget.as_ref(), &started).await;
                let _ = sender.send((started, tokens));
            });
        }
        Arc::new_cyclic(|this| Self {
            answered: Mutex::new(HashSet::new()),
            failed: Mutex::new(Vec::new()),
            changed: AtomicBool::new(false),
            session,
            receiver: tokio::sync::Mutex::new(receiver),
            offer: RwLock::new(Offer::default()),
            report,
            budget,
            loaded: Mutex::new(HashSet::new()),
            over_reported: AtomicBool::new(false),
            this: this.clone(),
        })
    }
    /// Waits until every server has started or failed (each within its startup timeout), for
    /// commands that need the whole list at once (`agent tools`).
    pub async fn wait_all(&self) {
        self.wait_until(|_| true).await;
    }

    /// Waits for the servers marked `required = true`; the first that failed to start is the
    /// error, and the session should not begin without it.
    pub async fn wait_required(&self) -> Result<(), StartError> {
        let required = |server: &str| {
            self.session.servers().iter().any(|s| s.name() == server && s.config().required)
        };
        self.wait_until(required).await;
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        match failed.iter().find(|error| required(&error.server)) {
            Some(error) => Err(error.clone()),
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
                Some((started, tokens)) => {
                    self.take(started, tokens);
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

    fn take(&self, started: Started, tokens: usize) {
        let name = started.server.name().to_owned();
        self.answered.lock().unwrap_or_else(PoisonError::into_inner).insert(name.clone());
        let tools = match started.tools {
            Ok(tools) => tools,
            Err(err) => {
                let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
                failed.push(err);
                Vec::new()
            }
        };
        let limits =
            ToolLimits { timeout: Some(started.server.config().tool_max()), output_cap: None };
        let tools: Vec<(Arc<dyn Tool>, ToolLimits)> =
            tools.into_iter().map(|tool| (Arc::new(tool) as Arc<dyn Tool>, limits)).collect();
        let mut offer = self.offer.write().unwrap_or_else(PoisonError::into_inner);
        match offer.servers.iter_mut().find(|ready| ready.server == name) {
            Some(entry) => {
                entry.tools = tools;
                entry.tokens = tokens;
            }
            None => offer.servers.push(Ready { server: name, tools, tokens }),
        }
        // Configuration order, whatever order the servers became ready in, so the tool list
        // stays stable for prompt caches once every server is up.
        let order =
            |name: &str| self.session.servers().iter().position(|server| server.name() == name);
        offer.servers.sort_by_key(|entry| order(&entry.server));
        self.update_search(&mut offer);
    }

    /// Offers `tool_search` while the tools' schemas together pass the budget, described with
    /// the servers it searches as they are now.
    fn update_search(&self, offer: &mut Offer) {
        let Some(budget) = &self.budget else { return };
        let total =
            offer.servers.iter().fold(0_usize, |sum, ready| sum.saturating_add(ready.tokens));
        if total <= budget.tokens {
            offer.search = None;
            return;
        }
        if !self.over_reported.swap(true, Ordering::AcqRel) {
            (self.report)(&format!(
                "the MCP tools' schemas take {total} tokens, more than the budget of {} \
                 (mcp_tool_budget_tokens): the model finds and loads them with `{}`",
                budget.tokens,
                search::NAME
            ));
        }
        let servers: Vec<(String, usize)> = offer
            .servers
            .iter()
            .filter(|ready| !ready.tools.is_empty())
            .map(|ready| (ready.server.clone(), ready.tools.len()))
            .collect();
        // The input type has a strict form (a unit test says so); were it ever refused, the
        // tools would simply all be offered.
        offer.search = Typed::new(ToolSearch::new(self.this.clone(), &servers))
            .ok()
            .map(|tool| Arc::new(tool) as Arc<dyn Tool>);
    }

    /// Every MCP tool, for `tool_search`.
    pub(crate) fn catalog(&self) -> Vec<Entry> {
        let offer = self.offer.read().unwrap_or_else(PoisonError::into_inner);
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        all_tools(&offer)
            .map(|(tool, _)| {
                let spec = tool.spec();
                Entry {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    loaded: loaded.contains(&spec.name),
                }
            })
            .collect()
    }

    /// Loads the tool `name` for the rest of the session: offered from the next request on.
    pub(crate) fn load(&self, name: &str) -> Loaded {
        let offer = self.offer.read().unwrap_or_else(PoisonError::into_inner);
        if find(&offer, name).is_none() {
            return Loaded::Unknown;
        }
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if !loaded.insert(name.to_owned()) {
            return Loaded::Already;
        }
        self.changed.store(true, Ordering::Release);
        Loaded::Now
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
                let tokens = count(self.budget.as_ref(), &started).await;
                self.take(started, tokens);
                self.changed.store(true, Ordering::Release);
            }
            let mut changed = self.changed.swap(false, Ordering::AcqRel);
            loop {
                // Held by `wait_until` only, which no loop runs beside.
                let Ok(mut receiver) = self.receiver.try_lock() else { break };
                let Some((started, tokens)) = receiver.try_recv().ok() else { break };
                drop(receiver);
                self.take(started, tokens);
                changed = true;
            }
            changed
        })
    }

    fn tools(&self) -> Vec<(Arc<dyn Tool>, ToolLimits)> {
        let offer = self.offer.read().unwrap_or_else(PoisonError::into_inner);
        let Some(search) = &offer.search else { return all_tools(&offer).cloned().collect() };
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let loaded = all_tools(&offer).filter(|(tool, _)| loaded.contains(&tool.spec().name));
        std::iter::once((search.clone(), ToolLimits::default())).chain(loaded.cloned()).collect()
    }

    fn get(&self, name: &str) -> Option<(Arc<dyn Tool>, ToolLimits)> {
        let offer = self.offer.read().unwrap_or_else(PoisonError::into_inner);
        let Some(search) = &offer.search else { return find(&offer, name).cloned() };
        if name == search.spec().name {
            return Some((search.clone(), ToolLimits::default()));
        }
        // A tool the model has not loaded has not been offered: it gets `unavailable`'s word.
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        find(&offer, name).filter(|_| loaded.contains(name)).cloned()
    }

    fn unavailable(&self, name: &str) -> Option<ToolError> {
        let offer = self.offer.read().unwrap_or_else(PoisonError::into_inner);
        offer.search.as_ref()?;
        find(&offer, name)?;
        Some(ToolError::new(
            ToolErrorKind::other("tool_not_loaded"),
            format!(
                "`{name}` is not loaded yet. Load it first with {} {{\"load\": [\"{name}\"]}}; \
                 its schema comes with your next request, and you can call it then",
                search::NAME
            ),
        ))
    }
}

fn all_tools(offer: &Offer) -> impl Iterator<Item = &(Arc<dyn Tool>, ToolLimits)> {
    offer.servers.iter().flat_map(|entry| entry.tools.iter())
}

fn find<'a>(offer: &'a Offer, name: &str) -> Option<&'a (Arc<dyn Tool>, ToolLimits)> {
    all_tools(offer).find(|(tool, _)| tool.spec().name == name)
}

/// What `started`'s tools cost together under `budget` (0 without one). Counting may first
/// build a vocabulary's tables (tens of milliseconds), so it runs off the async thread.
async fn count(budget: Option<&ToolBudget>, started: &Started) -> usize {
    let (Some(budget), Ok(tools)) = (budget, &started.tools) else { return 0 };
    let specs: Vec<ToolSpec> = tools.iter().map(|tool| tool.spec().clone()).collect();
    let cost = budget.cost.clone();
    let counted = tokio::task::spawn_blocking(move || {
        specs.iter().fold(0_usize, |sum, spec| sum.saturating_add(cost(spec)))
    });
    // A count that panicked is taken as over any budget: `tool_search` still reaches every tool.
    counted.await.unwrap_or(usize::MAX)
}

fn report_problems(started: &Started, report: &(dyn Fn(&str) + Send + Sync)) {
    for skipped in &started.skipped {
        report(&skipped.to_string());
    }
    if let Err(err) = &started.tools {
        report(&err.to_string());
    }
}
