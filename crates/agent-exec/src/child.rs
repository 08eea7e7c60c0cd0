//! Child agents: a general facility to run an agent in a fresh context under a narrowed copy of
//! the parent's executor, with hard budgets, and to report back only its answer and its usage.
//!
//! This crate names no tool: a front end (or agent-tools' `task` tool) asks [`Children::run`]
//! with a [`TaskRequest`] and turns the [`TaskReport`] into what its model reads. What a child
//! inherits, the budgets and why: `docs/agents.md`.

mod definition;
mod links;
mod run;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex, OnceLock, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use agent_core::{CancellationToken, ModelClient, Usage};
use serde::Serialize;
use tokio::sync::{RwLock, Semaphore};

pub use self::{
    definition::{AgentDefinition, DefinitionSource},
    links::{ChildLink, Recorded},
};
use crate::{Executor, agent::AgentEvent, executor::child::ChildTemplate};

/// The session's limits on children. Every field is a hard limit the runtime enforces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChildLimits {
    /// Model turns one child may take (a definition's `max_turns` can only lower it).
    pub max_turns: usize,
    /// Tokens (input plus output, as the server reports them) one child may use.
    pub max_tokens: u64,
    /// How long one child may run.
    pub wall_time: Duration,
    /// Children running at once; more wait their turn.
    pub max_concurrent: usize,
    /// How deep children may nest: 1 lets the parent start children and no child start one.
    pub max_depth: usize,
    /// Tokens all children of the session may use together.
    pub session_tokens: u64,
}

impl Default for ChildLimits {
    fn default() -> Self {
        Self {
            max_turns: 30,
            max_tokens: 400_000,
            wall_time: Duration::from_secs(600),
            max_concurrent: 4,
            max_depth: 1,
            session_tokens: 2_000_000,
        }
    }
}

/// Where a child's model comes from: the front end decides what a definition's `model` means
/// (and, replaying a session, plays each child's recording: [`Recorded`]).
pub trait ModelSource: Send + Sync {
    /// A client for the child `start` describes: for `start.model` (a definition's `model`
    /// field), or for the parent's model when `None`; `None` when that model cannot be had, and
    /// the runner then asks again with `model: None`.
    fn model(&self, start: &ChildStart<'_>) -> Option<Box<dyn ModelClient>>;

    /// Why no model could be had for `start`, as the parent model reads it.
    fn unavailable(&self, start: &ChildStart<'_>) -> String {
        let _ = start;
        "no model is available for the child".to_owned()
    }
}

/// The child a [`ModelSource`] is asked a model for.
#[derive(Debug, Clone, Copy)]
pub struct ChildStart<'a> {
    /// The child's id.
    pub agent_id: &'a str,
    /// The call that starts it.
    pub request: &'a TaskRequest,
    /// The model its definition names; `None` for the parent's.
    pub model: Option<&'a str>,
}

/// One `task` call: what the child is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRequest {
    /// A few words for people watching (the REPL, `--json`).
    pub description: String,
    /// The whole task, the child's first and only user message.
    pub prompt: String,
    /// The definition to use; `general` when `None`.
    pub agent: Option<String>,
    /// The session id of the caller: the parent's, or a child's when a child asks.
    pub caller: String,
    /// The `call_id` of the call that asked, to link the child's transcript from it.
    pub call_id: String,
}

/// The limit that stopped a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildLimit {
    /// [`ChildLimits::max_turns`] or the definition's `max_turns`.
    MaxTurns,
    /// [`ChildLimits::max_tokens`].
    Tokens,
    /// [`ChildLimits::wall_time`].
    WallTime,
    /// [`ChildLimits::session_tokens`].
    SessionTokens,
}

impl ChildLimit {
    /// The limit's name as the observation and `--json` say it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChildLimit::MaxTurns => "max_turns",
            ChildLimit::Tokens => "max_tokens",
            ChildLimit::WallTime => "wall_time",
            ChildLimit::SessionTokens => "session_tokens",
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ChildEnd {
    /// It answered.
    Answered,
    /// A limit stopped it.
    Limit {
        /// Which.
        limit: ChildLimit,
        /// The limit's value, as a person reads it (`2`, `1000 tokens`, `10s`).
        value: String,
    },
    /// The parent was cancelled or the session ended.
    Cancelled,
    /// It was never started, or its model failed; why.
    Failed {
        /// Why, in a sentence the parent model reads.
        reason: String,
    },
}

/// What a child did, for the parent's observation and the front end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskReport {
    /// The child's id (`<parent session>.c<N>`): its transcript's name and its hooks' `agent_id`.
    pub agent_id: String,
    /// The caller's session id.
    pub parent_id: String,
    /// The definition used.
    pub agent: String,
    /// How it ended.
    pub end: ChildEnd,
    /// Its last assistant text, when it wrote one.
    pub answer: Option<String>,
    /// Model turns taken.
    pub turns: usize,
    /// Tool calls made, with their tool names in order.
    pub calls: Vec<String>,
    /// Tokens used, as the server reported them.
    pub usage: Usage,
    /// How long it ran, waiting for its turn excluded.
    pub elapsed: Duration,
    /// Its transcript, when the session has a folder.
    pub transcript: Option<PathBuf>,
    /// When the child started and stopped, in milliseconds since the session's children began
    /// (for the overlap of children in one batch).
    pub span_ms: (u64, u64),
}

/// What a front end hears while children run: every event of every child, with its ids.
#[derive(Debug, Clone)]
pub struct ChildEvent {
    /// The child's id.
    pub agent_id: String,
    /// Its caller's session id.
    pub parent_id: String,
    /// The definition's name.
    pub agent: String,
    /// The event.
    pub event: AgentEvent,
}

/// Who hears child events.
pub type ChildObserver = Arc<dyn Fn(&ChildEvent) + Send + Sync>;

/// Tokens and count of every child so far, for the parent's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChildUsage {
    /// Children started.
    pub children: u64,
    /// Their tokens, summed.
    pub usage: Usage,
}

/// The children of one session: limits, counters, and what they inherit. Cheap to clone.
#[derive(Clone)]
pub struct Children {
    inner: Arc<Inner>,
}

struct Inner {
    limits: ChildLimits,
    models: Arc<dyn ModelSource>,
    /// What children inherit, from [`Children::attach`] until [`Children::stop_all`]. The
    /// template holds the parent's tools, and the `task` tool among them holds these children:
    /// a cycle of reference counts that would keep every tool of the session (its jobs table,
    /// its MCP connections, their temporary folders) alive after the session ended, which a
    /// process serving many sessions (`agent acp`) cannot afford. Ending the session drops it.
    template: Mutex<Option<Arc<ChildTemplate>>>,
    /// The project instructions every child gets after its own.
    project: OnceLock<String>,
    definitions: Vec<AgentDefinition>,
    /// Tool names no child is given (the parent's own plan tool, say), whatever it asks.
    withheld: Vec<String>,
    /// Tools that start children, not given to a child at the depth limit.
    spawners: Vec<String>,
    /// Held while a line is appended to `children/index.jsonl`.
    index: Mutex<()>,
    session_dir: Option<PathBuf>,
    secrets: Vec<String>,
    observer: Option<ChildObserver>,
    used: AtomicU64,
    usage: Mutex<ChildUsage>,
    running: Semaphore,
    /// Read-only children share it; a write-capable child holds it alone.
    writers: RwLock<()>,
    next: AtomicU64,
    /// The depth of every child session id.
    depth: Mutex<HashMap<String, usize>>,
    stop: CancellationToken,
    epoch: std::time::Instant,
}

/// How to build [`Children`].
pub struct ChildrenConfig {
    /// The limits.
    pub limits: ChildLimits,
    /// The definitions a call may name, one per name (built-ins included; the front end reads
    /// the files, e.g. with `agent_skills::definition::discover`).
    pub definitions: Vec<AgentDefinition>,
    /// Tools no child gets.
    pub withheld: Vec<String>,
    /// Tools that start children (`task`): a child that may not start one (at `max_depth`) is
    /// not offered them, so it spends no turn on a call that would be refused.
    pub spawners: Vec<String>,
    /// The parent's session folder: children's transcripts go in its `children/`.
    pub session_dir: Option<PathBuf>,
    /// Strings never written to a child's transcript (API keys).
    pub secrets: Vec<String>,
    /// Who hears child events.
    pub observer: Option<ChildObserver>,
}

impl Default for ChildrenConfig {
    fn default() -> Self {
        Self {
            limits: ChildLimits::default(),
            definitions: AgentDefinition::builtins(),
            withheld: Vec::new(),
            spawners: Vec::new(),
            session_dir: None,
            secrets: Vec::new(),
            observer: None,
        }
    }
}

impl Children {
    /// The children of a session whose models come from `models`. They can run once
    /// [`Children::attach`] has been given the parent's executor.
    pub fn new(models: Arc<dyn ModelSource>, config: ChildrenConfig) -> Self {
        // A resumed session numbers its children after those it already has.
        let numbered =
            config.session_dir.as_ref().map_or(0, |dir| links::last_number(&dir.join("children")));
        let inner = Inner {
            running: Semaphore::new(config.limits.max_concurrent.max(1)),
            limits: config.limits,
            models,
            template: Mutex::new(None),
            project: OnceLock::new(),
            definitions: config.definitions,
            withheld: config.withheld,
            spawners: config.spawners,
            index: Mutex::new(()),
            session_dir: config.session_dir,
            secrets: config.secrets,
            observer: config.observer,
            used: AtomicU64::new(0),
            usage: Mutex::new(ChildUsage::default()),
            writers: RwLock::new(()),
            next: AtomicU64::new(numbered),
            depth: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
            epoch: std::time::Instant::now(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Takes what children inherit from the parent's executor (tools, policy, hooks, approver,
    /// MCP connections) and the project instructions they get. The first call wins; after
    /// [`Children::stop_all`] nothing is taken.
    pub fn attach(&self, parent: &Executor, project_instructions: &str) {
        if self.inner.stop.is_cancelled() {
            return;
        }
        let mut template = self.inner.template.lock().unwrap_or_else(PoisonError::into_inner);
        if template.is_none() {
            *template = Some(Arc::new(parent.child_template()));
        }
        drop(template);
        let _ = self.inner.project.set(project_instructions.to_owned());
    }

    /// The limits.
    pub fn limits(&self) -> &ChildLimits {
        &self.inner.limits
    }

    /// The definitions a call may name.
    pub fn definitions(&self) -> Vec<AgentDefinition> {
        self.inner.definitions.clone()
    }

    /// Every child's tokens so far.
    pub fn usage(&self) -> ChildUsage {
        self.inner.usage.lock().map(|usage| usage.clone()).unwrap_or_default()
    }

    /// Stops every running child and refuses new ones (the session ends), and lets go of the
    /// parent's tools, so the session's tools can be freed (see `Inner::template`).
    pub fn stop_all(&self) {
        self.inner.stop.cancel();
        self.inner.template.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    /// Runs one child to its end; never fails: a refusal is a report saying why.
    pub async fn run(&self, request: TaskRequest, cancel: &CancellationToken) -> TaskReport {
        run::run(&self.inner, request, cancel).await
    }

    fn depth_of(inner: &Inner, session: &str) -> usize {
        inner.depth.lock().map(|depth| depth.get(session).copied().unwrap_or(0)).unwrap_or(0)
    }
}

impl Inner {
    fn add_usage(&self, usage: &Usage) -> u64 {
        let tokens = usage.input_tokens + usage.output_tokens;
        if let Ok(mut total) = self.usage.lock() {
            total.usage.input_tokens += usage.input_tokens;
            total.usage.cached_input_tokens += usage.cached_input_tokens;
            total.usage.output_tokens += usage.output_tokens;
            total.usage.reasoning_tokens += usage.reasoning_tokens;
        }
        self.used.fetch_add(tokens, Ordering::SeqCst) + tokens
    }

    fn since_epoch(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children").field("limits", &self.inner.limits).finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The session's children never outlive it.
        self.stop.cancel();
    }
}
