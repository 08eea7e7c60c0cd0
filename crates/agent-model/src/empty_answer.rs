//! Empty answers: a response with no text and no tool calls is asked for once more, then failed.
//!
//! A model that answers nothing has not answered: the caller would end the run with an empty
//! "answer" and exit as if the task were done. Seen for real with LiteLLM's Responses bridge in
//! front of llama-cpp-python, which turns an upstream stream that carried nothing into a
//! well-formed `response.completed` with an empty message. Small local models also produce an
//! end-of-sequence token first now and then, which a second sample usually gets past.

use std::collections::VecDeque;

use agent_core::{
    BoxFuture, ModelError, ModelErrorKind, ModelEvent, ModelStream, StopReason, Usage,
};
use futures_util::StreamExt;

/// Sends the same request again, for the one retry of an empty answer.
pub(crate) type Resend<'a> =
    Box<dyn FnOnce() -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> + Send + 'a>;

struct Guard<'a> {
    stream: ModelStream<'a>,
    resend: Option<Resend<'a>>,
    /// Complete items of the current attempt, held back until it is known not to be empty.
    held: Vec<ModelEvent>,
    answered: bool,
    usage: Option<Usage>,
    queue: VecDeque<ModelEvent>,
    done: bool,
}

/// Passes `first` through, except that a response ending with no text and no tool call is
/// replaced by one more attempt from `resend`; a second empty answer is a `BadResponse` error.
///
/// Deltas and usage pass at once, so nothing is slower to show. Complete items (`Message`,
/// `ToolCall`, `Reasoning`) are held until `Completed`, so the items of a discarded attempt never
/// reach the caller's transcript.
pub(crate) fn guard<'a>(first: ModelStream<'a>, resend: Resend<'a>) -> ModelStream<'a> {
    let state = Guard {
        stream: first,
        resend: Some(resend),
        held: Vec::new(),
        answered: false,
        usage: None,
        queue: VecDeque::new(),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.queue.pop_front() {
                return Some((Ok(event), state));
            }
            if state.done {
                return None;
            }
            let event = match state.stream.next().await {
                None => {
                    state.done = true;
                    continue;
                }
                Some(Err(error)) => {
                    state.done = true;
                    return Some((Err(error), state));
                }
                Some(Ok(event)) => event,
            };
            match event {
                ModelEvent::TextDelta(_) | ModelEvent::ReasoningDelta(_) => {
                    return Some((Ok(event), state));
                }
                ModelEvent::Usage(usage) => {
                    state.usage = Some(usage);
                    return Some((Ok(event), state));
                }
                ModelEvent::Message(ref message) => {
                    state.answered |= !message.content.trim().is_empty();
                    state.held.push(event);
                }
                ModelEvent::ToolCall(_) => {
                    state.answered = true;
                    state.held.push(event);
                }
                ModelEvent::Reasoning(_) => state.held.push(event),
                ModelEvent::Completed { response_id, model, stop } => {
                    if state.answered {
                        state.queue.extend(state.held.drain(..));
                        state.queue.push_back(ModelEvent::Completed { response_id, model, stop });
                        state.done = true;
                        continue;
                    }
                    state.held.clear();
                    let Some(resend) = state.resend.take() else {
                        state.done = true;
                        let error = empty(response_id, state.usage, &stop);
                        return Some((Err(error), state));
                    };
                    tracing::warn!(
                        response_id = response_id.as_deref().unwrap_or(""),
                        "the model answered nothing (no text, no tool call); asking once more"
                    );
                    match resend().await {
                        Ok(stream) => state.stream = stream,
                        Err(error) => {
                            state.done = true;
                            return Some((Err(error), state));
                        }
                    }
                }
            }
        }
    }))
}

/// The error for a second empty answer, with what the server said about it.
fn empty(response_id: Option<String>, usage: Option<Usage>, stop: &StopReason) -> ModelError {
    let usage = match usage {
        Some(usage) => format!(
            "usage {} prompt tokens, {} completion tokens",
            usage.input_tokens, usage.output_tokens
        ),
        None => "no usage reported".to_owned(),
    };
    let stop = match stop {
        StopReason::Completed => String::new(),
        other => format!(", stop reason {other:?}"),
    };
    // Some bridges pack their state into the id (LiteLLM's run to hundreds of characters); the
    // beginning is enough to find the response in a server log.
    let id = response_id
        .as_deref()
        .map(|id| match id.char_indices().nth(64) {
            Some((end, _)) => format!(", response id {}…", &id[..end]),
            None => format!(", response id {id}"),
        })
        .unwrap_or_default();
    let mut error = ModelError::new(
        ModelErrorKind::BadResponse,
        format!(
            "the model returned an empty answer (no text and no tool call) twice in a row \
             ({usage}{stop}{id})"
        ),
    );
    error.request_id = response_id;
    error
}

#[cfg(test)]
mod tests {
    use agent_core::{Message, ToolCall};

    use super::*;

    fn attempt(events: Vec<ModelEvent>) -> ModelStream<'static> {
        Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))
    }

    fn completed(id: &str) -> ModelEvent {
        ModelEvent::Completed {
            response_id: Some(id.into()),
            model: None,
            stop: StopReason::Completed,
        }
    }

    fn usage(input_tokens: u64) -> ModelEvent {
        ModelEvent::Usage(Usage { input_tokens, ..Usage::default() })
    }

    /// Runs the guard over a first attempt and the one resend, and compares what the caller saw
    /// (an error as its message).
    async fn check(
        first: Vec<ModelEvent>,
        second: Vec<ModelEvent>,
        expect: Result<Vec<ModelEvent>, &str>,
    ) {
        let resend: Resend<'static> =
            Box::new(move || Box::pin(async move { Ok(attempt(second)) }));
        let got: Vec<Result<ModelEvent, ModelError>> =
            guard(attempt(first), resend).collect().await;
        let got: Result<Vec<ModelEvent>, String> =
            got.into_iter().collect::<Result<_, _>>().map_err(|error| error.message);
        assert_eq!(got, expect.map_err(str::to_owned));
    }

    #[tokio::test]
    async fn an_answer_passes_untouched() {
        let answer = vec![
            ModelEvent::TextDelta("Hi.".into()),
            ModelEvent::Message(Message::assistant("Hi.")),
            completed("r1"),
        ];
        check(answer.clone(), Vec::new(), Ok(answer)).await;
    }

    #[tokio::test]
    async fn one_empty_answer_is_replaced_by_the_second_attempt() {
        let call = ToolCall {
            call_id: "c1".into(),
            name: "uppercase".into(),
            arguments: "{}".into(),
            item_id: None,
            shape: agent_core::CallShape::Function,
        };
        check(
            vec![ModelEvent::Message(Message::assistant(" \n")), usage(7), completed("r1")],
            vec![ModelEvent::ToolCall(call.clone()), completed("r2")],
            Ok(vec![usage(7), ModelEvent::ToolCall(call), completed("r2")]),
        )
        .await;
    }

    #[tokio::test]
    async fn two_empty_answers_are_an_error_naming_usage_and_response_id() {
        check(
            vec![usage(120), completed("r1")],
            vec![usage(121), completed("r2")],
            Err("the model returned an empty answer (no text and no tool call) twice in a row \
                 (usage 121 prompt tokens, 0 completion tokens, response id r2)"),
        )
        .await;
    }
}
