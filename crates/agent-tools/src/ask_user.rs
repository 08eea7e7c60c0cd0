//! `ask_user`: the model asks the person one question with 2–6 choices (and, if it allows,
//! words of their own) and gets the answer back as a structured result, instead of guessing or
//! ending its turn with a question in prose. Who answers is the front end's [`Asker`]; without
//! one (`agent exec`) the call answers that no one can reply (docs/ask-user.md).

use std::{collections::HashSet, sync::Arc};

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use agent_exec::ask::{
    Asker, Choice, MAX_ANSWER_CHARS, MAX_CHOICES, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS,
    MAX_QUESTION_CHARS, MIN_CHOICES, Question, Reply,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// One choice. Short `$defs` name: it is sent with every request that offers the tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Choice")]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct AskOption {
    // A short name for the choice, unique within the question.
    #[schemars(length(min = 1, max = MAX_LABEL_CHARS))]
    pub label: String,
    // What picking it means.
    #[schemars(length(max = MAX_DESCRIPTION_CHARS))]
    pub description: String,
}

/// Input of the `ask_user` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct AskUserInput {
    // The question, in a sentence or two.
    #[schemars(length(min = 1, max = MAX_QUESTION_CHARS))]
    pub question: String,
    // The choices, 2 to 6.
    #[schemars(length(min = MIN_CHOICES, max = MAX_CHOICES))]
    pub options: Vec<AskOption>,
    // Whether several choices may be picked (null: one).
    pub multi_select: Option<bool>,
    // Whether the person may answer in their own words instead (null: no).
    pub allow_free_text: Option<bool>,
}

/// Asks the person at the front end.
pub struct AskUser {
    asker: Option<Arc<dyn Asker>>,
}

impl std::fmt::Debug for AskUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskUser").field("asker", &self.asker.is_some()).finish()
    }
}

impl AskUser {
    /// The tool asking through `asker`; `None` answers every call that no one can reply.
    pub fn new(asker: Option<Arc<dyn Asker>>) -> Self {
        Self { asker }
    }
}

fn refused(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}

/// The checked question: labels trimmed, non-empty and unique (what the schema cannot say).
fn question(input: AskUserInput, call_id: String) -> Result<Question, ToolError> {
    let text = input.question.trim().to_owned();
    if text.is_empty() {
        return Err(refused("`question` is empty; ask a question".into()));
    }
    let mut seen = HashSet::new();
    let mut choices = Vec::with_capacity(input.options.len());
    for option in input.options {
        let label = option.label.trim().to_owned();
        if label.is_empty() {
            return Err(refused("an option's `label` is empty; give every option a name".into()));
        }
        if !seen.insert(label.to_lowercase()) {
            return Err(refused(format!("two options are labelled `{label}`; labels must differ")));
        }
        choices.push(Choice { label, description: option.description.trim().to_owned() });
    }
    Ok(Question {
        call_id,
        question: text,
        choices,
        multiple: input.multi_select.unwrap_or(false),
        free_text: input.allow_free_text.unwrap_or(false),
    })
}

/// The model-visible result of `reply` to `question`. A reply the question does not allow (an
/// index out of range, several choices to a single-choice question, text where none was
/// allowed) counts as declined: a front end's mistake never reaches the model as an answer.
fn result(question: &Question, reply: Reply) -> String {
    let answered = match reply {
        Reply::Chosen { choices } => chosen(question, &choices)
            .map(|labels| json!({"status": "answered", "choices": labels})),
        Reply::Text { text } if question.free_text => {
            let total = text.chars().count();
            let kept: String = text.chars().take(MAX_ANSWER_CHARS).collect();
            Some(if total > MAX_ANSWER_CHARS {
                json!({"status": "answered", "text": kept, "cut_from_chars": total})
            } else {
                json!({"status": "answered", "text": kept})
            })
        }
        Reply::Text { .. } | Reply::Declined => None,
        Reply::Unavailable => {
            return json!({
                "status": "unavailable",
                "message": "no one can reply here (the session runs without a person at hand); \
                            do not ask again: decide yourself and say what you assumed",
            })
            .to_string();
        }
    };
    answered
        .unwrap_or_else(|| {
            json!({
                "status": "declined",
                "message": "the user declined to answer; do not ask the same question again: \
                            decide yourself and say what you assumed, or end your turn",
            })
        })
        .to_string()
}

/// The labels of `picked`, when they are a valid pick for `question`.
fn chosen(question: &Question, picked: &[usize]) -> Option<Vec<String>> {
    let mut seen = HashSet::new();
    let fits = !picked.is_empty()
        && (question.multiple || picked.len() == 1)
        && picked.iter().all(|&index| index < question.choices.len() && seen.insert(index));
    fits.then(|| picked.iter().map(|&index| question.choices[index].label.clone()).collect())
}

impl TypedTool for AskUser {
    type Input = AskUserInput;
    const NAME: &'static str = "ask_user";

    fn description(&self) -> String {
        "Asks the user one question with 2-6 options and waits for the answer. Use it only for a \
         decision that is theirs and that the request and the code do not settle; never for \
         something you can find out yourself."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        // It touches nothing, so plan mode allows it; not read-only, so the calls of one turn
        // run one after another and a person never gets two questions at once.
        Effects::default()
    }

    fn rule_name(&self) -> String {
        "AskUserQuestion".to_owned()
    }

    async fn run(&self, input: AskUserInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let question = question(input, ctx.call_id.to_string())?;
        let reply = match &self.asker {
            Some(asker) => asker.ask(&question).await,
            None => Reply::Unavailable,
        };
        Ok(ToolOutput::text(result(&question, reply)))
    }
}
