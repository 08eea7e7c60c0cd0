//! What `exec` and the REPL share: choosing the model, building the library's [`Agent`] from the
//! settings, opening the session log, and running one prompt with its transcript kept on disk.

use std::{path::PathBuf, process::ExitCode, sync::Arc, time::Duration};

use agent_core::{CancellationToken, ModelClient};
use agent_exec::{
    Agent, Approver, ExecutorConfig, HookEvent, PermissionMode, Transcript,
    agent::{AgentEvent, Conversation, Finish},
    jobs::{EndPolicy, JobEnd, Jobs},
    sandbox::SandboxPolicy,
};
use agent_model::ReplayClient;
use agent_tools::FileTracker;
use anyhow::{Context, bail};

mod model;

pub(crate) use self::model::model_client;
use self::model::{WINDOW_PROBE_WAIT, context_config, warn_if_crowded};
use crate::{
    Options,
    agents::{self, Organizer},
    config::{self, Api, ModelSettings},
    hooks::{self, Trust},
    preview::Previewer,
    session::SessionLog,
    settings::Settings,
    status::{ContextFill, Facts, Tally},
    waiting::Waiting,
};

/// How a front end wants its session built.
pub(crate) struct Launch<'a> {
    /// Continue this session id.
    pub(crate) resume: Option<&'a str>,
    /// Play this recorded transcript back instead of calling a model.
    pub(crate) replay: Option<PathBuf>,
    /// The permission mode when neither a flag nor the profile names one.
    pub(crate) default_mode: PermissionMode,
    /// Who answers approval prompts; `None` denies every call that would ask.
    pub(crate) approver: Option<Arc<dyn Approver>>,
    /// Whether the user may be asked to trust the project's hooks.
    pub(crate) trust: Trust,
    /// MCP servers the front end adds to the configured ones (an ACP client's), by name.
    pub(crate) mcp_servers: Vec<(String, agent_mcp::ServerConfig)>,
}

/// A ready session: the library's agent (model, tools, policy, conversation) and its log.
pub(crate) struct Session {
    pub(crate) agent: Agent,
    pub(crate) log: SessionLog,
    /// The AGENTS.md files whose text is sent with the instructions.
    pub(crate) project_docs: Vec<PathBuf>,
    /// The skills and custom commands found (docs/skills.md).
    pub(crate) extras: crate::skills::Extras,
    /// The plan and the child agents.
    pub(crate) organizer: Organizer,
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
    pub(crate) proxy: Option<Arc<agent_exec::network::SessionProxy>>,
    /// What the terminal needs to preview the session's calls.
    pub(crate) previewer: Arc<Previewer>,
    /// Whether a failed log write was already reported, so it is reported once.
    log_failed: bool,
    /// The question to the server about its context window, while it may still be open.
    pub(crate) window_probe: Option<tokio::task::JoinHandle<()>>,
    /// The session's runtime, where a switched model's window question runs.
    runtime: tokio::runtime::Handle,
    /// How long the model has been silent, for "still waiting for the model".
    pub(crate) waiting: Waiting,
    /// How often that is said (`[limits] model_waiting_notice_secs`); `None` never.
    pub(crate) waiting_notice: Option<Duration>,
    /// The session's MCP servers, stopped when a front end that outlives the session closes
    /// it (`agent acp`).
    mcp: Option<Arc<agent_mcp::McpTools>>,
}

/// A `SessionStart` hook ended the session before it began, with its reason.
#[derive(Debug)]
pub(crate) struct StoppedByHook(pub(crate) String);

/// Builds a session from the options, or the exit code of a configuration problem already
/// explained on stderr.
pub(crate) fn open(
    options: &Options,
    launch: Launch<'_>,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Result<Session, ExitCode>> {
    let mut settings = Settings::load(options)?;
    settings.file.mcp_servers.extend(launch.mcp_servers);
    let waiting = Waiting::default();
    // A replay needs no server, so a missing key only matters when a real model is called.
    let model: Box<dyn ModelClient> = match &launch.replay {
        Some(path) => {
            let items = Transcript::read_items(path)?;
            let replay = ReplayClient::new(&path.display().to_string(), items);
            if replay.turns() == 0 {
                bail!("{} holds no assistant turns to replay", path.display());
            }
            Box::new(replay)
        }
        None => {
            let model = &settings.model;
            if model.api_key.is_none() && config::is_openai(&model.base_url) {
                eprintln!("agent: {}", config::NO_PROVIDER);
                return Ok(Err(ExitCode::from(2)));
            }
            model_client(model, options.tool_choice.as_deref(), &waiting)?
        }
    };

    let secrets: Vec<String> =
        settings.model.api_key.iter().map(|key| key.expose().to_owned()).collect();
    let capture = crate::telemetry::install(&settings.file.telemetry);
    let forked = options.fork.as_deref().map(crate::fork::fork).transpose()?;
    if let (Some(spec), Some(new)) = (&options.fork, &forked) {
        eprintln!("agent: forked {spec} into session {new}; the original is unchanged");
    }
    let resume = forked.as_deref().or(launch.resume);
    let mut log = SessionLog::open(resume, secrets.clone())?;
    log.note_workspace(&settings.workspace()?);
    let child_secrets = log.transcript().secrets().to_vec();
    let mut executor = ExecutorConfig::new(log.id());
    executor.telemetry = agent_exec::telemetry::Telemetry::new(capture, secrets);
    executor.session_dir = Some(log.dir().to_path_buf());
    let tracker = FileTracker::new();
    // The session proxy of allow-list mode starts on the runtime the session runs on.
    let entered = runtime.enter();
    let (mut builder, jobs, proxy) =
        settings.session_builder(launch.default_mode, tracker.clone(), executor)?;
    drop(entered);
    if let Some(checkpoints) = crate::checkpoints::open(&settings, log.dir())? {
        builder = builder.checkpoints(checkpoints);
    }
    let docs = settings.project_docs()?;
    if docs.cut_bytes > 0 {
        eprintln!(
            "agent: warning: project instructions cut at {} KiB ({} bytes left out)",
            agent_exec::project_doc::PROJECT_DOC_CAP / 1024,
            docs.cut_bytes
        );
    }
    let configured_window = settings.options.context_window.or(settings.profile.context_window);
    let server = launch.replay.is_none().then(|| runtime.handle());
    let (context, window_probe) = context_config(&settings.model, configured_window, server);
    builder = builder.project_instructions(&docs.text);
    let extras = crate::skills::for_settings(&settings, launch.trust)?;
    let budget = settings.file.skills.budget(context.window);
    builder = crate::skills::attach(builder, &extras.catalog, budget, context.counter.as_ref())?;
    builder = builder.context(context);
    let mcp_approver = launch.approver.clone();
    if let Some(approver) = launch.approver {
        builder = builder.approver(approver);
    }
    let hooks = hooks::load(&settings.file.hooks, &settings.workspace()?, launch.trust)?;
    builder = builder.hooks(hooks.transcript_path(log.transcript().path()));
    if let Some(max_turns) = settings.options.max_turns {
        builder = builder.max_turns(max_turns);
    }
    // MCP servers start in the background on `runtime`; no model request waits for them, and
    // each joins from the first turn after it is ready.
    let mcp = {
        let _inside = runtime.enter();
        settings.session_mcp_tools(Some(log.dir().to_path_buf()), launch.trust, mcp_approver)?
    };
    if let Some(mcp) = &mcp {
        // Servers marked `required` are the exception: the session starts only with them.
        // The failure itself was already reported, with the server's stderr.
        if runtime.block_on(mcp.wait_required()).is_err() {
            eprintln!("agent: a required MCP server did not start, so the session cannot begin");
            return Ok(Err(ExitCode::from(2)));
        }
        builder = builder.late_tools(mcp.clone());
    }
    let replay = launch.replay.as_deref();
    let (builder, organizer) =
        agents::wire(builder, &settings, log.dir(), child_secrets, &waiting, replay)?;
    let mut agent = builder.build_boxed(model)?;
    organizer.children.attach(agent.executor(), &docs.text);
    for warning in agent.executor().policy().warnings() {
        eprintln!("agent: warning: {warning}");
    }
    warn_if_crowded(
        &settings.model.model,
        settings.profile.context_window,
        &agent.config().instructions,
        &agent.executor().specs(),
    );
    if resume.is_some() {
        agent.set_conversation(log.resumed_conversation()?);
    }
    let workspace = agent.executor().policy().workspace().clone();
    let previewer = Arc::new(Previewer::new(workspace, tracker, sandbox_words(&settings)?));
    Ok(Ok(Session {
        agent,
        log,
        project_docs: docs.files,
        extras,
        organizer,
        jobs,
        model: settings.model.clone(),
        replay: launch.replay.is_some(),
        tool_choice: options.tool_choice.clone(),
        configured_window,
        sandbox: (settings.sandbox_policy()?, settings.network_mode()),
        proxy,
        previewer,
        log_failed: false,
        window_probe,
        runtime: runtime.handle().clone(),
        waiting_notice: settings.waiting_notice(),
        waiting,
        mcp,
    }))
}

impl Session {
    /// Stops the session's MCP servers: a stdio server's process group is killed. For a front
    /// end that outlives its sessions (`agent acp`'s `session/close`); the others end with the
    /// process. A call after this would start the server again.
    pub(crate) async fn stop_mcp(&self) {
        let Some(mcp) = &self.mcp else { return };
        for server in mcp.session().servers() {
            server.connection_lost("the session was closed").await;
        }
    }

    /// Runs one prompt to its end, showing events through `show` and logging every item and
    /// event. Ctrl-C cancels this prompt's turn and tools (the caller's session goes on).
    pub(crate) async fn prompt(
        &mut self,
        prompt: String,
        show: &mut (dyn FnMut(&AgentEvent) + Send),
    ) -> anyhow::Result<Finish> {
        let cancel = CancellationToken::new();
        let listener = tokio::spawn(cancel_on_ctrl_c(cancel.clone())?);
        let finish = self.prompt_until(prompt, &cancel, show).await;
        listener.abort();
        finish
    }

    /// Runs one prompt to its end or until `cancel` is cancelled (an editor's `session/cancel`),
    /// showing and logging every event as [`Session::prompt`] does. Every front end's prompt
    /// passes here, so each one begins a checkpoint turn of its own (docs/checkpoints.md).
    pub(crate) async fn prompt_until(
        &mut self,
        prompt: String,
        cancel: &CancellationToken,
        show: &mut (dyn FnMut(&AgentEvent) + Send),
    ) -> anyhow::Result<Finish> {
        if let Some(checkpoints) = self.agent.executor().checkpoints() {
            // Where this prompt's transcript begins, so a fork after the previous turn cuts here.
            let offset = std::fs::metadata(self.log.transcript().path()).map_or(0, |m| m.len());
            if let Err(err) = checkpoints.begin_turn(offset, &prompt) {
                eprintln!("agent: warning: checkpoints: {err}");
            }
        }
        let log = &mut self.log;
        let log_failed = &mut self.log_failed;
        let on_event = |event: AgentEvent| {
            show(&event);
            // Items are written as the loop appends them, each line flushed, so the transcript
            // is complete up to the last finished step even if the process dies. A log that
            // cannot be written must not stop the agent mid-turn; it is reported once.
            if let Err(err) = log.transcript_mut().record(&event) {
                if !*log_failed {
                    eprintln!("agent: warning: session log: {err}");
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
    pub(crate) async fn start(&mut self, source: &str) -> Result<(), StoppedByHook> {
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
    pub(crate) async fn end_jobs(&self, policy: EndPolicy) -> Vec<JobEnd> {
        // A day: `--jobs wait` is for jobs that end; one that never does is killed in the end.
        self.jobs.end(policy, std::time::Duration::from_secs(24 * 3600)).await
    }

    /// The session's jobs still running.
    pub(crate) fn running_jobs(&self) -> Vec<agent_exec::jobs::JobInfo> {
        self.jobs.running()
    }

    /// Every job of the session, one line each.
    pub(crate) fn job_lines(&self) -> Vec<String> {
        self.jobs.list().iter().map(agent_exec::jobs::JobInfo::line).collect()
    }

    /// Runs the `SessionEnd` hooks (`reason`: `exit`, `clear`, `other`).
    pub(crate) async fn end(&self, reason: &str) {
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
    pub(crate) fn model_name(&self) -> &str {
        &self.model.model
    }

    /// Switches to the model `name` on the same server for the next prompt (the REPL's
    /// `/model`); the context window and token counter follow the new model.
    pub(crate) fn switch_model(&mut self, name: &str) -> anyhow::Result<()> {
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

    /// What `/status` shows, with the session's `tokens`.
    pub(crate) fn facts(&self, mut tokens: Tally) -> Facts<'_> {
        let children = self.organizer.child_tally();
        if let Some((_, child)) = &children {
            tokens.merge(child);
        }
        let policy = self.agent.executor().policy();
        let (sandbox, network) = self.sandbox;
        let network = crate::network::words(network);
        let api = match (self.replay, self.model.api) {
            (true, _) => "replay",
            (false, Api::Chat) => "chat",
            (false, Api::Responses) => "responses",
        };
        let context = self.context_fill();
        Facts {
            model: &self.model.model,
            api,
            base_url: if self.replay {
                "none (a recorded transcript)"
            } else {
                &self.model.base_url
            },
            session: self.log.id(),
            transcript: self.log.transcript().path(),
            workspace: policy.workspace().root(),
            sandbox: format!("{sandbox}, {network}"),
            permission_mode: policy.mode().to_string(),
            tokens,
            children,
            context,
        }
    }

    /// How full the context is, by the agent's count; `None` when no window is managed.
    pub(crate) fn context_fill(&self) -> Option<ContextFill> {
        let usage = self.agent.context_usage()?;
        Some(ContextFill { tokens: usage.total() as u64, window: usage.window })
    }

    /// Starts a new conversation in a new session log (the REPL's `/clear`).
    pub(crate) fn clear(&mut self) -> anyhow::Result<()> {
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
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
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
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    Ok(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    })
}

/// The sandbox commands run under, in words: `workspace-write, network off`.
fn sandbox_words(settings: &Settings) -> anyhow::Result<String> {
    let policy = settings.sandbox_policy()?;
    let network = crate::network::words(settings.network_mode());
    Ok(match policy {
        SandboxPolicy::DangerFullAccess => format!("{policy} (no OS sandbox)"),
        _ => format!("{policy}, {network}"),
    })
}

/// A single-threaded async runtime: the agent's own work is light, tools run in processes.
pub(crate) fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
