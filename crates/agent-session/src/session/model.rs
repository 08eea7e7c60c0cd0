//! The session's model side: the client for the configured server and API, and how the loop
//! learns the context window it must keep requests inside.

use std::sync::Arc;

use agent_core::ModelClient;
use agent_exec::compaction::{ContextConfig, ServerWindow};
use agent_model::{ChatClient, ClientConfig, ResponsesClient};

use crate::{
    config::{self, Api, ModelSettings},
    waiting::{Waiting, Watched},
};

/// How long a prompt waits for the server's answer about its context window before its first
/// request; a server slower than this (it is on this machine or its network) is not asked again.
pub(crate) const WINDOW_PROBE_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// How the loop keeps requests inside the window: the model's own counter, and the window from
/// `--context-window`, the profile, the built-in table, or the conservative default. Unless a
/// window is configured, `server` (the runtime; none for a replay, which has no server) asks a
/// local server for its window in the background; the first prompt waits for the answer (up to
/// [`WINDOW_PROBE_WAIT`]) before its first request.
pub(crate) fn context_config(
    settings: &ModelSettings,
    configured: Option<u64>,
    server: Option<&tokio::runtime::Handle>,
) -> (ContextConfig, Option<tokio::task::JoinHandle<()>>) {
    let model = &settings.model;
    let (window, source) = match (configured, agent_model::context_window(model)) {
        (Some(window), _) => (window, "configured"),
        (None, Some(window)) => (window, "known model"),
        (None, None) => (agent_model::DEFAULT_CONTEXT_WINDOW, "default for an unknown model"),
    };
    let mut context = ContextConfig::new(agent_model::counter_for(model), window, source);
    // A local server serves a model with the window it was started with, often smaller than the
    // model's own, so its answer outranks the table.
    // Only a server on this machine or its network is asked: that is where the window it serves
    // differs from the model's, and where asking costs a fraction of a millisecond.
    let server = server.filter(|_| configured.is_none() && config::is_local(&settings.base_url));
    if let Some(runtime) = server {
        let report = Arc::new(ServerWindow::new());
        let config = client_config(settings);
        let filled = report.clone();
        let probe = runtime.spawn(async move {
            if let Some(tokens) = agent_model::server_context_window(&config).await {
                filled.set(tokens);
            }
        });
        context.server_window = Some(report);
        return (context, Some(probe));
    }
    (context, None)
}

/// Warns once when the instructions and tool schemas alone take more than half of the model's
/// known context window: every request pays for them, and little room is left for the work.
pub(crate) fn warn_if_crowded(
    frontend: &dyn crate::Frontend,
    model: &str,
    configured: Option<u64>,
    instructions: &str,
    specs: &[agent_core::ToolSpec],
) {
    let Some(window) = configured.or_else(|| agent_model::context_window(model)) else { return };
    // Four characters a token: a start-up warning must not build a vocabulary's tables (tens of
    // milliseconds) before the first request.
    let chars = instructions.len() + agent_model::chat_tools_json(specs).to_string().len();
    let fixed = chars.div_ceil(4) as u64;
    if fixed * 2 > window {
        frontend.say(&format!(
            "warning: the instructions and {} tool schemas take about {fixed} tokens, more than \
             half of {model}'s {window}-token context window; offer fewer with --tools",
            specs.len()
        ));
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

fn client_config(settings: &ModelSettings) -> ClientConfig {
    let mut config = ClientConfig::new(settings.base_url.clone(), settings.model.clone());
    if let Some(key) = &settings.api_key {
        config = config.with_api_key(key.clone());
    }
    config.stream = settings.stream;
    config.limits = settings.response.clone();
    config.image_input = settings.sees_images();
    config
}

/// The client for the configured server and API, its silences reported to `waiting`; with
/// `first_turn_tool_choice`, each prompt's first request forces that choice.
pub fn model_client(
    settings: &ModelSettings,
    first_turn_tool_choice: Option<&str>,
    waiting: &Waiting,
) -> crate::Result<Box<dyn ModelClient>> {
    let mut config = client_config(settings);
    config.first_turn_tool_choice = first_turn_tool_choice.map(tool_choice);
    let client: Box<dyn ModelClient> = match settings.api {
        Api::Chat => Box::new(ChatClient::new(&config)?),
        Api::Responses => Box::new(ResponsesClient::new(&config)?),
    };
    Ok(Box::new(Watched::new(client, waiting.clone())))
}
