//! The answer branch of the loop: a model that answered without calling tools gets its answer
//! checked against the output schema (once asked again when it does not fit) and passed through
//! the `Stop` hooks, which may end the run or keep it going.

use agent_core::{CancellationToken, Item};

use super::{AgentConfig, AgentEvent, Conversation, Finish, push};
use crate::{executor::Executor, hooks::HookEvent};

/// What the loop does after the model answered without calling tools.
pub(super) enum Step {
    /// Ask the model again: a message for it was added (the answer did not fit the output
    /// schema, or a `Stop` hook blocked the stop).
    Again,
    /// The run ends so.
    End(Finish),
}

/// What one run remembers about its answers.
pub(super) struct Answering {
    /// Whether an answer that does not match the output schema may still be asked for again.
    pub(super) output_retry: bool,
    /// Whether a `Stop` hook already kept the run going (`stop_hook_active` in its input).
    pub(super) stop_hook: bool,
}

/// The model answered without calling tools: checks the answer against the output schema (asking
/// once more when it does not fit) and runs the `Stop` hooks.
pub(super) async fn answer(
    executor: &Executor,
    config: &AgentConfig,
    conversation: &mut Conversation,
    text: String,
    answering: &mut Answering,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Step {
    let answer = match &config.output_schema {
        None => text,
        Some(schema) => match schema.check(&text) {
            // The JSON alone, compact, whatever the model wrapped around it.
            Ok(value) => value.to_string(),
            Err(problem) if answering.output_retry => {
                answering.output_retry = false;
                let message = agent_core::Message::user(format!(
                    "Your answer does not match the required JSON Schema: {problem}. \
                     Answer again with only the JSON object."
                ));
                push(conversation, on_event, Item::Message(message));
                return Step::Again;
            }
            Err(problem) => return Step::End(Finish::InvalidOutput(problem.to_string())),
        },
    };
    match stop_hooks(executor, &answer, answering.stop_hook, cancel).await {
        StopHooks::Answer => Step::End(Finish::Answered(answer)),
        StopHooks::Stop(reason) => Step::End(Finish::Stopped(reason)),
        StopHooks::KeepGoing(reason) => {
            // Claude Code's Stop hook contract: a block sends its reason to the model as the next
            // user message, and the run goes on.
            answering.stop_hook = true;
            push(conversation, on_event, Item::Message(agent_core::Message::user(reason)));
            Step::Again
        }
    }
}

/// What the `Stop` hooks made of an answer.
enum StopHooks {
    /// No hook objected: the run ends with the answer.
    Answer,
    /// A hook stopped the run (`"continue": false`).
    Stop(String),
    /// A hook blocked the stop: its reason goes to the model and the run goes on.
    KeepGoing(String),
}

async fn stop_hooks(
    executor: &Executor,
    answer: &str,
    active: bool,
    cancel: &CancellationToken,
) -> StopHooks {
    let hooks = executor.hooks();
    if !hooks.wants(HookEvent::Stop, None) {
        return StopHooks::Answer;
    }
    let mut fields = serde_json::Map::new();
    fields.insert("stop_hook_active".into(), active.into());
    fields.insert("last_assistant_message".into(), answer.into());
    let result = hooks.run(HookEvent::Stop, None, fields, cancel).await;
    match (result.stop, result.block) {
        (Some(reason), _) => StopHooks::Stop(reason),
        (None, Some(reason)) => StopHooks::KeepGoing(reason),
        (None, None) => StopHooks::Answer,
    }
}
