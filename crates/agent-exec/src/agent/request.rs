//! One model request of a turn: the loop's view of the context window (compact before a request
//! that would pass the threshold, once more after a server's overflow), and the response read
//! from its stream.

use agent_core::{
    CancellationToken, Item, ModelClient, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    ToolSpec, Usage,
};
use futures_util::StreamExt;
use opentelemetry::context::FutureExt;
use tracing::Instrument;

use super::{AgentConfig, AgentEvent, Conversation};
use crate::{
    compaction::{self, CompactionReason, ContextConfig, RequestCount},
    executor::Executor,
    telemetry::Answered,
};

/// One turn's fixed inputs: its number, the tools offered, and its tracing span.
pub(super) struct Turn<'a> {
    pub(super) number: usize,
    pub(super) tools: &'a [ToolSpec],
    pub(super) span: &'a tracing::Span,
}

/// Sends one request and reads the response, compacting first when the next request would pass
/// the window's threshold; a server that says the request was over its window gets one compaction
/// and one retry (our count was wrong for this model, the server's word is final). Returns where
/// the turn's items start and the response.
#[allow(clippy::too_many_arguments)]
pub(super) async fn model_turn(
    model: &dyn ModelClient,
    executor: &Executor,
    config: &AgentConfig,
    conversation: &mut Conversation,
    window: &mut Option<Window<'_>>,
    turn: &Turn<'_>,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> (usize, Result<Response, ModelError>) {
    let mut overflowed = false;
    loop {
        if let Some(window) = window {
            let fits = window
                .before_request(model, executor, conversation, turn.number, cancel, on_event)
                .await;
            if let Err(err) = fits {
                return (conversation.items.len(), Err(err));
            }
        }
        let turn_start = conversation.items.len();
        let continuation =
            if model.supports_continuation() { conversation.continuation.clone() } else { None };
        let request = ModelRequest {
            instructions: &config.instructions,
            items: &conversation.items,
            tools: turn.tools,
            tool_choice: &config.tool_choice,
            parallel_tool_calls: config.parallel_tool_calls,
            continuation: continuation.as_ref(),
            output_schema: config.output_schema.as_ref(),
        };
        let chat = executor.otel().chat(model);
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(cancelled_error()),
            response = read_response(model, request, on_event)
                .instrument(tracing::debug_span!(parent: turn.span, "model_request"))
                .with_context(chat.cx.clone()) => response,
        };
        let answered = response.as_ref().map(|r| Answered {
            usage: r.usage.as_ref(),
            stop: r.stop.as_ref(),
            response_id: r.response_id.as_deref(),
            model: r.model.as_deref(),
        });
        chat.finish(executor.otel(), answered);
        if let (Err(err), Some(window)) = (&response, window.as_mut())
            && err.kind == ModelErrorKind::ContextTooLong
            && !overflowed
        {
            turn.span.in_scope(|| tracing::warn!(error = %err, "context overflow; compacting"));
            overflowed = true;
            let reason = CompactionReason::Overflow;
            let tokens = window.tokens(conversation);
            if !window.compact(model, executor, conversation, reason, cancel, on_event).await {
                // The same request would be refused again: say why instead of sending it.
                let why = format!(
                    "the server refused the request as longer than the model's window ({err}), \
                     and compaction found nothing to shrink in it (about {tokens} tokens by the \
                     agent's count): start a new session, or set the server's real window with \
                     --context-window"
                );
                return (conversation.items.len(), Err(too_long(why)));
            }
            continue;
        }
        return (turn_start, response);
    }
}

/// One model response, collected from its stream.
pub(super) struct Response {
    pub(super) items: Vec<Item>,
    pub(super) text: String,
    pub(super) response_id: Option<String>,
    /// The model the server says answered, for telemetry.
    pub(super) model: Option<String>,
    pub(super) usage: Option<Usage>,
    /// Why the response ended, for telemetry.
    pub(super) stop: Option<agent_core::StopReason>,
}

async fn read_response(
    model: &dyn ModelClient,
    request: ModelRequest<'_>,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<Response, ModelError> {
    let mut stream = model.stream(request).await?;
    let mut response = Response {
        items: Vec::new(),
        text: String::new(),
        response_id: None,
        model: None,
        usage: None,
        stop: None,
    };
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
            ModelEvent::Completed { response_id, model, stop } => {
                response.response_id = response_id;
                response.model = model;
                response.stop = Some(stop);
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
pub(super) struct Window<'a> {
    ctx: &'a ContextConfig,
    pub(super) counts: RequestCount<'a>,
}

impl<'a> Window<'a> {
    pub(super) fn new(
        ctx: &'a ContextConfig,
        config: &'a AgentConfig,
        tools: Vec<ToolSpec>,
    ) -> Self {
        Self { ctx, counts: RequestCount::new(&*ctx.counter, &config.instructions, tools) }
    }

    /// Compacts when the next request would pass the threshold, then reports its size. A
    /// request that cannot fit the window is refused before it is sent, naming the sizes: the
    /// prompt alone (nothing can shrink it) at once, anything else after compaction did what it
    /// could.
    async fn before_request(
        &mut self,
        model: &dyn ModelClient,
        executor: &Executor,
        conversation: &mut Conversation,
        turn: usize,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), ModelError> {
        let window = self.ctx.current_window();
        let prompt = conversation.items.iter().rev().find_map(|item| match item {
            Item::Message(message) if message.role == agent_core::Role::User => {
                Some(message.content.as_str())
            }
            _ => None,
        });
        let prompt = prompt.unwrap_or_default();
        // A token covers at least one byte, so only a prompt whose bytes do not fit is counted.
        if (self.counts.fixed_bound() + prompt.len()) as u64 > window {
            let fixed = self.counts.fixed();
            let prompt = self.ctx.counter.count(prompt);
            if (fixed + prompt) as u64 > window {
                return Err(too_long(format!(
                    "the prompt alone is {prompt} tokens (and the instructions and tool schemas \
                     {fixed}), the window is {window}: shorten it, or use a model with a larger \
                     window"
                )));
            }
        }
        let mut tokens = self.tokens(conversation);
        if tokens > self.ctx.threshold_tokens() {
            let reason = CompactionReason::Threshold;
            self.compact(model, executor, conversation, reason, cancel, on_event).await;
            tokens = self.tokens(conversation);
        }
        if tokens as u64 > window {
            let fixed = self.counts.fixed();
            return Err(too_long(format!(
                "the request is {tokens} tokens even after compaction (the instructions and tool \
                 schemas {fixed}), the window is {window}: start a new session, or use a model \
                 with a larger window"
            )));
        }
        on_event(AgentEvent::Request { turn, estimated_input_tokens: tokens, window });
        Ok(())
    }

    fn tokens(&mut self, conversation: &Conversation) -> usize {
        self.counts.tokens(&conversation.items, self.ctx.threshold_tokens())
    }

    /// Compacts `conversation`; whether anything changed.
    async fn compact(
        &mut self,
        model: &dyn ModelClient,
        executor: &Executor,
        conversation: &mut Conversation,
        reason: CompactionReason,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> bool {
        let fixed = self.counts.fixed();
        let info =
            compaction::compact(model, self.ctx, executor, conversation, fixed, reason, cancel)
                .await;
        // A compaction that changed nothing is not recorded: its record would copy the whole
        // conversation, huge items and all, into the transcript again for nothing.
        if info.outputs_shrunk == 0 && info.arguments_shrunk == 0 && info.turns_dropped == 0 {
            tracing::info!(tokens = info.tokens_before, "the compaction found nothing to shrink");
            return false;
        }
        // The server's chain holds the old transcript: the next request starts a new one from
        // the compacted input.
        conversation.continuation = None;
        self.counts.reset();
        on_event(AgentEvent::Compaction {
            info,
            items: conversation.items.clone(),
            ledger: conversation.ledger.clone(),
        });
        true
    }
}

/// The error of a request that cannot fit the window.
fn too_long(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::ContextTooLong, message)
}

fn cancelled_error() -> ModelError {
    ModelError::new(ModelErrorKind::Cancelled, "cancelled by the user")
}
