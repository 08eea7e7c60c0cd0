//! Opening a session: the one place where configuration becomes a running agent, with its
//! model, tools, sandbox and proxy, skills, hooks, MCP servers, child agents and checkpoints.

use std::{sync::Arc, time::Duration};

use agent_core::{ModelClient, Typed, TypedTool};
use agent_exec::{AgentBuilder, ExecutorConfig, ToolLimits, Transcript};
use agent_model::ReplayClient;
use agent_tools::{AskUser, FileTracker};

use super::{
    Launch, Session,
    model::{context_config, model_client, warn_if_crowded},
};
use crate::{
    agents, config, error::bail, hooks, log::SessionLog, overrides::Overrides, settings::Settings,
    waiting::Waiting,
};

/// Registers `ask_user` asking through `asker`. Without one it is registered but never offered:
/// no request pays for its schema (`agent exec`'s first request is held to a budget), and a
/// model that calls it anyway reads that no one can reply instead of `unknown_tool`.
fn ask_user(
    builder: AgentBuilder,
    asker: Option<Arc<dyn agent_exec::ask::Asker>>,
) -> crate::Result<AgentBuilder> {
    let offered = asker.is_some();
    // A person takes longer than a tool call may: the wait has its own limit.
    let limits = ToolLimits { timeout: Some(ASK_USER_TIMEOUT), output_cap: None };
    let builder = builder.tool_with_limits(Arc::new(Typed::new(AskUser::new(asker))?), limits);
    Ok(if offered { builder } else { builder.offer_when(ASK_USER, Arc::new(|| false)) })
}

/// The tool's name, as rules and the child filter know it.
const ASK_USER: &str = <AskUser as TypedTool>::NAME;

/// How long a question waits for its answer (docs/ask-user.md).
const ASK_USER_TIMEOUT: Duration = Duration::from_secs(60 * 60);

impl Session {
    /// Opens a session from the configuration `overrides` point at, as `launch` asks; `runtime`
    /// runs its MCP servers, network proxy and model questions. Waits for MCP servers marked
    /// `required`, and for nothing else.
    pub fn open(
        overrides: &Overrides,
        launch: Launch<'_>,
        runtime: &tokio::runtime::Runtime,
    ) -> crate::Result<Session> {
        let mut settings = Settings::load(overrides)?;
        let frontend = launch.frontend.clone();
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
                    return Err(crate::Error::NoProvider);
                }
                model_client(model, overrides.tool_choice.as_deref(), &waiting)?
            }
        };

        let secrets: Vec<String> =
            settings.model.api_key.iter().map(|key| key.expose().to_owned()).collect();
        let capture = crate::telemetry::install(&settings.file.telemetry, &frontend);
        let forked = overrides.fork.as_deref().map(crate::fork::fork).transpose()?;
        if let (Some(spec), Some(new)) = (&overrides.fork, &forked) {
            frontend.say(&format!("forked {spec} into session {new}; the original is unchanged"));
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
        for note in &settings.plugins.notes {
            frontend.say(note);
        }
        let docs = settings.project_docs()?;
        if docs.cut_bytes > 0 {
            frontend.say(&format!(
                "warning: project instructions cut at {} KiB ({} bytes left out)",
                agent_exec::project_doc::PROJECT_DOC_CAP / 1024,
                docs.cut_bytes
            ));
        }
        let configured_window = settings.options.context_window.or(settings.profile.context_window);
        let server = launch.replay.is_none().then(|| runtime.handle());
        let (context, window_probe) = context_config(&settings.model, configured_window, server);
        builder = builder.project_instructions(&docs.text);
        let extras = crate::skills::for_settings(&settings, launch.trust, frontend.as_ref())?;
        let budget = settings.file.skills.budget(context.window);
        builder = crate::skills::attach(
            builder,
            &extras.catalog,
            budget,
            context.counter.as_ref(),
            frontend.as_ref(),
        )?;
        builder = builder.context(context);
        let mcp_approver = launch.approver.clone();
        if let Some(approver) = launch.approver {
            builder = builder.approver(approver);
        }
        let hooks =
            hooks::load(&settings.file.hooks, &settings.workspace()?, launch.trust, &frontend)?;
        builder = builder.hooks(hooks.transcript_path(log.transcript().path()));
        if let Some(max_turns) = settings.options.max_turns {
            builder = builder.max_turns(max_turns);
        }
        // MCP servers start in the background on `runtime`; no model request waits for them, and
        // each joins from the first turn after it is ready.
        let mcp = {
            let _inside = runtime.enter();
            settings.session_mcp_tools(
                Some(log.dir().to_path_buf()),
                launch.trust,
                mcp_approver,
                &frontend,
            )?
        };
        if let Some(mcp) = &mcp {
            // Servers marked `required` are the exception: the session starts only with them.
            // The failure itself was already reported, with the server's stderr.
            if runtime.block_on(mcp.wait_required()).is_err() {
                return Err(crate::Error::RequiredServer);
            }
            builder = builder.late_tools(mcp.clone());
        }
        let replay = launch.replay.as_deref();
        let (builder, organizer) =
            agents::wire(builder, &settings, log.dir(), child_secrets, &waiting, replay)?;
        let builder = ask_user(builder, launch.asker)?;
        let mut agent = builder.build_boxed(model)?;
        organizer.children.attach(agent.executor(), &docs.text);
        for warning in agent.executor().policy().warnings() {
            frontend.say(&format!("warning: {warning}"));
        }
        warn_if_crowded(
            frontend.as_ref(),
            &settings.model.model,
            settings.profile.context_window,
            &agent.config().instructions,
            &agent.executor().specs(),
        );
        if resume.is_some() {
            agent.set_conversation(log.resumed_conversation(frontend.as_ref())?);
        }
        let _workspace = agent.executor().policy().workspace().clone();
        Ok(Session {
            agent,
            log,
            project_docs: docs.files,
            extras,
            organizer,
            jobs,
            model: settings.model.clone(),
            replay: launch.replay.is_some(),
            tool_choice: overrides.tool_choice.clone(),
            configured_window,
            sandbox: (settings.sandbox_policy()?, settings.network_mode()),
            proxy,
            tracker,
            frontend,
            log_failed: false,
            window_probe,
            runtime: runtime.handle().clone(),
            waiting_notice: settings.waiting_notice(),
            waiting,
            mcp,
        })
    }
}
