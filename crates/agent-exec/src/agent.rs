//! The agent loop: model turn → tool batch → outputs → next turn, until an answer or a stop.
//!
//! The loop sees the model only through [`ModelClient`] and the tools only through the
//! [`Executor`]; adding a tool or a provider never changes it.

mod answer;
mod request;

use std::time::Duration;

use agent_core::{
    CancellationToken, Continuation, Item, ModelClient, ModelErrorKind, OutputSchema, ToolCall,
    ToolChoice, ToolErrorKind, Usage,
};
use opentelemetry::context::FutureExt;
use serde::Serialize;
use tracing::Instrument;

use self::{
    answer::{Answering, Step, answer},
    request::{Response, Turn, Window, model_turn},
};
pub use crate::conversation::{CommandRecord, Conversation, DroppedOutput, Ledger};
use crate::{
    compaction::{CompactionInfo, ContextConfig},
    executor::{Executor, Outcome},
};

/// How a run behaves. Build with [`AgentConfig::new`] and change fields as needed.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The system prompt, sent with every request.
    pub instructions: String,
    /// The most model turns one run may take; reaching it ends the run with [`Finish::MaxTurns`].
    pub max_turns: usize,
    /// How the model may use tools.
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one turn.
    pub parallel_tool_calls: bool,
    /// After how many identical failing calls in a row the harness tells the model to change
    /// approach.
    pub repeat_failure_limit: usize,
    /// A schema the final answer must match: sent with every request, checked when the model
    /// answers, and the model asked once more with the error when the answer does not fit.
    pub output_schema: Option<OutputSchema>,
    /// How requests are kept inside the model's context window; `None` (the default) sends the
    /// whole transcript however long it grows.
    pub context: Option<ContextConfig>,
}

impl AgentConfig {
    /// Defaults: 50 turns, automatic tool choice, parallel calls allowed, a note after 3 repeats.
    pub fn new(instructions: impl Into<String>) -> Self {
        Self {
            instructions: instructions.into(),
            max_turns: 50,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            repeat_failure_limit: 3,
            output_schema: None,
            context: None,
        }
    }
}

/// What happened during a run, for any front end (terminal, JSON lines, a GUI).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// An item was appended to the conversation: the complete items of a model response once it
    /// has completed, then each tool output. Front ends that persist transcripts write these as
    /// they come, so a crash loses nothing that was already part of the conversation.
    ItemAdded {
        /// The item.
        item: Item,
    },
    /// A model turn began (1-based).
    TurnStarted {
        /// The turn number within this run.
        turn: usize,
    },
    /// A piece of assistant text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of visible reasoning.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// A tool call is about to run.
    ToolCallStarted {
        /// The call's id.
        call_id: String,
        /// The tool name as called.
        name: String,
        /// The raw arguments.
        arguments: String,
    },
    /// A tool call finished (successfully or not).
    ToolCallFinished {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// Whether it succeeded.
        ok: bool,
        /// The error code when it did not.
        error: Option<ToolErrorKind>,
        /// How long it took, in milliseconds.
        duration_ms: u64,
        /// Whether the output was capped.
        truncated: bool,
        /// Where the whole output of a capped call was saved (absent otherwise).
        #[serde(skip_serializing_if = "Option::is_none")]
        output_path: Option<String>,
        /// For a call refused because it needed approval and nobody could be asked: the rules
        /// or mode that would allow it (absent otherwise).
        #[serde(skip_serializing_if = "Option::is_none")]
        remedy: Option<crate::Remedy>,
    },
    /// A model request is about to be sent: what it carries by the loop's own count (the
    /// server's count follows in [`AgentEvent::Usage`] when it reports one). Only sent when the
    /// loop manages the context window.
    Request {
        /// The turn number within this run.
        turn: usize,
        /// The request's input tokens as the loop counted them (the whole conversation, also
        /// when only the new items go on the wire with `previous_response_id`).
        estimated_input_tokens: usize,
        /// The model's context window.
        window: u64,
    },
    /// Older turns were compacted. The transcript file records the compacted items with it, so
    /// a resumed session continues from the compacted state.
    Compaction {
        /// What was done.
        #[serde(flatten)]
        info: CompactionInfo,
        /// The conversation after the compaction (written to transcripts, not to event streams).
        #[serde(skip)]
        items: Vec<Item>,
        /// The ledger after the compaction (likewise).
        #[serde(skip)]
        ledger: Ledger,
    },
    /// Token usage of one model response.
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// The run ended.
    Finished {
        /// Why.
        reason: FinishReason,
        /// The final assistant text, when there is one.
        text: Option<String>,
    },
    /// The model failed and the run stopped.
    Error {
        /// What went wrong (never contains a key).
        message: String,
    },
}

/// Why a run ended, as reported in [`AgentEvent::Finished`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model answered without calling tools.
    Answered,
    /// The run reached `max_turns`.
    MaxTurns,
    /// The run was cancelled.
    Cancelled,
    /// The model failed.
    ModelError,
    /// A hook stopped the run.
    Stopped,
    /// The answer did not match the output schema, even when asked again.
    InvalidOutput,
}

/// The result of [`run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// The model answered; the text of its last message.
    Answered(String),
    /// The run took `max_turns` turns without an answer.
    MaxTurns(usize),
    /// The run was cancelled; every call made so far has an output.
    Cancelled,
    /// The model failed; the transcript holds only complete turns.
    ModelError(agent_core::ModelError),
    /// A hook stopped the run (`"continue": false`, or a blocked prompt), with its reason; every
    /// call made so far has an output.
    Stopped(String),
    /// The answer did not match [`AgentConfig::output_schema`] on the second try either; what was
    /// wrong with it.
    InvalidOutput(String),
}

/// Runs the loop until the model answers, the turn limit is reached, `cancel` fires, or the model
/// fails. `conversation` is extended in place and is always valid for the next request: a turn
/// that broke off is removed whole, and every call that was made has exactly one output.
///
/// The run is one `prompt` span under the executor's session span (`invoke_agent`, started by
/// its first prompt under the current OpenTelemetry context); see [`crate::telemetry`].
pub async fn run(
    model: &dyn ModelClient,
    executor: &Executor,
    config: &AgentConfig,
    conversation: &mut Conversation,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Finish {
    let telemetry = &executor.config().telemetry;
    let prompt = conversation.items.iter().rev().find_map(|item| match item {
        Item::Message(message) if message.role == agent_core::Role::User => {
            Some(message.content.as_str())
        }
        _ => None,
    });
    let span = executor.otel().prompt(telemetry, &executor.config().session_id, prompt);
    let mut turns = 0;
    let mut count = |event: AgentEvent| {
        turns += usize::from(matches!(event, AgentEvent::TurnStarted { .. }));
        on_event(event);
    };
    let finish = run_turns(model, executor, config, conversation, cancel, &mut count)
        .with_context(span.cx.clone())
        .await;
    span.finish(&finish, turns, telemetry);
    finish
}

/// [`run`], inside its span.
async fn run_turns(
    model: &dyn ModelClient,
    executor: &Executor,
    config: &AgentConfig,
    conversation: &mut Conversation,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Finish {
    let mut tools = executor.specs();
    let mut failures = RepeatedFailures::default();
    let mut answering =
        Answering { output_retry: config.output_schema.is_some(), stop_hook: false };
    let mut window = config.context.as_ref().map(|ctx| Window::new(ctx, config, tools.clone()));
    for turn in 1..=config.max_turns {
        // Tools that became ready since the last request (MCP servers) join from this turn.
        if executor.refresh_late_tools().await {
            tools = executor.specs();
            if let Some(window) = &mut window {
                window.counts.set_tools(tools.clone());
            }
        }
        let turn_span = tracing::info_span!("turn", turn, model = model.name());
        on_event(AgentEvent::TurnStarted { turn });
        // Background work that finished since the last request: here, after every output of the
        // previous turn, and before `turn_start`, so a failed request cannot drop it.
        for notice in executor.background().map(|work| work.take_notices()).unwrap_or_default() {
            push(conversation, on_event, Item::Message(agent_core::Message::user(notice)));
        }
        let turn = Turn { number: turn, tools: &tools, span: &turn_span };
        let (turn_start, response) =
            model_turn(model, executor, config, conversation, &mut window, &turn, cancel, on_event)
                .await;
        let response = match response {
            Ok(response) => response,
            Err(err) => return broke_off(conversation, turn_start, err, &turn_span, on_event),
        };
        let (text, calls) =
            take_response(conversation, turn_start, response, &mut window, on_event);
        if calls.is_empty() {
            match answer(executor, config, conversation, text, &mut answering, cancel, on_event)
                .await
            {
                Step::Again => continue,
                Step::End(end) => return finish(on_event, end),
            }
        }
        for call in &calls {
            on_event(AgentEvent::ToolCallStarted {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        let outcomes = executor.execute_batch(&calls, cancel).instrument(turn_span).await;
        let stop = record_outcomes(&calls, outcomes, &mut failures, config, conversation, on_event);
        if cancel.is_cancelled() {
            return finish(on_event, Finish::Cancelled);
        }
        if let Some(reason) = stop {
            return finish(on_event, Finish::Stopped(reason));
        }
    }
    finish(on_event, Finish::MaxTurns(config.max_turns))
}

/// Ends a run whose model request failed: the turn that broke off is dropped whole, so the
/// transcript never holds a call without its output or half a message.
fn broke_off(
    conversation: &mut Conversation,
    turn_start: usize,
    err: agent_core::ModelError,
    span: &tracing::Span,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Finish {
    // At debug level: the error reaches the front end in `AgentEvent::Error` and `Finish`, which
    // print it; a warning here printed every model error twice.
    span.in_scope(|| tracing::debug!(error = %err, "model request failed"));
    conversation.items.truncate(turn_start);
    if err.kind == ModelErrorKind::Cancelled {
        return finish(on_event, Finish::Cancelled);
    }
    on_event(AgentEvent::Error { message: err.to_string() });
    finish(on_event, Finish::ModelError(err))
}

/// Appends a complete response to the conversation (reporting each item and its usage) and
/// returns its text and the tool calls it made.
fn take_response(
    conversation: &mut Conversation,
    turn_start: usize,
    response: Response,
    window: &mut Option<Window<'_>>,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> (String, Vec<ToolCall>) {
    for item in &response.items {
        on_event(AgentEvent::ItemAdded { item: item.clone() });
    }
    conversation.items.extend(response.items);
    if let (Some(window), Some(usage)) = (window, &response.usage) {
        window.counts.observe(conversation.items.len(), usage);
    }
    // The server holds everything up to and including this response; what is appended from here
    // on is what the next request must send.
    conversation.continuation = response
        .response_id
        .map(|id| Continuation { previous_response_id: id, items_known: conversation.items.len() });
    let calls = conversation.items[turn_start..]
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect();
    (response.text, calls)
}

/// Reports each call's outcome, adds the repeated-failure note, and appends the outputs to the
/// conversation in call order; returns the reason of the first hook that stopped the run.
fn record_outcomes(
    calls: &[ToolCall],
    outcomes: Vec<Outcome>,
    failures: &mut RepeatedFailures,
    config: &AgentConfig,
    conversation: &mut Conversation,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Option<String> {
    let mut stop = None;
    for (call, mut outcome) in calls.iter().zip(outcomes) {
        stop = stop.or(outcome.stop.take());
        if failures.record(call, &outcome) >= config.repeat_failure_limit {
            outcome.text.push_str(&repeat_note(config.repeat_failure_limit));
        }
        on_event(AgentEvent::ToolCallFinished {
            call_id: outcome.call_id.clone(),
            name: outcome.tool.clone(),
            ok: outcome.ok,
            error: outcome.error_code.clone(),
            duration_ms: duration_ms(outcome.duration),
            truncated: outcome.truncated,
            output_path: outcome.output_path.take().map(|path| path.display().to_string()),
            remedy: outcome.remedy.take(),
        });
        push(conversation, on_event, Item::ToolOutput(outcome.into_call_output()));
    }
    stop
}

/// Appends `item` to the conversation and reports it.
fn push(
    conversation: &mut Conversation,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
    item: Item,
) {
    on_event(AgentEvent::ItemAdded { item: item.clone() });
    conversation.items.push(item);
}

/// Counts identical failing calls in a row: same tool, same arguments, same error code.
#[derive(Default)]
struct RepeatedFailures {
    last: Option<(String, String, ToolErrorKind)>,
    count: usize,
}

impl RepeatedFailures {
    /// Records an outcome and returns how many times in a row this exact failure has happened
    /// (0 for a success).
    fn record(&mut self, call: &ToolCall, outcome: &Outcome) -> usize {
        let Some(code) = &outcome.error_code else {
            self.last = None;
            self.count = 0;
            return 0;
        };
        let same = self.last.as_ref().is_some_and(|(name, arguments, last_code)| {
            *name == call.name && *arguments == call.arguments && last_code == code
        });
        if same {
            self.count += 1;
        } else {
            self.last = Some((call.name.clone(), call.arguments.clone(), code.clone()));
            self.count = 1;
        }
        self.count
    }
}

fn repeat_note(limit: usize) -> String {
    format!(
        "\n[harness] This exact call has now failed {limit} times in a row with the same error. \
         Do not repeat it: read the error above, change the arguments, use a different tool, or \
         explain the problem to the user."
    )
}

fn finish(on_event: &mut (dyn FnMut(AgentEvent) + Send), finish: Finish) -> Finish {
    let (reason, text) = match &finish {
        Finish::Answered(text) => (FinishReason::Answered, Some(text.clone())),
        Finish::MaxTurns(_) => (FinishReason::MaxTurns, None),
        Finish::Cancelled => (FinishReason::Cancelled, None),
        Finish::ModelError(_) => (FinishReason::ModelError, None),
        Finish::Stopped(reason) => (FinishReason::Stopped, Some(reason.clone())),
        Finish::InvalidOutput(problem) => (FinishReason::InvalidOutput, Some(problem.clone())),
    };
    on_event(AgentEvent::Finished { reason, text });
    finish
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
