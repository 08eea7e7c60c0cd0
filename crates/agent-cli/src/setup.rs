//! What `exec` and the REPL share: resolving the model, building the executor, opening the session
//! log, and running one prompt through the agent loop with its transcript kept on disk.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use agent_core::{CancellationToken, Item, Message, ModelClient};
use agent_exec::{
    Approver, Executor, PermissionMode,
    agent::{self, AgentConfig, AgentEvent, Conversation, Finish},
};
use agent_model::{ApiKey, ChatClient, ClientConfig, ResponsesClient};
use anyhow::Context;

use crate::{
    Options,
    config::{self, Api, ConfigFile, ModelFlags, ModelSettings},
    replay::ReplayClient,
    runtime,
    session::{self, SessionLog},
};

/// The system prompt: short, and about the two mistakes models make most with tools.
pub(crate) const INSTRUCTIONS: &str = "\
You are a coding agent working in the user's workspace through tools.
Prefer the dedicated tools over bash: read_file to read, grep and glob to search, list_dir to look \
around, edit_file and write_file to change files. Use bash for building, testing and running things.
Never invent tool output: if you need a fact, call a tool; if a call fails, read the error and fix \
the call or change approach.
Be concise. When you are done, answer in plain text without calling tools.";

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
}

/// A ready session: the model, the executor, the log and the conversation so far.
pub(crate) struct Session {
    pub(crate) model: Box<dyn ModelClient>,
    pub(crate) executor: Executor,
    pub(crate) log: SessionLog,
    pub(crate) conversation: Conversation,
    pub(crate) config: AgentConfig,
    /// Whether a failed log write was already reported, so it is reported once.
    log_failed: bool,
}

/// Builds a session from the options, or the exit code of a configuration problem already
/// explained on stderr.
pub(crate) fn open(
    options: &Options,
    launch: Launch<'_>,
) -> anyhow::Result<Result<Session, ExitCode>> {
    let config_path = options.config.clone().or_else(ConfigFile::default_path);
    let config_file = match &config_path {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::default(),
    };
    let flags = ModelFlags {
        profile: options.profile.clone(),
        base_url: options.base_url.clone(),
        model: options.model.clone(),
        api: options.api,
        no_stream: options.no_stream,
    };
    let (settings, profile) =
        config::resolve_model(&flags, &|name| std::env::var(name).ok(), &config_file)?;
    // A replay needs no server, so a missing key only matters when a real model is called.
    let model: Box<dyn ModelClient> = match &launch.replay {
        Some(path) => Box::new(ReplayClient::load(path)?),
        None => {
            if settings.api_key.is_none() && config::is_openai(&settings.base_url) {
                eprintln!("agent: {}", config::NO_PROVIDER);
                return Ok(Err(ExitCode::from(2)));
            }
            model_client(&settings, options.tool_choice.as_deref())?
        }
    };

    let secrets = settings.api_key.iter().cloned().collect();
    let log = SessionLog::open(launch.resume, secrets)?;
    let mut conversation = Conversation::default();
    if launch.resume.is_some() {
        conversation.items = session::load_items(&log.dir().join("transcript.jsonl"))?;
    }
    let mut options = options.clone();
    options.max_turns = options.max_turns.or(profile.max_turns);
    options.sandbox = options.sandbox.clone().or(profile.sandbox.clone());
    options.permission_mode = options.permission_mode.clone().or(profile.permission_mode.clone());
    options.network = options.network || profile.network.unwrap_or(false);
    options.tools = options.tools.clone().or(profile.tools.clone());
    let runtime::Runtime { mut executor, warnings } =
        runtime::build(&options, launch.default_mode, log.id(), Some(log.dir().to_path_buf()))?;
    for warning in &warnings {
        eprintln!("agent: warning: {warning}");
    }
    if let Some(approver) = launch.approver {
        executor = executor.with_approver(approver);
    }
    warn_if_crowded(&settings.model, profile.context_window, &executor.specs());
    let mut config = AgentConfig::new(INSTRUCTIONS);
    if let Some(max_turns) = options.max_turns {
        config.max_turns = max_turns;
    }
    Ok(Ok(Session { model, executor, log, conversation, config, log_failed: false }))
}

impl Session {
    /// Runs one prompt to its end, showing events through `show` and logging every item and
    /// event. Ctrl-C cancels this prompt's turn and tools (the caller's session goes on).
    pub(crate) async fn prompt(
        &mut self,
        prompt: String,
        show: &mut (dyn FnMut(&AgentEvent) + Send),
    ) -> anyhow::Result<Finish> {
        let user = Item::Message(Message::user(prompt));
        self.log.item(&user)?;
        self.conversation.items.push(user);

        let cancel = CancellationToken::new();
        let listener = tokio::spawn(cancel_on_ctrl_c(cancel.clone())?);
        let log = &mut self.log;
        let log_failed = &mut self.log_failed;
        let mut on_event = |event: AgentEvent| {
            show(&event);
            // Items are written as the loop appends them, each line flushed, so the transcript
            // is complete up to the last finished step even if the process dies.
            let written = match &event {
                AgentEvent::ItemAdded { item } => log.item(item),
                _ => log.event(&event),
            };
            // A log that cannot be written must not stop the agent mid-turn; it is reported once.
            if let Err(err) = written {
                if !*log_failed {
                    eprintln!("agent: warning: session log: {err:#}");
                }
                *log_failed = true;
            }
        };
        let finish = agent::run(
            self.model.as_ref(),
            &self.executor,
            &self.config,
            &mut self.conversation,
            &cancel,
            &mut on_event,
        )
        .await;
        listener.abort();
        Ok(finish)
    }

    /// Starts a new conversation in a new session log (the REPL's `/clear`).
    pub(crate) fn clear(&mut self) -> anyhow::Result<()> {
        self.log = SessionLog::open(None, self.log.secrets().to_vec())?;
        self.conversation = Conversation::default();
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

/// A single-threaded async runtime: the agent's own work is light, tools run in processes.
pub(crate) fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Warns once when the instructions and tool schemas alone take more than half of the model's
/// known context window: every request pays for them, and little room is left for the work.
fn warn_if_crowded(model: &str, configured: Option<u64>, specs: &[agent_core::ToolSpec]) {
    let Some(window) = configured.or_else(|| agent_model::context_window(model)) else { return };
    let fixed = agent_model::fixed_tokens(INSTRUCTIONS, specs) as u64;
    if fixed * 2 > window {
        eprintln!(
            "agent: warning: the instructions and {} tool schemas take about {fixed} tokens, more \
             than half of {model}'s {window}-token context window; offer fewer with --tools",
            specs.len()
        );
    }
}

/// The tool choice named on the command line: `auto`, `none`, `required` or a tool's name.
fn tool_choice(text: &str) -> agent_core::ToolChoice {
    match text {
        "auto" => agent_core::ToolChoice::Auto,
        "none" => agent_core::ToolChoice::None,
        "required" => agent_core::ToolChoice::Required,
        name => agent_core::ToolChoice::Tool(name.to_owned()),
    }
}

fn model_client(
    settings: &ModelSettings,
    first_turn_tool_choice: Option<&str>,
) -> anyhow::Result<Box<dyn ModelClient>> {
    let mut config = ClientConfig::new(settings.base_url.clone(), settings.model.clone());
    config.first_turn_tool_choice = first_turn_tool_choice.map(tool_choice);
    if let Some(key) = &settings.api_key {
        config = config.with_api_key(ApiKey::new(key.clone()));
    }
    config.stream = settings.stream;
    Ok(match settings.api {
        Api::Chat => Box::new(ChatClient::new(&config)?),
        Api::Responses => Box::new(ResponsesClient::new(&config)?),
    })
}
