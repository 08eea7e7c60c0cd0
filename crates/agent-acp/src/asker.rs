//! The model's questions go to the editor (`ask_user`, docs/ask-user.md): as an
//! `elicitation/create` form when the client declared form elicitation at `initialize`, else as
//! `session/request_permission` with one option per choice, which every client shows
//! (docs/acp.md, "Questions").

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock},
};

use agent_client_protocol::{
    Client,
    v1::{
        ConnectionTo,
        schema::{
            CreateElicitationRequest, ElicitationAction, ElicitationContentValue,
            ElicitationFormMode, ElicitationSchema, ElicitationSessionScope, EnumOption,
            MultiSelectPropertySchema, PermissionOption, PermissionOptionKind,
            RequestPermissionOutcome, RequestPermissionRequest, StringPropertySchema, ToolCallId,
            ToolCallUpdate, ToolCallUpdateFields,
        },
    },
};
use agent_core::BoxFuture;
use agent_exec::ask::{Asker, MAX_ANSWER_CHARS, Question, Reply};

/// The form's fields: the choice (or choices), and the person's own words when allowed.
const CHOICE: &str = "choice";
const OWN: &str = "answer";
/// The option id that declines, beside `choice-N` for choice N.
const DECLINE: &str = "decline";

/// Asks the client that opened the session.
///
/// Made before the session, like the approver, and bound to the session's id once the host has
/// opened it; until then no one can reply.
pub struct AcpAsker {
    connection: ConnectionTo<Client>,
    session: OnceLock<String>,
    /// Whether the client declared form elicitation.
    forms: bool,
}

impl AcpAsker {
    /// An asker that asks through `connection`, with forms when `forms` (the client declared
    /// `elicitation.form`).
    pub fn new(connection: ConnectionTo<Client>, forms: bool) -> Arc<Self> {
        Arc::new(Self { connection, session: OnceLock::new(), forms })
    }

    /// Names the session the questions are about.
    pub(crate) fn bind(&self, session: &str) {
        let _ = self.session.set(session.to_owned());
    }

    /// Asks with a form: a single or multiple choice, and a text field when allowed.
    async fn form(&self, session: &str, question: &Question) -> Reply {
        let options: Vec<EnumOption> = question
            .choices
            .iter()
            .map(|choice| {
                let option = EnumOption::new(choice.label.clone(), choice.label.clone());
                option.description(
                    (!choice.description.is_empty()).then(|| choice.description.clone()),
                )
            })
            .collect();
        let count = options.len() as u64;
        let schema = ElicitationSchema::new();
        // With free text allowed, either field answers, so neither is required.
        let required = !question.free_text;
        let schema = if question.multiple {
            let field = MultiSelectPropertySchema::titled(options).min_items(1u64).max_items(count);
            schema.property(CHOICE, field, required)
        } else {
            schema.property(CHOICE, StringPropertySchema::new().one_of(options), required)
        };
        let schema = if question.free_text {
            let own = StringPropertySchema::new()
                .title("Your own answer")
                .max_length(u32::try_from(MAX_ANSWER_CHARS).unwrap_or(u32::MAX));
            schema.property(OWN, own, false)
        } else {
            schema
        };
        let scope = ElicitationSessionScope::new(session.to_owned())
            .tool_call_id(ToolCallId::new(question.call_id.clone()));
        let mode = ElicitationFormMode::new(scope, schema);
        let request = CreateElicitationRequest::new(mode, question.question.clone());
        let answer = self.connection.send_request(request).block_task().await;
        match answer.map(|answer| answer.action) {
            Ok(ElicitationAction::Accept(accepted)) => {
                from_form(question, accepted.content.unwrap_or_default())
            }
            Ok(ElicitationAction::Decline | ElicitationAction::Cancel) => Reply::Declined,
            Ok(_) | Err(_) => Reply::Unavailable,
        }
    }

    /// Asks with a permission request: one option per choice and one that declines.
    async fn permission(&self, session: &str, question: &Question) -> Reply {
        let mut options: Vec<PermissionOption> = question
            .choices
            .iter()
            .enumerate()
            .map(|(index, choice)| {
                let name = if choice.description.is_empty() {
                    choice.label.clone()
                } else {
                    format!("{} — {}", choice.label, choice.description)
                };
                PermissionOption::new(
                    format!("choice-{index}"),
                    name,
                    PermissionOptionKind::AllowOnce,
                )
            })
            .collect();
        options.push(PermissionOption::new(DECLINE, "Decline", PermissionOptionKind::RejectOnce));
        let fields = ToolCallUpdateFields::new().title(question.question.clone());
        let tool_call = ToolCallUpdate::new(question.call_id.clone(), fields);
        let request = RequestPermissionRequest::new(session.to_owned(), tool_call, options);
        let answer = self.connection.send_request(request).block_task().await;
        match answer.map(|answer| answer.outcome) {
            Ok(RequestPermissionOutcome::Selected(selected)) => {
                let index =
                    selected.option_id.0.strip_prefix("choice-").and_then(|n| n.parse().ok());
                match index {
                    Some(index) => Reply::Chosen { choices: vec![index] },
                    None => Reply::Declined,
                }
            }
            Ok(RequestPermissionOutcome::Cancelled) => Reply::Declined,
            Ok(_) | Err(_) => Reply::Unavailable,
        }
    }
}

/// The reply a form's content gives: the person's own words when they wrote some, else the
/// labels picked (which the tool checks against the question again).
fn from_form(question: &Question, mut content: BTreeMap<String, ElicitationContentValue>) -> Reply {
    if let Some(ElicitationContentValue::String(text)) = content.remove(OWN)
        && !text.trim().is_empty()
    {
        return Reply::Text { text };
    }
    let labels = match content.remove(CHOICE) {
        Some(ElicitationContentValue::String(label)) => vec![label],
        Some(ElicitationContentValue::StringArray(labels)) => labels,
        _ => return Reply::Declined,
    };
    let index = |label: &String| question.choices.iter().position(|choice| &choice.label == label);
    match labels.iter().map(index).collect::<Option<Vec<usize>>>() {
        Some(choices) => Reply::Chosen { choices },
        None => Reply::Declined,
    }
}

impl Asker for AcpAsker {
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let Some(session) = self.session.get() else { return Reply::Unavailable };
            // Dropped when the prompt is cancelled, as an approval is.
            if self.forms {
                self.form(session, question).await
            } else {
                self.permission(session, question).await
            }
        })
    }
}
