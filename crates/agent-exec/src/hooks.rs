//! Hooks: the user's own commands, run at fixed points of a session (before and after every tool
//! call, when a prompt is submitted, when the model stops, …), compatible with the JSON that
//! Claude Code's hooks read and print.
//!
//! The executor runs the tool events at its single dispatch point, so built-in tools, tools
//! added through the registry (MCP) and direct calls all pass through them; the loop and the front
//! end run the others. A hook runs outside the tool sandbox (it is the user's script) through
//! [`crate::process::run_unsandboxed`]: its own process group, a time limit, secrets scrubbed from
//! its environment, the workspace as its working directory. Decisions: `docs/hooks.md`.

mod reply;

use std::{
    fmt,
    path::{Path, PathBuf},
    str::FromStr,
    sync::Arc,
    time::Duration,
};

use agent_core::{CancellationToken, ToolSpec};
use regex::Regex;
use serde_json::{Map, Value};
use tracing::Instrument;

pub use self::reply::Permission;
use self::reply::Reply;
use crate::{
    PermissionMode,
    process::{self, ProcessSpec},
};

/// The default time limit of a hook.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// When a hook runs. The names are Claude Code's, and so are the config keys (`[[hooks.PreToolUse]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// A session starts (or resumes).
    SessionStart,
    /// The user submitted a prompt, before the model sees it.
    UserPromptSubmit,
    /// A tool call is about to run: after lookup, before validation and the permission policy.
    PreToolUse,
    /// A tool call succeeded.
    PostToolUse,
    /// A tool call failed (any error observation, a hook's own block excepted).
    PostToolUseFailure,
    /// The conversation is about to be compacted.
    PreCompact,
    /// The model answered and the run is about to end.
    Stop,
    /// The front end tells the user something needs them: an approval waits, or the agent waits
    /// for the next prompt. It cannot block anything.
    Notification,
    /// The session ends.
    SessionEnd,
}

impl HookEvent {
    /// Every event, in session order.
    pub const ALL: [HookEvent; 9] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PreCompact,
        HookEvent::Stop,
        HookEvent::Notification,
        HookEvent::SessionEnd,
    ];

    /// The event's name, as in the config file and the hook's `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Stop => "Stop",
            HookEvent::Notification => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// Whether the event is about one tool call (and so has a matcher and tool fields).
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HookEvent {
    type Err = HookError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookEvent::ALL.into_iter().find(|event| event.as_str() == s).ok_or_else(|| {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|event| event.as_str()).collect();
            HookError::UnknownEvent { name: s.to_owned(), known: known.join(", ") }
        })
    }
}

/// A hook that cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The event name is not one of [`HookEvent::ALL`].
    #[error("unknown hook event `{name}`; the events are: {known}")]
    UnknownEvent {
        /// The name as given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// The matcher is not a regular expression.
    #[error("hook matcher `{matcher}` is not a valid regular expression: {reason}")]
    Matcher {
        /// The matcher as given.
        matcher: String,
        /// What the regex parser reported.
        reason: String,
    },
}

/// One configured hook: which event, which tools, what to run.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    matcher: Option<Regex>,
    /// The command, run by `bash -c` in the workspace.
    pub command: String,
    /// How long it may run before it is killed (default [`DEFAULT_HOOK_TIMEOUT`]).
    pub timeout: Duration,
    /// Whether a hook that crashes, times out or prints unreadable JSON blocks (`true`) instead of
    /// being reported and ignored (`false`, the default).
    pub fail_closed: bool,
}

impl Hook {
    /// A hook running `command` on `event` for every tool, with the default time limit.
    pub fn new(event: HookEvent, command: impl Into<String>) -> Self {
        Self {
            event,
            matcher: None,
            command: command.into(),
            timeout: DEFAULT_HOOK_TIMEOUT,
            fail_closed: false,
        }
    }

    /// Runs only for tools one of whose names (see [`HookTool`]) the regex matches whole, as
    /// Claude Code's matchers do (`Bash`, `Edit|Write`, `mcp__github__.*`). An empty matcher or
    /// `*` matches every tool. For `Notification` it matches the notification's type
    /// (`permission_prompt`, `idle_prompt`); ignored for the other events.
    pub fn matcher(mut self, matcher: &str) -> Result<Self, HookError> {
        let matcher = matcher.trim();
        self.matcher = if matcher.is_empty() || matcher == "*" {
            None
        } else {
            let anchored = format!("^(?:{matcher})$");
            Some(Regex::new(&anchored).map_err(|err| HookError::Matcher {
                matcher: matcher.to_owned(),
                reason: err.to_string(),
            })?)
        };
        Ok(self)
    }

    /// The same hook with another time limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same hook, blocking when it fails instead of being ignored.
    pub fn fail_closed(mut self, fail_closed: bool) -> Self {
        self.fail_closed = fail_closed;
        self
    }

    fn matches(&self, tool: Option<&HookTool<'_>>) -> bool {
        match (&self.matcher, tool) {
            (None, _) | (Some(_), None) => true,
            (Some(regex), Some(tool)) => tool.names().any(|name| regex.is_match(name)),
        }
    }
}

/// The names a tool is known by to hooks: its own (`edit_file`), its permission rule name
/// (`Edit`), and the name Claude Code gives the same tool (`Edit`; `Write` for `write_file`).
/// A matcher matches any of them; `tool_name` on stdin is the Claude Code name when there is one.
#[derive(Debug, Clone, Copy)]
pub struct HookTool<'a> {
    /// The registered name.
    pub name: &'a str,
    /// The rule name.
    pub rule_name: &'a str,
}

impl<'a> HookTool<'a> {
    /// The names of the tool `spec` describes.
    pub fn of(spec: &'a ToolSpec) -> Self {
        Self { name: &spec.name, rule_name: &spec.rule_name }
    }

    /// The name Claude Code's hooks see for the same tool, for the built-in tools that have a
    /// counterpart there; other tools (MCP ones included) keep their own name.
    pub fn claude_code_name(&self) -> &'a str {
        match self.name {
            "bash" => "Bash",
            "read_file" => "Read",
            "write_file" => "Write",
            "edit_file" => "Edit",
            "grep" => "Grep",
            "glob" => "Glob",
            "list_dir" => "LS",
            "web_search" => "WebSearch",
            name => name,
        }
    }

    fn names(&self) -> impl Iterator<Item = &'a str> {
        [self.name, self.rule_name, self.claude_code_name()].into_iter()
    }
}

/// What the hooks of one event decided, all of them together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookResult {
    /// A hook blocked: exit code 2 (with its stderr), `decision: "block"`, or a `deny`
    /// permission decision; the reason is shown to the model (tool events) or the user.
    pub block: Option<String>,
    /// A `PreToolUse` permission decision other than deny.
    pub permission: Option<Permission>,
    /// The reason given with [`HookResult::permission`].
    pub permission_reason: Option<String>,
    /// A replacement for the tool input (`PreToolUse`), to be validated again.
    pub updated_input: Option<Value>,
    /// Text for the model: `additionalContext`, or plain stdout of `UserPromptSubmit` and
    /// `SessionStart` hooks.
    pub context: Vec<String>,
    /// A hook asked to stop the whole run (`"continue": false`), with its reason.
    pub stop: Option<String>,
}

/// A hook that misbehaved (crashed, hung, printed unreadable JSON), for the front end to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookProblem {
    /// The event it ran for.
    pub event: HookEvent,
    /// Its command.
    pub command: String,
    /// What went wrong, in one line.
    pub problem: String,
    /// Whether it blocked because it is `fail_closed`.
    pub blocked: bool,
}

impl fmt::Display for HookProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let then = if self.blocked { "blocked (fail_closed)" } else { "ignored" };
        write!(f, "{} hook `{}` {}; {then}", self.event, self.command, self.problem)
    }
}

/// Who hears about hooks that misbehave.
pub type ProblemSink = Arc<dyn Fn(&HookProblem) + Send + Sync>;

/// The hooks of a session, and what every hook's stdin shares: the session id, the transcript
/// path and the working directory. Cheap to clone.
#[derive(Clone, Default)]
pub struct Hooks {
    hooks: Arc<[Hook]>,
    session_id: String,
    cwd: PathBuf,
    transcript_path: Option<PathBuf>,
    permission_mode: Option<PermissionMode>,
    sink: Option<ProblemSink>,
    /// For a child agent's calls: its id and its definition's name (`agent_id`, `agent_type`).
    agent: Option<(String, String)>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks").field("hooks", &self.hooks).field("cwd", &self.cwd).finish()
    }
}

impl Hooks {
    /// These hooks, for a session whose details ([`Hooks::session`]) the builder fills in.
    pub fn new(hooks: impl IntoIterator<Item = Hook>) -> Self {
        Self { hooks: hooks.into_iter().collect(), ..Self::default() }
    }

    /// Whether there are no hooks at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks, in the order they run.
    pub fn hooks(&self) -> &[Hook] {
        &self.hooks
    }

    /// The same hooks for the session `session_id` working in `cwd` (the workspace).
    pub fn session(mut self, session_id: &str, cwd: &Path) -> Self {
        self.session_id = session_id.to_owned();
        self.cwd = cwd.to_path_buf();
        self
    }

    /// The transcript file hooks are told about (`transcript_path`).
    pub fn transcript_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.transcript_path = Some(path.into());
        self
    }

    /// The same hooks for the calls of a child agent: stdin keeps the parent's `session_id` and
    /// adds `agent_id` (the child's id) and `agent_type` (its definition's name), as Claude Code
    /// does for subagents.
    pub fn for_agent(mut self, agent_id: &str, agent_type: &str) -> Self {
        self.agent = Some((agent_id.to_owned(), agent_type.to_owned()));
        self
    }

    /// The permission mode hooks are told about (`permission_mode`).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = Some(mode);
        self
    }

    /// Who hears about misbehaving hooks; without one they are logged with `tracing`.
    pub fn on_problem(mut self, sink: ProblemSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Whether any hook would run for `event` (and `tool`, for tool events): the executor's check
    /// before it builds any hook input, so a session without hooks pays nothing.
    pub fn wants(&self, event: HookEvent, tool: Option<&HookTool<'_>>) -> bool {
        self.hooks.iter().any(|hook| hook.event == event && hook.matches(tool))
    }

    /// Runs the hooks of `event` (those whose matcher matches `tool`) one after another, in
    /// configuration order, with the common fields plus `fields` on stdin. The first block or
    /// stop ends the sequence; a replaced input is what the next hook sees.
    pub async fn run(
        &self,
        event: HookEvent,
        tool: Option<&HookTool<'_>>,
        fields: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> HookResult {
        let mut input = self.common(event);
        if let Some(tool) = tool {
            input.insert("tool_name".into(), tool.claude_code_name().into());
            input.insert("agent_tool_name".into(), tool.name.into());
        }
        input.extend(fields);
        let mut result = HookResult::default();
        for hook in self.hooks.iter().filter(|hook| hook.event == event && hook.matches(tool)) {
            if let Some(updated) = &result.updated_input {
                input.insert("tool_input".into(), updated.clone());
            }
            let reply = self.run_one(hook, &input, cancel).await;
            if reply.merge_into(&mut result) {
                break;
            }
        }
        result
    }

    /// Runs `PreCompact` hooks: `trigger` is `"manual"` or `"auto"`. For the compaction step of
    /// the loop; a block means "do not compact now".
    pub async fn pre_compact(
        &self,
        trigger: &str,
        custom_instructions: Option<&str>,
        cancel: &CancellationToken,
    ) -> HookResult {
        let mut fields = Map::new();
        fields.insert("trigger".into(), trigger.into());
        fields.insert(
            "custom_instructions".into(),
            custom_instructions.map_or(Value::Null, Value::from),
        );
        self.run(HookEvent::PreCompact, None, fields, cancel).await
    }

    /// Runs the `Notification` hooks whose matcher matches `notification_type` (Claude Code's:
    /// `permission_prompt` when an approval waits, `idle_prompt` when the agent waits for the
    /// next prompt), with `message` and `notification_type` on stdin. Whatever they answer is
    /// ignored: a notification cannot block anything.
    pub async fn notification(
        &self,
        notification_type: &str,
        message: &str,
        cancel: &CancellationToken,
    ) {
        let event = HookEvent::Notification;
        let mut input = self.common(event);
        input.insert("message".into(), message.into());
        input.insert("notification_type".into(), notification_type.into());
        for hook in self.notification_hooks(notification_type) {
            self.run_one(hook, &input, cancel).await;
        }
    }

    /// Whether a `Notification` hook would run for `notification_type`.
    pub fn wants_notification(&self, notification_type: &str) -> bool {
        self.notification_hooks(notification_type).next().is_some()
    }

    fn notification_hooks<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Hook> {
        self.hooks.iter().filter(move |hook| {
            hook.event == HookEvent::Notification
                && hook.matcher.as_ref().is_none_or(|regex| regex.is_match(kind))
        })
    }

    fn common(&self, event: HookEvent) -> Map<String, Value> {
        let mut input = Map::new();
        input.insert("session_id".into(), self.session_id.clone().into());
        let transcript = self.transcript_path.as_ref().map(|path| path.display().to_string());
        input.insert("transcript_path".into(), transcript.map_or(Value::Null, Value::from));
        input.insert("cwd".into(), self.cwd.display().to_string().into());
        if let Some(mode) = self.permission_mode {
            input.insert("permission_mode".into(), mode.as_str().into());
        }
        input.insert("hook_event_name".into(), event.as_str().into());
        if let Some((id, kind)) = &self.agent {
            input.insert("agent_id".into(), id.clone().into());
            input.insert("agent_type".into(), kind.clone().into());
        }
        input
    }

    async fn run_one(
        &self,
        hook: &Hook,
        input: &Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Reply {
        let stdin = serde_json::to_vec(input).unwrap_or_default();
        let mut spec = ProcessSpec::bash(hook.command.as_str());
        spec.separate_stderr = true;
        spec.max_output_bytes = 256 * 1024;
        spec.stdin = Some(stdin);
        let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
            .chain([
                ("AGENT_PROJECT_DIR".into(), self.cwd.clone().into()),
                // What Claude Code's hook scripts use to find the project; set so they work here.
                ("CLAUDE_PROJECT_DIR".into(), self.cwd.clone().into()),
            ])
            .collect();
        let spec = spec.base_env(env);
        let cwd =
            if self.cwd.as_os_str().is_empty() { PathBuf::from(".") } else { self.cwd.clone() };
        let span = tracing::debug_span!("hook", event = %hook.event, command = %hook.command);
        let output = process::run_unsandboxed(spec, cwd, cancel.clone(), Some(hook.timeout))
            .instrument(span)
            .await;
        let reply = Reply::from_process(hook, output);
        if let Some(problem) = &reply.problem {
            let problem = HookProblem {
                event: hook.event,
                command: hook.command.clone(),
                problem: problem.clone(),
                blocked: hook.fail_closed,
            };
            match &self.sink {
                Some(sink) => sink(&problem),
                None => tracing::warn!("{problem}"),
            }
        }
        reply
    }
}
