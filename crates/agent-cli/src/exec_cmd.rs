//! `agent exec PROMPT`: one prompt, non-interactively, with exit codes a script can rely on.

use std::{io::Read, process::ExitCode};

use agent_core::{CancellationToken, Item, Message, ModelClient};
use agent_exec::{
    PermissionMode,
    agent::{self, AgentConfig, Conversation, Finish},
};
use agent_model::{ApiKey, ChatClient, ClientConfig, ResponsesClient};
use anyhow::Context;
use clap::Args;

use crate::{
    Options,
    config::{self, Api, ConfigFile, ModelFlags, ModelSettings},
    render::Renderer,
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

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The prompt; `-` reads it from standard input.
    prompt: String,
    /// Print one JSON event per line on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Continue the session with this id.
    #[arg(long)]
    resume: Option<String>,
}

/// Runs the prompt; 0 answered, 1 agent failure, 2 usage or configuration error, 130 interrupted.
pub(crate) fn run(options: &Options, args: ExecArgs) -> anyhow::Result<ExitCode> {
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
    if settings.api_key.is_none() && config::is_openai(&settings.base_url) {
        eprintln!("agent: {}", config::NO_PROVIDER);
        return Ok(ExitCode::from(2));
    }
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading the prompt from stdin")?;
        text
    } else {
        args.prompt
    };

    let secrets = settings.api_key.iter().cloned().collect();
    let mut log = SessionLog::open(args.resume.as_deref(), secrets)?;
    let mut conversation = Conversation::default();
    if args.resume.is_some() {
        conversation.items = session::load_items(&log.dir().join("transcript.jsonl"))?;
    }
    let mut options = options.clone();
    options.max_turns = options.max_turns.or(profile.max_turns);
    options.sandbox = options.sandbox.clone().or(profile.sandbox.clone());
    options.permission_mode = options.permission_mode.clone().or(profile.permission_mode.clone());
    options.network = options.network || profile.network.unwrap_or(false);
    // Nobody is there to answer an approval prompt, so calls that would ask are denied with a
    // message naming the flag that would allow them.
    let runtime =
        runtime::build(&options, PermissionMode::DontAsk, log.id(), Some(log.dir().to_path_buf()))?;
    for warning in &runtime.warnings {
        eprintln!("agent: warning: {warning}");
    }
    let model = model_client(&settings)?;
    let mut agent_config = AgentConfig::new(INSTRUCTIONS);
    if let Some(max_turns) = options.max_turns {
        agent_config.max_turns = max_turns;
    }

    let user = Item::Message(Message::user(prompt));
    log.item(&user)?;
    conversation.items.push(user);
    let logged = conversation.items.len();

    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let cancel = CancellationToken::new();
    let mut renderer = Renderer::new(args.json);
    let mut interrupted = false;
    let finish = tokio.block_on(async {
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let mut on_event = |event: agent::AgentEvent| {
            renderer.show(&event);
            // A log that cannot be written must not stop the agent mid-turn; it is reported once.
            if let Err(err) = log.event(&event) {
                if !interrupted {
                    eprintln!("agent: warning: session log: {err:#}");
                }
                interrupted = true;
            }
        };
        agent::run(
            model.as_ref(),
            &runtime.executor,
            &agent_config,
            &mut conversation,
            &cancel,
            &mut on_event,
        )
        .await
    });
    for item in &conversation.items[logged..] {
        log.item(item)?;
    }
    if !args.json {
        eprintln!("agent: session {} (resume with --resume {})", log.id(), log.id());
    }
    Ok(match finish {
        Finish::Answered(_) => ExitCode::SUCCESS,
        Finish::Cancelled => ExitCode::from(130),
        Finish::MaxTurns(turns) => {
            eprintln!("agent: stopped after {turns} turns without an answer (raise --max-turns)");
            ExitCode::from(1)
        }
        Finish::ModelError(_) => ExitCode::from(1),
    })
}

fn model_client(settings: &ModelSettings) -> anyhow::Result<Box<dyn ModelClient>> {
    let mut config = ClientConfig::new(settings.base_url.clone(), settings.model.clone());
    if let Some(key) = &settings.api_key {
        config = config.with_api_key(ApiKey::new(key.clone()));
    }
    config.stream = settings.stream;
    Ok(match settings.api {
        Api::Chat => Box::new(ChatClient::new(&config)?),
        Api::Responses => Box::new(ResponsesClient::new(&config)?),
    })
}
