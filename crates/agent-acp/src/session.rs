//! One open session: a task that runs its prompts one after another and applies mode and model
//! changes between them, streaming each prompt's updates to the client.

use std::sync::{Arc, Mutex};

use agent_client_protocol::{
    Client,
    v1::{
        ConnectionTo, Responder,
        schema::{
            ContentBlock, CurrentModeUpdate, EmbeddedResourceResource, PromptRequest,
            PromptResponse, SessionConfigOption, SessionConfigOptionCategory,
            SessionConfigOptionValue, SessionConfigSelectOption, SessionModeId,
            SessionNotification, SessionUpdate, SetSessionConfigOptionResponse,
            SetSessionModeResponse, StopReason,
        },
    },
};
use agent_core::CancellationToken;
use agent_exec::agent::Finish;
use tokio::sync::mpsc;

use crate::{ClientFiles, Error, HostSession, modes, server::respond, updates::Mapper};

/// The config option that selects the model.
const MODEL_OPTION: &str = "model";

/// What the connection asks of a session's task.
pub(crate) enum Command {
    /// Run a prompt; `cancel` is already known to `session/cancel`.
    Prompt {
        request: PromptRequest,
        responder: Responder<serde_json::Value>,
        cancel: CancellationToken,
    },
    /// Change the permission mode.
    SetMode { mode: String, responder: Responder<serde_json::Value> },
    /// Change a config option (the model).
    SetOption {
        option: String,
        value: SessionConfigOptionValue,
        responder: Responder<serde_json::Value>,
    },
}

/// The connection's side of a session: where its commands go, and the tokens of its prompts
/// that have not ended, which `session/cancel` cancels.
pub(crate) struct Handle {
    commands: mpsc::UnboundedSender<Command>,
    prompts: Arc<Mutex<Vec<CancellationToken>>>,
    /// The session's task, which ends (closing the session) once `commands` is dropped.
    task: tokio::task::JoinHandle<()>,
}

impl Handle {
    pub(crate) fn new(
        commands: mpsc::UnboundedSender<Command>,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        Self { commands, prompts: Arc::default(), task }
    }

    /// Cancels the session's prompts and closes it; resolves once it is closed (its jobs are
    /// gone).
    pub(crate) fn close(self) -> tokio::task::JoinHandle<()> {
        self.cancel_all();
        self.task
    }

    /// A token for a prompt about to be queued. Made here, in the connection's order, so a
    /// cancel that follows the prompt always reaches it, even before its task takes it up.
    pub(crate) fn new_prompt(&self) -> CancellationToken {
        let token = CancellationToken::new();
        let mut prompts = self.prompts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        prompts.retain(|token| !token.is_cancelled());
        prompts.push(token.clone());
        token
    }

    /// Cancels every prompt queued or running.
    pub(crate) fn cancel_all(&self) {
        let mut prompts = self.prompts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for token in prompts.drain(..) {
            token.cancel();
        }
    }

    pub(crate) fn send(&self, command: Command) {
        // The task ends only when this handle is dropped, so the send cannot fail while the
        // handle exists; a failure would mean the task panicked, and the responder is dropped
        // with the command, which answers the request with an error.
        let _ = self.commands.send(command);
    }
}

/// Runs the session's commands until the connection drops its handle.
pub(crate) async fn run(
    mut session: Box<dyn HostSession>,
    connection: ConnectionTo<Client>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    files: Option<Arc<ClientFiles>>,
) {
    run_commands(&mut *session, &connection, &mut commands, files).await;
    session.close().await;
}

async fn run_commands(
    session: &mut dyn HostSession,
    connection: &ConnectionTo<Client>,
    commands: &mut mpsc::UnboundedReceiver<Command>,
    files: Option<Arc<ClientFiles>>,
) {
    let id = session.id();
    let plan = session.plan();
    let notify = |update: SessionUpdate| {
        let _ = connection.send_notification(SessionNotification::new(id.clone(), update));
    };
    while let Some(command) = commands.recv().await {
        match command {
            Command::Prompt { request, responder, cancel } => {
                let text = prompt_text(&request.prompt);
                let mut mapper = Mapper::new(session.workspace(), files.clone(), plan.clone());
                let mut on_event = |event: &agent_exec::agent::AgentEvent| {
                    for update in mapper.updates(event) {
                        notify(update);
                    }
                };
                let finish = if cancel.is_cancelled() {
                    Ok(Finish::Cancelled)
                } else {
                    session.prompt(text, &cancel, &mut on_event).await
                };
                // The prompt has ended: its token is no longer one a cancel must reach.
                cancel.cancel();
                respond(responder, finish.and_then(response));
            }
            Command::SetMode { mode, responder } => {
                let Some(mode) = modes::mode_from_id(&mode) else {
                    let error = Error::InvalidParams(format!("no mode {mode}"));
                    respond::<()>(responder, Err(error));
                    continue;
                };
                session.set_mode(mode);
                respond(responder, Ok(SetSessionModeResponse::new()));
                let current = SessionModeId::new(modes::mode_id(mode));
                notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(current)));
            }
            Command::SetOption { option, value, responder } => {
                let result = match (option.as_str(), value.as_value_id()) {
                    (MODEL_OPTION, Some(model)) => session.set_model(&model.0),
                    (MODEL_OPTION, None) => {
                        Err(Error::InvalidParams("the model option takes a model's name".into()))
                    }
                    (other, _) => Err(Error::InvalidParams(format!("no config option {other}"))),
                };
                let models = session_models(session);
                respond(
                    responder,
                    result.map(|()| {
                        SetSessionConfigOptionResponse::new(config_options(
                            &models,
                            &session.model(),
                        ))
                    }),
                );
            }
        }
    }
}

/// The models offered: the session's own first.
fn session_models(session: &dyn HostSession) -> Vec<String> {
    vec![session.model()]
}

/// The model selector, when there is a model to choose.
pub(crate) fn config_options(models: &[String], current: &str) -> Vec<SessionConfigOption> {
    let mut names: Vec<String> = vec![current.to_owned()];
    names.extend(models.iter().filter(|name| *name != current).cloned());
    let options: Vec<SessionConfigSelectOption> = names
        .iter()
        .map(|name| SessionConfigSelectOption::new(name.clone(), name.clone()))
        .collect();
    vec![
        SessionConfigOption::select(MODEL_OPTION, "Model", current.to_owned(), options)
            .category(SessionConfigOptionCategory::Model),
    ]
}

/// How a prompt ended, as the protocol says it; a model failure is an error response.
fn response(finish: Finish) -> Result<PromptResponse, Error> {
    let reason = match finish {
        Finish::Answered(_) | Finish::Stopped(_) => StopReason::EndTurn,
        Finish::MaxTurns(_) => StopReason::MaxTurnRequests,
        Finish::Cancelled => StopReason::Cancelled,
        Finish::ModelError(err) => return Err(Error::Host(format!("model error: {err}"))),
        _ => StopReason::EndTurn,
    };
    Ok(PromptResponse::new(reason))
}

/// The prompt as the model reads it: text as it is, an embedded resource's text marked with
/// its URI, a link as a mention the model can open with its tools.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut text = String::new();
    for block in blocks {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        match block {
            ContentBlock::Text(part) => text.push_str(&part.text),
            ContentBlock::ResourceLink(link) => text.push_str(&format!("@{}", link.uri)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    text.push_str(&format!(
                        "<context uri=\"{}\">\n{}\n</context>",
                        contents.uri, contents.text
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(contents) => text.push_str(
                    &format!("(a binary resource {} was attached; it is not shown)", contents.uri),
                ),
                _ => {}
            },
            _ => text.push_str("(an attachment this agent cannot read was left out)"),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{EmbeddedResource, TextContent, TextResourceContents};

    use super::*;

    #[test]
    fn a_prompt_keeps_text_and_embedded_resources() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("fix it")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/src/main.rs",
                )),
            )),
        ];
        assert_eq!(
            prompt_text(&blocks),
            "fix it\n\n<context uri=\"file:///w/src/main.rs\">\nfn main() {}\n</context>"
        );
    }
}
