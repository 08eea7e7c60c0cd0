//! The model's questions over HTTP (`ask_user`, docs/ask-user.md): a question is parked here,
//! announced on the session's stream as `question.asked`, listed by the API, and waits until a
//! client answers or declines it (or the prompt is cancelled, which drops the wait and the entry
//! with it), as approvals do (`approvals.rs`).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use agent_core::BoxFuture;
use agent_exec::ask::{Asker, Question, Reply};
use tokio::sync::oneshot;

use super::{
    api::{PendingQuestion, QuestionAnswer, QuestionChoice},
    journal::Journal,
};
use crate::events::ExecEvent;

/// A parked question: what the API lists, the question itself, and where the answer goes.
type Waiting = (PendingQuestion, Question, oneshot::Sender<Reply>);

#[derive(Debug, Default)]
struct Parked {
    next: u64,
    waiting: BTreeMap<u64, Waiting>,
}

/// Why an answer was not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// No such question waits (404).
    NoQuestion,
    /// The answer does not fit the question (400), with the reason.
    Unfit(String),
}

/// The pending questions of one session; it is the session's [`Asker`].
#[derive(Debug)]
pub(crate) struct Questions {
    parked: Mutex<Parked>,
    journal: Arc<Journal>,
}

impl Questions {
    pub(crate) fn new(journal: Arc<Journal>) -> Arc<Self> {
        Arc::new(Self { parked: Mutex::default(), journal })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Parked> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The questions waiting, oldest first.
    pub(crate) fn list(&self) -> Vec<PendingQuestion> {
        self.lock().waiting.values().map(|(pending, _, _)| pending.clone()).collect()
    }

    /// Answers question `id`. An answer that does not fit (a label it does not offer, several
    /// where one is asked, text where none is allowed) is refused and the question keeps waiting.
    pub(crate) fn answer(&self, id: u64, answer: QuestionAnswer) -> Result<(), NotTaken> {
        let mut parked = self.lock();
        let (_, question, _) = parked.waiting.get(&id).ok_or(NotTaken::NoQuestion)?;
        let reply = reply(question, answer)?;
        let (_, _, sender) = parked.waiting.remove(&id).ok_or(NotTaken::NoQuestion)?;
        // A wait dropped in between (the prompt cancelled) has no one to tell.
        let _ = sender.send(reply);
        Ok(())
    }
}

/// The reply `answer` gives to `question`, or why it does not fit.
fn reply(question: &Question, answer: QuestionAnswer) -> Result<Reply, NotTaken> {
    let unfit = |why: String| Err(NotTaken::Unfit(why));
    match answer {
        QuestionAnswer { decline: true, choices: None, text: None } => Ok(Reply::Declined),
        QuestionAnswer { decline: false, choices: Some(labels), text: None } => {
            if labels.is_empty() || (labels.len() > 1 && !question.multiple) {
                return unfit(format!(
                    "pick {} of the question's labels",
                    if question.multiple { "one or more" } else { "exactly one" }
                ));
            }
            let mut choices = Vec::with_capacity(labels.len());
            for label in &labels {
                let index = question.choices.iter().position(|choice| &choice.label == label);
                match index {
                    Some(index) if !choices.contains(&index) => choices.push(index),
                    Some(_) => return unfit(format!("`{label}` is picked twice")),
                    None => return unfit(format!("the question offers no label `{label}`")),
                }
            }
            Ok(Reply::Chosen { choices })
        }
        QuestionAnswer { decline: false, choices: None, text: Some(text) } => {
            if !question.free_text {
                return unfit("this question takes one of its labels, not text".to_owned());
            }
            Ok(Reply::Text { text })
        }
        _ => unfit("answer with exactly one of `choices`, `text` or `decline: true`".to_owned()),
    }
}

/// Removes a question from the list when its wait ends, answered or dropped.
struct Unpark<'a>(&'a Questions, u64);

impl Drop for Unpark<'_> {
    fn drop(&mut self) {
        self.0.lock().waiting.remove(&self.1);
    }
}

impl Asker for Questions {
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let (sender, receiver) = oneshot::channel();
            let pending = {
                let mut parked = self.lock();
                parked.next += 1;
                let choices = question.choices.iter().map(|choice| QuestionChoice {
                    label: choice.label.clone(),
                    description: choice.description.clone(),
                });
                let pending = PendingQuestion {
                    id: parked.next,
                    call_id: question.call_id.clone(),
                    question: question.question.clone(),
                    choices: choices.collect(),
                    multiple: question.multiple,
                    free_text: question.free_text,
                };
                parked.waiting.insert(pending.id, (pending.clone(), question.clone(), sender));
                pending
            };
            let _unpark = Unpark(self, pending.id);
            self.journal.push(&ExecEvent::QuestionAsked {
                question_id: pending.id,
                call_id: pending.call_id,
                question: pending.question,
                choices: pending.choices,
                multiple: pending.multiple,
                free_text: pending.free_text,
            });
            // The session closing drops the sender: no one is left to answer.
            receiver.await.unwrap_or(Reply::Unavailable)
        })
    }
}
