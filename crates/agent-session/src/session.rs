//! The session: opened once from the configuration with everything the `agent` program gives an
//! agent, then prompted turn by turn with its transcript kept on disk and each turn's checkpoint
//! begun before the model is called.

use std::{path::PathBuf, sync::Arc, time::Duration};

use crate::error::{Context, bail};
use agent_core::CancellationToken;
use agent_exec::{
    Agent, Approver, HookEvent, PermissionMode,
    agent::{AgentEvent, Conversation, Finish},
    jobs::{EndPolicy, JobEnd, Jobs},
    sandbox::SandboxPolicy,
};
use agent_tools::FileTracker;

mod model;
mod open;
pub(crate) mod toolbox;

pub use self::model::model_client;
use self::model::{WINDOW_PROBE_WAIT, context_config};
use crate::{
    Frontend, agents::Organizer, config::ModelSettings, hooks::Trust, log::SessionLog,
    waiting::Waiting,
};

/// How a front end wants its session built.
pub struct Launch<'a> {
    /// Continue this session id.
    pub resume: Option<&'a str>,
    /// Play this recorded transcript back instead of calling a model.
    pub replay: Option<PathBuf>,
    /// The permission mode when neither a flag nor the profile names one.
    pub default_mode: PermissionMode,
    /// Who answers approval prompts; `None` denies every call that would ask.
    pub approver: Option<Arc<dyn Approver>>,
    /// Who answers the model's questions (the `ask_user` tool, docs/ask-user.md): with one the
    /// tool is offered; `None` keeps it out of the tool list, and a call of it is answered that
    /// no one can reply.
    pub asker: Option<Arc<dyn agent_exec::ask::Asker>>,
    /// Whether the user may be asked to trust the project's hooks, skills and MCP servers.
    pub trust: Trust,
    /// Where the session says what the user should know, and asks what only a user answers.
    pub frontend: Arc<dyn Frontend>,
    /// MCP servers the front end adds to the configured ones (an ACP client's), by name.
    pub mcp_servers: Vec<(String, agent_mcp::ServerConfig)>,
}

/// A ready session: the library's agent (model, tools, policy, conversation) and its log.
pub struct Session {
    /// The agent: model, tools, policy and conversation.
    pub agent: Agent,
    /// The session's transcript on disk.
    pub log: SessionLog,
    /// The AGENTS.md files whose text is sent with the instructions.
    pub project_docs: Vec<PathBuf>,
    /// The skills and custom commands found (docs/skills.md).
    pub extras: crate::skills::Extras,
    /// The plan and the child agents.
    pub organizer: Organizer,
    /// The job table the bash tool starts jobs in (the agent's background work).
    jobs: Jobs,
    /// The model server and model in use (`/model` changes the name).
    model: ModelSettings,
    /// Whether a recorded transcript plays the model.
    replay: bool,
    /// `--tool-choice`: each prompt's first turn, whichever model answers it.
    tool_choice: Option<String>,
    /// The context window set by a flag or the profile, which outranks the model's own.
    configured_window: Option<u64>,
    /// How commands are sandboxed: the policy, and whether they may use the network.
    sandbox: (SandboxPolicy, agent_exec::network::NetworkMode),
    /// The session's own proxy in allow-list mode (its tools hold it too), for `/network`.
    pub proxy: Option<Arc<agent_exec::network::SessionProxy>>,
    /// The files the session's tools have read and written, for a front end's previews.
    tracker: Arc<FileTracker>,
    /// Where warnings during a prompt go.
    frontend: Arc<dyn Frontend>,
    /// Whether a failed log write was already reported, so it is reported once.
    log_failed: bool,
    /// The question to the server about its context window, while it may still be open.
    pub window_probe: Option<tokio::task::JoinHandle<()>>,
    /// The session's runtime, where a switched model's window question runs.
    runtime: tokio::runtime::Handle,
    /// How long the model has been silent, for "still waiting for the model".
    pub waiting: Waiting,
    /// How often that is said (`[limits] model_waiting_notice_secs`); `None` never.
    pub waiting_notice: Option<Duration>,
    /// The session's MCP servers, stopped when a front end that outlives the session closes
    /// it (`agent acp`).
    mcp: Option<Arc<agent_mcp::McpTools>>,
}

/// A `SessionStart` hook ended the session before it began, with its reason.
#[derive(Debug)]
pub struct StoppedByHook(pub String);

impl Session {
    /// Stops the session's MCP servers: a stdio server's process group is killed. For a front
    /// end that outlives its sessions (`agent acp`'s `session/close`); the others end with the
    /// process. A call after this would start the server again.
    pub async fn stop_mcp(&self) {
        let Some(mcp) = &self.mcp else { return };
        for server in mcp.session().servers() {
            server.connection_lost("the session was closed").await;
        }
    }

    /// Runs one prompt to its end, showing events through `show` and logging every item and
    /// event. Ctrl-C cancels this prompt's turn and tools (the caller's session goes on).
    pub async fn prompt(
        &mut self,
        prompt: String,
        show: &mut (dyn FnMut(&AgentEvent) + Send),
    ) -> crate::Result<Finish> {
        let cancel = CancellationToken::new();
        let listener = tokio::spawn(cancel_on_ctrl_c(cancel.clone())?);
        let finish = self.prompt_until(prompt, &cancel, show).await;
        listener.abort();
        finish
    }

    /// Runs one prompt to its end or until `cancel` is cancelled (an editor's `session/cancel`),
    /// showing and logging every event as [`Session::prompt`] does. Every front end's prompt
    /// passes here, so each one begins a checkpoint turn of its own (docs/checkpoints.md).
    pub async fn prompt_until(
        &mut self,
        prompt: String,
        cancel: &CancellationToken,
        show: &mut (dyn FnMut(&AgentEvent) + Send),
    ) -> crate::Result<Finish> {
        if let Some(checkpoints) = self.agent.executor().checkpoints() {
            // Where this prompt's transcript begins, so a fork after the previous turn cuts here.
            let offset = std::fs::metadata(self.log.transcript().path()).map_or(0, |m| m.len());
            if let Err(err) = checkpoints.begin_turn(offset, &prompt) {
                self.frontend.say(&format!("warning: checkpoints: {err}"));
            }
        }
        let log = &mut self.log;
        let log_failed = &mut self.log_failed;
        let frontend = &self.frontend;
        let on_event = |event: AgentEvent| {
            show(&event);
            // Items are written as the loop appends them, each line flushed, so the transcript
            // is complete up to the last finished step even if the process dies. A log that
            // cannot be written must not stop the agent mid-turn; it is reported once.
            if let Err(err) = log.transcript_mut().record(&event) {
                if !*log_failed {
                    frontend.say(&format!("warning: session log: {err}"));
                }
                *log_failed = true;
            }
        };
        if let Some(mut probe) = self.window_probe.take() {
            // No request may overlap the window question: llama-cpp-python's server cuts a
            // streaming completion short whenever another request arrives (its
            // `interrupt_requests`). It started with the session, so it is usually done by now.
            if tokio::time::timeout(WINDOW_PROBE_WAIT, &mut probe).await.is_err() {
                probe.abort();
            }
        }
        // A `$name` skill with `allowed-tools` narrows this turn's tools, and only this turn's.
        let (prompt, limit) = crate::skills::with_mentions(&self.extras.catalog, prompt);
        self.agent.executor_mut().set_tool_limit(limit);
        let finish = self.agent.prompt_with(prompt, cancel, on_event).await;
        self.agent.executor_mut().set_tool_limit(None);
        Ok(finish)
    }

    /// Runs the `SessionStart` hooks (`source`: `startup`, `resume` or `clear`); what they print
    /// for the model is added to the instructions, and a hook that blocks ends the session.
    pub async fn start(&mut self, source: &str) -> Result<(), StoppedByHook> {
        let hooks = self.agent.executor().hooks().clone();
        if !hooks.wants(HookEvent::SessionStart, None) {
            return Ok(());
        }
        let mut fields = serde_json::Map::new();
        fields.insert("source".into(), source.into());
        let result =
            hooks.run(HookEvent::SessionStart, None, fields, &CancellationToken::new()).await;
        if let Some(reason) = result.stop.or(result.block) {
            return Err(StoppedByHook(reason));
        }
        let instructions = &mut self.agent.config_mut().instructions;
        for context in result.context {
            instructions.push_str("\n\n");
            instructions.push_str(&context);
        }
        Ok(())
    }

    /// Ends the session's running jobs by `policy` (kill them, or wait for them and then kill
    /// what is left); returns how each job that was running ended.
    pub async fn end_jobs(&self, policy: EndPolicy) -> Vec<JobEnd> {
        // A day: `--jobs wait` is for jobs that end; one that never does is killed in the end.
        self.jobs.end(policy, std::time::Duration::from_secs(24 * 3600)).await
    }

    /// The session's jobs still running.
    pub fn running_jobs(&self) -> Vec<agent_exec::jobs::JobInfo> {
        self.jobs.running()
    }

    /// Every job of the session, one line each.
    pub fn job_lines(&self) -> Vec<String> {
        self.jobs.list().iter().map(agent_exec::jobs::JobInfo::line).collect()
    }

    /// Runs the `SessionEnd` hooks (`reason`: `exit`, `clear`, `other`).
    pub async fn end(&self, reason: &str) {
        // Children never outlive their session (after `/clear` the session goes on).
        if reason != "clear" {
            self.organizer.children.stop_all();
        }
        let hooks = self.agent.executor().hooks();
        if hooks.wants(HookEvent::SessionEnd, None) {
            let mut fields = serde_json::Map::new();
            fields.insert("reason".into(), reason.into());
            hooks.run(HookEvent::SessionEnd, None, fields, &CancellationToken::new()).await;
        }
    }

    /// The model's name as configured (without the API in front).
    pub fn model_name(&self) -> &str {
        &self.model.model
    }

    /// Switches to the model `name` on the same server for the next prompt (the REPL's
    /// `/model`); the context window and token counter follow the new model.
    pub fn switch_model(&mut self, name: &str) -> crate::Result<()> {
        if self.replay {
            bail!("a replayed session plays its recording; there is no model to switch");
        }
        let settings = ModelSettings { model: name.to_owned(), ..self.model.clone() };
        self.agent.set_model(model_client(&settings, self.tool_choice.as_deref(), &self.waiting)?);
        let (fresh, probe) = context_config(&settings, self.configured_window, Some(&self.runtime));
        if let Some(context) = &mut self.agent.config_mut().context {
            context.keep_recent_tokens = fresh.keep_recent_tokens;
            context.counter = fresh.counter;
            context.window = fresh.window;
            context.window_source = fresh.window_source;
            context.server_window = fresh.server_window;
        }
        self.window_probe = probe;
        self.model = settings;
        Ok(())
    }

    /// Whether a recorded transcript plays the model.
    pub fn replays(&self) -> bool {
        self.replay
    }

    /// The model server and model in use.
    pub fn model_settings(&self) -> &ModelSettings {
        &self.model
    }

    /// How commands are sandboxed: the policy, and whether they may use the network.
    pub fn sandbox(&self) -> (SandboxPolicy, agent_exec::network::NetworkMode) {
        self.sandbox
    }

    /// The files the session's tools have read and written (a front end previews edits with it).
    pub fn tracker(&self) -> &Arc<FileTracker> {
        &self.tracker
    }

    /// How full the context is, by the agent's count, and the window; `None` when no window is
    /// managed.
    pub fn context_fill(&self) -> Option<(u64, u64)> {
        let usage = self.agent.context_usage()?;
        Some((usage.total() as u64, usage.window))
    }

    /// Starts a new conversation in a new session log (the REPL's `/clear`).
    pub fn clear(&mut self) -> crate::Result<()> {
        self.log = SessionLog::open(None, self.log.transcript().secrets().to_vec())?;
        if let Some(checkpoints) = self.agent.executor().checkpoints() {
            checkpoints.switch(self.log.dir())?;
        }
        self.agent.set_conversation(Conversation::default());
        // A new conversation is a new trace: the next prompt starts a new `invoke_agent` span.
        self.agent.executor().end_session_span();
        Ok(())
    }
}

/// A future that cancels `cancel` on Ctrl-C. On Unix the handler is installed before this returns,
/// not when the future is first polled: the loop may block in an approval prompt before the
/// listener task ever runs, and a SIGINT with no handler would kill the whole session.
#[cfg(unix)]
fn cancel_on_ctrl_c(
    cancel: CancellationToken,
) -> crate::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for Ctrl-C")?;
    Ok(async move {
        if interrupt.recv().await.is_some() {
            cancel.cancel();
        }
    })
}

#[cfg(not(unix))]
fn cancel_on_ctrl_c(
    cancel: CancellationToken,
) -> crate::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    Ok(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    })
}

/// A single-threaded async runtime: the agent's own work is light, tools run in processes.
pub fn tokio_runtime() -> crate::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
