//! `Questions`: how our client answers a server's questions (elicitations) in both eras.
//!
//! A 2025-11-25 server asks with an `elicitation/create` request in the middle of a call; a
//! 2026-07-28 server answers the call with an `input_required` result whose `inputRequests` hold
//! the same questions, and the client calls again with `inputResponses`. Either way the question
//! reaches one [`Elicit`], which the program supplies: `agent` puts it to its approver (the REPL's
//! prompt), so a server's "are you sure?" is asked like any other approval. Without an
//! [`Elicit`] every question is declined, and the server decides what a declined question means.

use std::sync::{Arc, OnceLock};

use agent_core::BoxFuture;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputResponses,
};
use serde_json::{Map, Value};

/// One question of a server, as the user sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The configured server's name.
    pub server: String,
    /// The call it belongs to (the model's `call_id`), when it came during one.
    pub call_id: Option<String>,
    /// The server's message.
    pub message: String,
    /// The form's fields (empty: a yes-or-no question).
    pub fields: Vec<Field>,
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The key of the answer.
    pub name: String,
    /// The field's JSON Schema (a primitive type, maybe with a `default`).
    pub schema: Value,
    /// Whether the form needs it.
    pub required: bool,
}

/// The answer to a [`Question`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Go on, with these field values.
    Accept(Map<String, Value>),
    /// No (the operation may go on without the information).
    Decline,
    /// Stop the whole operation.
    Cancel,
}

/// Who answers the servers' questions.
pub trait Elicit: Send + Sync {
    /// Answers one question.
    fn elicit<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer>;
}

/// The program's [`Elicit`], shared by every server of a session; set once, after the session's
/// servers were made (the approver comes with the executor, which is built after them).
#[derive(Default)]
pub struct Questions {
    elicit: OnceLock<Arc<dyn Elicit>>,
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions").field("answered", &self.elicit.get().is_some()).finish()
    }
}

impl Questions {
    /// Answers the questions with `elicit` from now on; `false` when one was already set.
    pub fn answer_with(&self, elicit: Arc<dyn Elicit>) -> bool {
        self.elicit.set(elicit).is_ok()
    }

    /// Whether anyone answers (the client then declares the `elicitation` capability).
    pub fn answered(&self) -> bool {
        self.elicit.get().is_some()
    }

    /// The answer to one `elicitation/create` (legacy) or one elicitation input request.
    pub(crate) async fn elicit(
        &self,
        server: &str,
        call_id: Option<&str>,
        params: ElicitRequestParams,
    ) -> ElicitResult {
        let (message, schema) = match params {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                (message, requested_schema)
            }
            // We open no browser for a server: a URL question (or a mode we do not know) is
            // declined.
            _ => {
                return ElicitResult::new(ElicitationAction::Decline);
            }
        };
        let Some(elicit) = self.elicit.get() else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let question = Question {
            server: server.to_owned(),
            call_id: call_id.map(str::to_owned),
            message,
            fields: fields(&schema),
        };
        match elicit.elicit(&question).await {
            Answer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// The `inputResponses` for an `input_required` result's `inputRequests`: elicitations are
    /// asked in turn; sampling and roots, which we do not offer, are answered with an error
    /// object the server can read.
    pub(crate) async fn fulfil(
        &self,
        server: &str,
        call_id: Option<&str>,
        requests: InputRequests,
    ) -> InputResponses {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let value = match request {
                InputRequest::Elicitation(request) => {
                    let result = self.elicit(server, call_id, request.params).await;
                    serde_json::to_value(result).unwrap_or(Value::Null)
                }
                _ => serde_json::json!({
                    "error": {"code": -32601, "message": "the client does not offer this"}
                }),
            };
            responses.insert(key, value);
        }
        responses
    }
}

/// An [`Elicit`] that puts each question to an `agent_exec::Approver` (the REPL's prompt): the
/// server's message is the reason, the answer a yes carries (the form's defaults) the arguments.
/// A yes answers the form with its defaults; a form with a required field that has none cannot
/// be answered with a yes, and is declined without asking. A no declines.
pub struct AskApprover(pub Arc<dyn agent_exec::Approver>);

impl std::fmt::Debug for AskApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskApprover").finish_non_exhaustive()
    }
}

impl Elicit for AskApprover {
    fn elicit<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let Some(content) = defaults(question) else { return Answer::Decline };
            let request = agent_exec::ApprovalRequest {
                call_id: question.call_id.clone().unwrap_or_default(),
                tool: format!("mcp__{}", question.server),
                arguments: Value::Object(content.clone()).to_string(),
                access: Vec::new(),
                reason: format!("the MCP server `{}` asks: {}", question.server, question.message),
                suggested_rules: Vec::new(),
            };
            match self.0.approve(&request).await {
                agent_exec::Approval::AllowOnce | agent_exec::Approval::AllowForSession => {
                    Answer::Accept(content)
                }
                agent_exec::Approval::Deny { .. } => Answer::Decline,
            }
        })
    }
}

/// A form's fields, from its requested schema.
fn fields(schema: &ElicitationSchema) -> Vec<Field> {
    let required = schema.required.clone().unwrap_or_default();
    schema
        .properties
        .iter()
        .map(|(name, property)| Field {
            name: name.clone(),
            schema: serde_json::to_value(property).unwrap_or(Value::Null),
            required: required.contains(name),
        })
        .collect()
}

/// The answer a yes carries: every field's default; `None` when a required field has none, so
/// a plain yes cannot answer the form.
pub fn defaults(question: &Question) -> Option<Map<String, Value>> {
    let mut content = Map::new();
    for field in &question.fields {
        match field.schema.get("default") {
            Some(value) => {
                content.insert(field.name.clone(), value.clone());
            }
            None if field.required => return None,
            None => {}
        }
    }
    Some(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Yes;

    impl Elicit for Yes {
        fn elicit<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer> {
            Box::pin(async move {
                match defaults(question) {
                    Some(content) => Answer::Accept(content),
                    None => Answer::Decline,
                }
            })
        }
    }

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(serde_json::json!({
            "mode": "form", "message": "sure?", "requestedSchema": schema
        }))
        .unwrap_or_else(|err| panic!("{err}"))
    }

    #[track_caller]
    fn check(questions: &Questions, schema: Value, expect: Value) {
        let runtime = tokio::runtime::Builder::new_current_thread().build();
        let result = runtime.unwrap_or_else(|err| panic!("{err}")).block_on(questions.elicit(
            "s",
            Some("c1"),
            form(schema),
        ));
        assert_eq!(serde_json::to_value(result).unwrap_or_default(), expect);
    }

    #[test]
    fn a_yes_fills_the_defaults_and_a_form_it_cannot_fill_is_declined() {
        let questions = Questions::default();
        let empty = serde_json::json!({"type": "object", "properties": {}});
        check(&questions, empty.clone(), serde_json::json!({"action": "decline"}));
        assert!(questions.answer_with(Arc::new(Yes)));
        assert!(!questions.answer_with(Arc::new(Yes)));
        check(&questions, empty, serde_json::json!({"action": "accept", "content": {}}));
        let defaults = serde_json::json!({"type": "object", "properties": {
            "n": {"type": "integer", "default": 42}, "s": {"type": "string"}}});
        check(&questions, defaults, serde_json::json!({"action": "accept", "content": {"n": 42}}));
        let needs_a_name = serde_json::json!({"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}}});
        check(&questions, needs_a_name, serde_json::json!({"action": "decline"}));
    }
}
