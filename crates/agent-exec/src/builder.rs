//! The front door: [`AgentBuilder`] wires tools, the permission policy, the workspace and the
//! loop's settings together, and [`Agent`] runs prompts to a [`Finish`] while keeping the
//! conversation for the next prompt.
//!
//! Everything here is a thin composition of the lower-level parts ([`Registry`],
//! [`PolicyBuilder`], [`Executor`], [`agent::run`]); a program that needs something different can
//! use those directly.

mod editor;
mod mode;
use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use agent_core::{ModelClient, Tool, ToolChoice};

pub use self::agent::Agent;
use crate::{
    Approver, Background, Checkpointer, Executor, ExecutorConfig, Hooks, LateTools, PermissionMode,
    PolicyBuilder, Registry, RuleAction, ToolLimits, Workspace,
    agent::AgentConfig,
    compaction::ContextConfig,
    conversation::Conversation,
    error::{Error, Result},
    plan::Pinned,
};

mod agent;

/// The instructions an [`Agent`] gets when the builder is given none: short, about the two
/// mistakes models make most with tools, and naming no tool (what to use for what is
/// [`AgentBuilder::tool_guidance`], sent only for the tools the agent has).
pub const DEFAULT_INSTRUCTIONS: &str = "\
You are a coding agent working in the user's workspace through tools; paths are relative to it.
To read, search or change files, call the tool made for it rather than a shell command.
Never invent tool output. If a call fails, read the error and fix the call.
Be concise. When you are done, answer in plain text without calling tools.";

/// Builds an [`Agent`] (with a model) or an [`Executor`] (tools and policy only).
///
/// ```
/// use agent_exec::{AgentBuilder, PermissionMode};
///
/// let dir = tempfile::tempdir()?;
/// let executor = AgentBuilder::new(dir.path())
///     .permission_mode(PermissionMode::DontAsk)
///     .allow("Read(src/**)")
///     .build_executor()?;
/// assert!(executor.specs().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AgentBuilder {
    workspace: PathBuf,
    tools: Vec<(Arc<dyn Tool>, ToolLimits)>,
    only: Option<Vec<String>>,
    mode: PermissionMode,
    rules: Vec<(RuleAction, String, String)>,
    approver: Option<Arc<dyn Approver>>,
    late: Option<Arc<dyn LateTools>>,
    deferred: Vec<(String, crate::Relevant)>,
    hooks: Hooks,
    config: AgentConfig,
    executor: ExecutorConfig,
    background: Option<Arc<dyn Background>>,
    checkpoints: Option<Arc<dyn Checkpointer>>,
    pinned: Option<Arc<dyn Pinned>>,
    /// Lines of the instructions about one tool each, as (tool name, line).
    guidance: Vec<(String, String)>,
    /// Project instructions, sent after the instructions and the tool guidance.
    project: Vec<String>,
}

impl AgentBuilder {
    /// A builder for an agent working in `workspace` (which must exist), in the `default`
    /// permission mode, with no tools, no rules and [`DEFAULT_INSTRUCTIONS`].
    pub fn new(workspace: impl AsRef<Path>) -> Self {
        Self {
            workspace: workspace.as_ref().to_path_buf(),
            tools: Vec::new(),
            only: None,
            mode: PermissionMode::Default,
            rules: Vec::new(),
            approver: None,
            late: None,
            deferred: Vec::new(),
            background: None,
            checkpoints: None,
            pinned: None,
            guidance: Vec::new(),
            project: Vec::new(),
            hooks: Hooks::default(),
            config: AgentConfig::new(DEFAULT_INSTRUCTIONS),
            executor: ExecutorConfig::new("session"),
        }
    }

    /// Adds a tool with the executor's default limits.
    pub fn tool(self, tool: Arc<dyn Tool>) -> Self {
        self.tool_with_limits(tool, ToolLimits::default())
    }

    /// Adds a tool with its own time limit or output cap.
    pub fn tool_with_limits(mut self, tool: Arc<dyn Tool>, limits: ToolLimits) -> Self {
        self.tools.push((tool, limits));
        self
    }

    /// Adds several tools (for example `agent_tools::builtin(…)?`).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools.into_iter().map(|tool| (tool, ToolLimits::default())));
        self
    }

    /// Replaces or drops the tools added so far, one at a time: a front end's choice of which
    /// tool a model gets and in which shape ([`agent_core::Reshaped`]); `None` drops the tool.
    pub fn map_tools(mut self, mut f: impl FnMut(Arc<dyn Tool>) -> Option<Arc<dyn Tool>>) -> Self {
        let tools = std::mem::take(&mut self.tools).into_iter();
        self.tools = tools.filter_map(|(tool, limits)| Some((f(tool)?, limits))).collect();
        self
    }

    /// Offers the model only the tools with these names (or aliases); the others are not
    /// registered. Naming a tool that was not added is an error at build time.
    pub fn only_tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The permission mode (default: [`PermissionMode::Default`]).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// Adds a permission rule such as `Bash(cargo test *)`; `origin` names where it came from
    /// (a settings file, a flag) in warnings. Rules are parsed at build time.
    pub fn rule(mut self, action: RuleAction, rule: &str, origin: &str) -> Self {
        self.rules.push((action, rule.to_owned(), origin.to_owned()));
        self
    }

    /// Adds an allow rule.
    pub fn allow(self, rule: &str) -> Self {
        self.rule(RuleAction::Allow, rule, "allow")
    }

    /// Adds an ask rule.
    pub fn ask(self, rule: &str) -> Self {
        self.rule(RuleAction::Ask, rule, "ask")
    }

    /// Adds a deny rule.
    pub fn deny(self, rule: &str) -> Self {
        self.rule(RuleAction::Deny, rule, "deny")
    }

    /// Who answers when the policy asks; without one, such calls are denied with an observation
    /// naming the rule that would allow them.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Offers the tool `name` (added with [`AgentBuilder::tool`] or [`AgentBuilder::tools`])
    /// only from the first request after `relevant` says so, appended at the end of the tool
    /// list; it can be called before that. A name that is not registered is ignored.
    pub fn offer_when(mut self, name: &str, relevant: crate::Relevant) -> Self {
        self.deferred.push((name.to_owned(), relevant));
        self
    }

    /// Tools that join after the session started (MCP servers still starting); the `only_tools`
    /// filter does not apply to them.
    pub fn late_tools(mut self, late: Arc<dyn LateTools>) -> Self {
        self.late = Some(late);
        self
    }

    /// Commands to run around tool calls and at the other points of a session (see
    /// [`crate::hooks`]); they get the executor's session id and the workspace.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The system prompt sent with every request (the tool guidance and the project instructions
    /// follow it).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config.instructions = instructions.into();
        self
    }

    /// The most model turns one prompt may take (default 50).
    pub fn max_turns(mut self, max_turns: usize) -> Self {
        self.config.max_turns = max_turns;
        self
    }

    /// How the model may use tools on every turn (default: automatic).
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.config.tool_choice = choice;
        self
    }

    /// Keeps every request inside the model's context window: counts tokens, compacts when a
    /// request would pass the threshold or the server reports an overflow (see
    /// `docs/context.md`). Without it the whole transcript is sent however long it grows.
    pub fn context(mut self, context: ContextConfig) -> Self {
        self.config.context = Some(context);
        self
    }

    /// Adds project instructions (the `AGENTS.md` files, see [`crate::project_doc`]) after the
    /// instructions; they are sent with them on every request and never compacted.
    pub fn project_instructions(mut self, text: &str) -> Self {
        if !text.is_empty() {
            self.project.push(text.to_owned());
        }
        self
    }

    /// A line of the instructions about the tool `tool` (its name or an alias), sent after the
    /// instructions only when that tool is offered: registered, and not left out by
    /// [`AgentBuilder::only_tools`]. A model is never told about a tool it does not have.
    pub fn tool_guidance(mut self, tool: &str, line: &str) -> Self {
        self.guidance.push((tool.to_owned(), line.to_owned()));
        self
    }

    /// The session's background work (the job table the bash and job tools were given): the
    /// loop tells the model what finished before each request, and a compaction's ledger lists
    /// what still runs.
    pub fn background(mut self, background: Arc<dyn Background>) -> Self {
        self.background = Some(background);
        self
    }

    /// Keeps checkpoints of what each call writes, so turns can be undone (docs/checkpoints.md):
    /// the executor tells `checkpoints` about every call that may write, its children's included.
    pub fn checkpoints(mut self, checkpoints: Arc<dyn Checkpointer>) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// Session state every compaction keeps verbatim (a [`crate::plan::PlanBook`]).
    pub fn pinned(mut self, pinned: Arc<dyn Pinned>) -> Self {
        self.pinned = Some(pinned);
        self
    }

    /// [`AgentBuilder::background`] for the sandbox's job table, the one kind of background work
    /// the crate knows; kept so programs written when the builder took a `Jobs` still build.
    /// `agent_tools::BuiltinTools::builtin_tools` registers the bash tool's table itself.
    pub fn jobs(self, jobs: crate::jobs::Jobs) -> Self {
        self.background(Arc::new(jobs))
    }

    /// Replaces the loop's settings as a whole.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// Replaces the executor's settings as a whole (session id, timeouts, output cap, where full
    /// outputs are saved).
    pub fn executor_config(mut self, config: ExecutorConfig) -> Self {
        self.executor = config;
        self
    }

    /// The executor alone: tools, policy and approver, for running calls without a model. Rules
    /// that parse but can never match are kept inert; read them from
    /// [`PermissionPolicy::warnings`](crate::PermissionPolicy::warnings).
    pub fn build_executor(self) -> Result<Executor> {
        let workspace = Workspace::new(&self.workspace)?;
        let mut registry = Registry::new();
        if let Some(only) = &self.only {
            for name in only {
                let known = self.tools.iter().any(|(tool, _)| {
                    let spec = tool.spec();
                    spec.name == *name || spec.aliases.iter().any(|alias| alias == name)
                });
                if !known {
                    let known = self.tools.iter().map(|(tool, _)| tool.spec().name.clone());
                    return Err(Error::UnknownTool {
                        name: name.clone(),
                        known: known.collect::<Vec<_>>().join(", "),
                    });
                }
            }
        }
        for (tool, limits) in self.tools {
            let spec = tool.spec();
            let offered = self.only.as_ref().is_none_or(|only| {
                only.iter().any(|name| spec.name == *name || spec.aliases.contains(name))
            });
            if offered {
                registry.register_with_limits(tool, limits)?;
            }
        }
        let mut policy = PolicyBuilder::new(workspace, self.mode);
        for spec in registry.specs() {
            policy.known_spec(spec);
        }
        for (action, rule, origin) in &self.rules {
            policy.rule(*action, rule, origin)?;
        }
        let mut executor = Executor::new(registry, policy.build(), self.executor);
        if let Some(approver) = self.approver {
            executor = executor.with_approver(approver);
        }
        if let Some(late) = self.late {
            executor = executor.with_late_tools(late);
        }
        for (name, relevant) in self.deferred {
            executor = executor.with_deferred(&name, relevant);
        }
        if let Some(background) = self.background {
            executor = executor.with_background(background);
        }
        if let Some(pinned) = self.pinned {
            executor = executor.with_pinned(pinned);
        }
        if let Some(checkpoints) = self.checkpoints {
            executor = executor.with_checkpoints(checkpoints);
        }
        if !self.hooks.is_empty() {
            let mode = executor.policy().mode();
            executor = executor.with_hooks(self.hooks.permission_mode(mode));
        }
        Ok(executor)
    }

    /// The agent: this builder's executor driven by `model`.
    pub fn build(self, model: impl ModelClient + 'static) -> Result<Agent> {
        self.build_boxed(Box::new(model))
    }

    /// Like [`AgentBuilder::build`], for a model chosen at run time.
    pub fn build_boxed(self, model: Box<dyn ModelClient>) -> Result<Agent> {
        let mut config = self.config.clone();
        let (executor, instructions) = self.build_executor_and_instructions()?;
        config.instructions = instructions;
        Ok(Agent { model, executor, config, conversation: Conversation::default() })
    }

    /// The executor, and the instructions an agent built from this builder sends with every
    /// request: the instructions, the guidance of the offered tools as one paragraph, and the
    /// project instructions. For a front end that runs no model but reports what a request
    /// carries (`agent tools list --tokens`); [`AgentBuilder::build`] sends exactly this text.
    pub fn build_executor_and_instructions(mut self) -> Result<(Executor, String)> {
        let mut instructions = std::mem::take(&mut self.config.instructions);
        let guidance = std::mem::take(&mut self.guidance);
        let project = std::mem::take(&mut self.project);
        let executor = self.build_executor()?;
        let offered = |tool: &str| executor.registry().get(tool).is_some();
        let lines = guidance.iter().filter(|(tool, _)| offered(tool)).map(|(_, line)| line);
        for (index, line) in lines.enumerate() {
            instructions.push_str(if index == 0 { "\n\n" } else { "\n" });
            instructions.push_str(line);
        }
        for text in &project {
            instructions.push_str("\n\n");
            instructions.push_str(text);
        }
        Ok((executor, instructions))
    }
}
