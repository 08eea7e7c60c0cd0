//! The agent loop: model turn → tool batch → outputs → next turn, until an answer or a stop.
//!
//! The loop sees the model only through [`ModelClient`] and the tools only through the
//! [`Executor`]; adding a tool or a provider never changes it.

use std::time::Duration;

pub use crate::conversation::Conversation;

use agent_core::{
    CancellationToken, Continuation, Item, ModelClient, ModelError, ModelErrorKind, ModelEvent,
    ModelRequest, OutputSchema, ToolCall, ToolChoice, ToolSpec, Usage,
};
use futures_util::StreamExt;
use serde::Serialize;
use tracing::Instrument;

use crate::{
    compaction::{self, CompactionInfo, CompactionReason, ContextConfig, RequestCount},
    conversation::Ledger,
    executor::{Executor, Outcome},
    hooks::HookEvent,
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
        error: Option<String>,
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
    ModelError(ModelError),
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
pub async fn run(
    model: &dyn ModelClient,
    executor: &Executor,
    config: &AgentConfig,
    conversation: &mut Conversation,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Finish {
    let mut tools = executor.specs();
    let mut failures = RepeatedFailures::default();
    let mut stop_hook_active = false;
    let mut output_retry = config.output_schema.is_some();
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
        if let Some(background) = executor.background() {
            for notice in background.take_notices() {
                let item = Item::Message(agent_core::Message::user(notice));
                on_event(AgentEvent::ItemAdded { item: item.clone() });
                conversation.items.push(item);
            }
        }
        let mut overflowed = false;
        let (turn_start, response) = loop {
            if let Some(window) = &mut window {
                window.before_request(model, executor, conversation, turn, cancel, on_event).await;
            }
            let turn_start = conversation.items.len();
            let continuation = if model.supports_continuation() {
                conversation.continuation.clone()
            } else {
                None
            };
            let request = ModelRequest {
                instructions: &config.instructions,
                items: &conversation.items,
                tools: &tools,
                tool_choice: &config.tool_choice,
                parallel_tool_calls: config.parallel_tool_calls,
                continuation: continuation.as_ref(),
                output_schema: config.output_schema.as_ref(),
            };
            let response = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(cancelled_error()),
                response = read_response(model, request, on_event)
                    .instrument(tracing::debug_span!(parent: &turn_span, "model_request")) => response,
            };
            // A server that says the request was over its window gets one compaction and one
            // retry: our count was wrong for this model, the server's word is final.
            if let (Err(err), Some(window)) = (&response, &mut window)
                && err.kind == ModelErrorKind::ContextTooLong
                && !overflowed
            {
                turn_span.in_scope(|| tracing::warn!(error = %err, "context overflow; compacting"));
                overflowed = true;
                let reason = CompactionReason::Overflow;
                window.compact(model, executor, conversation, reason, cancel, on_event).await;
                continue;
            }
            break (turn_start, response);
        };
        let response = match response {
            Ok(response) => response,
            Err(err) => {
                turn_span.in_scope(|| tracing::warn!(error = %err, "model request failed"));
                // A turn that broke off is dropped whole, so the transcript never holds a call
                // without its output or half a message.
                conversation.items.truncate(turn_start);
                if err.kind == ModelErrorKind::Cancelled {
                    return finish(on_event, Finish::Cancelled);
                }
                on_event(AgentEvent::Error { message: err.to_string() });
                return finish(on_event, Finish::ModelError(err));
            }
        };
        for item in &response.items {
            on_event(AgentEvent::ItemAdded { item: item.clone() });
        }
        conversation.items.extend(response.items);
        if let (Some(window), Some(usage)) = (&mut window, &response.usage) {
            window.counts.observe(conversation.items.len(), usage);
        }
        let calls: Vec<ToolCall> = conversation.items[turn_start..]
            .iter()
            .filter_map(|item| match item {
                Item::ToolCall(call) => Some(call.clone()),
                _ => None,
            })
            .collect();
        if calls.is_empty() {
            conversation.continuation = response.response_id.map(|id| Continuation {
                previous_response_id: id,
                items_known: conversation.items.len(),
            });
            let answer = match &config.output_schema {
                None => response.text,
                Some(schema) => match schema.check(&response.text) {
                    // The JSON alone, compact, whatever the model wrapped around it.
                    Ok(value) => value.to_string(),
                    Err(problem) if output_retry => {
                        output_retry = false;
                        let message = Item::Message(agent_core::Message::user(format!(
                            "Your answer does not match the required JSON Schema: {problem}. \
                             Answer again with only the JSON object."
                        )));
                        on_event(AgentEvent::ItemAdded { item: message.clone() });
                        conversation.items.push(message);
                        continue;
                    }
                    Err(problem) => return finish(on_event, Finish::InvalidOutput(problem)),
                },
            };
            match stop_hooks(executor, &answer, stop_hook_active, cancel).await {
                StopHooks::Answer => return finish(on_event, Finish::Answered(answer)),
                StopHooks::Stop(reason) => return finish(on_event, Finish::Stopped(reason)),
                StopHooks::KeepGoing(reason) => {
                    // Claude Code's Stop hook contract: a block sends its reason to the model as
                    // the next user message, and the run goes on.
                    stop_hook_active = true;
                    let message = Item::Message(agent_core::Message::user(reason));
                    on_event(AgentEvent::ItemAdded { item: message.clone() });
                    conversation.items.push(message);
                    continue;
                }
            }
        }
        // The server holds everything up to and including this response; the outputs appended
        // below are what the next request must send.
        conversation.continuation = response.response_id.map(|id| Continuation {
            previous_response_id: id,
            items_known: conversation.items.len(),
        });
        for call in &calls {
            on_event(AgentEvent::ToolCallStarted {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        let outcomes = executor.execute_batch(&calls, cancel).instrument(turn_span).await;
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
                error: outcome.error_code.map(str::to_owned),
                duration_ms: duration_ms(outcome.duration),
                truncated: outcome.truncated,
                output_path: outcome.output_path.take().map(|path| path.display().to_string()),
                remedy: outcome.remedy.take(),
            });
            let output = Item::ToolOutput(outcome.into_call_output());
            on_event(AgentEvent::ItemAdded { item: output.clone() });
            conversation.items.push(output);
        }
        if cancel.is_cancelled() {
            return finish(on_event, Finish::Cancelled);
        }
        if let Some(reason) = stop {
            return finish(on_event, Finish::Stopped(reason));
        }
    }
    finish(on_event, Finish::MaxTurns(config.max_turns))
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

/// One model response, collected from its stream.
struct Response {
    items: Vec<Item>,
    text: String,
    response_id: Option<String>,
    usage: Option<Usage>,
}

async fn read_response(
    model: &dyn ModelClient,
    request: ModelRequest<'_>,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<Response, ModelError> {
    let mut stream = model.stream(request).await?;
    let mut response =
        Response { items: Vec::new(), text: String::new(), response_id: None, usage: None };
    while let Some(event) = stream.next().await {
        match event? {
            ModelEvent::TextDelta(text) => on_event(AgentEvent::TextDelta { text }),
            ModelEvent::ReasoningDelta(text) => on_event(AgentEvent::ReasoningDelta { text }),
            ModelEvent::Message(message) => {
                if !response.text.is_empty() {
                    response.text.push('\n');
                }
                response.text.push_str(&message.content);
                response.items.push(Item::Message(message));
            }
            ModelEvent::ToolCall(call) => response.items.push(Item::ToolCall(call)),
            ModelEvent::Reasoning(reasoning) => response.items.push(Item::Reasoning(reasoning)),
            ModelEvent::Usage(usage) => {
                response.usage = Some(usage);
                on_event(AgentEvent::Usage { usage });
            }
            ModelEvent::Completed { response_id, .. } => {
                response.response_id = response_id;
                return Ok(response);
            }
        }
    }
    Err(ModelError::new(
        ModelErrorKind::BadResponse,
        "the model's stream ended without a completion event",
    ))
}

/// The loop's view of the context window during one run: what each request carries.
struct Window<'a> {
    ctx: &'a ContextConfig,
    counts: RequestCount<'a>,
}

impl<'a> Window<'a> {
    fn new(ctx: &'a ContextConfig, config: &'a AgentConfig, tools: Vec<ToolSpec>) -> Self {
        Self { ctx, counts: RequestCount::new(&*ctx.counter, &config.instructions, tools) }
    }

    /// Compacts when the next request would pass the threshold, then reports its size.
    async fn before_request(
        &mut self,
        model: &dyn ModelClient,
        executor: &Executor,
        conversation: &mut Conversation,
        turn: usize,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        let mut tokens = self.tokens(conversation);
        if tokens > self.ctx.threshold_tokens() {
            let reason = CompactionReason::Threshold;
            self.compact(model, executor, conversation, reason, cancel, on_event).await;
            tokens = self.tokens(conversation);
        }
        on_event(AgentEvent::Request {
            turn,
            estimated_input_tokens: tokens,
            window: self.ctx.current_window(),
        });
    }

    fn tokens(&mut self, conversation: &Conversation) -> usize {
        self.counts.tokens(&conversation.items, self.ctx.threshold_tokens())
    }

    async fn compact(
        &mut self,
        model: &dyn ModelClient,
        executor: &Executor,
        conversation: &mut Conversation,
        reason: CompactionReason,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        let fixed = self.counts.fixed();
        let info =
            compaction::compact(model, self.ctx, executor, conversation, fixed, reason, cancel)
                .await;
        // The server's chain holds the old transcript: the next request starts a new one from
        // the compacted input.
        conversation.continuation = None;
        self.counts.reset();
        on_event(AgentEvent::Compaction {
            info,
            items: conversation.items.clone(),
            ledger: conversation.ledger.clone(),
        });
    }
}

/// Counts identical failing calls in a row: same tool, same arguments, same error code.
#[derive(Default)]
struct RepeatedFailures {
    last: Option<(String, String, &'static str)>,
    count: usize,
}

impl RepeatedFailures {
    /// Records an outcome and returns how many times in a row this exact failure has happened
    /// (0 for a success).
    fn record(&mut self, call: &ToolCall, outcome: &Outcome) -> usize {
        let Some(code) = outcome.error_code else {
            self.last = None;
            self.count = 0;
            return 0;
        };
        let same = self.last.as_ref().is_some_and(|(name, arguments, last_code)| {
            *name == call.name && *arguments == call.arguments && *last_code == code
        });
        if same {
            self.count += 1;
        } else {
            self.last = Some((call.name.clone(), call.arguments.clone(), code));
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

fn cancelled_error() -> ModelError {
    ModelError::new(ModelErrorKind::Cancelled, "cancelled by the user")
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
