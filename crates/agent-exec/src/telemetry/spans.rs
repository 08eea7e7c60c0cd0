//! The spans, one type for each kind: started with their conventional names and attributes,
//! finished with what happened (usage, decision, error code), and ended when dropped.

use std::{
    sync::{Mutex, OnceLock, PoisonError},
    time::Instant,
};

use agent_core::{ModelClient, ModelError, ModelErrorKind, StopReason, ToolCall, Usage};
use opentelemetry::{
    Context, KeyValue, StringValue, Value,
    global::{self, BoxedTracer},
    trace::{SpanKind, Status, TraceContextExt, Tracer},
};

use super::{Telemetry, metrics::Instruments};
use crate::{agent::Finish, compaction::CompactionInfo, executor::Outcome};

/// The instrumentation scope of every span and instrument.
const SCOPE: &str = "agent";

/// The session's tracer and instruments, taken from the global providers once per executor.
pub(crate) struct Otel {
    tracer: BoxedTracer,
    pub(crate) instruments: Instruments,
    /// The session's `invoke_agent` span, from the first prompt to
    /// [`crate::Executor::end_session_span`] or the executor's drop.
    session: Mutex<Option<SessionSpan>>,
    /// Whether the tracer is the API's no-op one (no SDK installed), learned from the first tool
    /// span. Building a tool span's attributes was most of a call's dispatch cost when nothing
    /// records them, so later calls skip the span; with an SDK every call still gets its whole
    /// span at the start, and so does every sampler.
    tracer_is_noop: OnceLock<bool>,
}

impl Otel {
    pub(crate) fn new() -> Self {
        let session = Mutex::new(None);
        let (tracer, instruments) = (global::tracer(SCOPE), Instruments::new(SCOPE));
        Self { tracer, instruments, session, tracer_is_noop: OnceLock::new() }
    }

    /// The session span's context, started under the current context by the first prompt.
    fn session(&self, telemetry: &Telemetry, session_id: &str) -> Context {
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let span =
            session.get_or_insert_with(|| SessionSpan::start(telemetry.agent_name(), session_id));
        span.cx.clone()
    }

    /// Ends the session span; the next prompt starts another.
    pub(crate) fn end_session(&self) {
        let span = self.session.lock().unwrap_or_else(PoisonError::into_inner).take();
        drop(span);
    }

    /// Starts a span named `name` under the current context.
    fn start(&self, name: String, kind: SpanKind, attributes: Vec<KeyValue>) -> Context {
        self.start_under(&Context::current(), name, kind, attributes)
    }

    /// Starts a span named `name` under `parent`.
    fn start_under(
        &self,
        parent: &Context,
        name: String,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Context {
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// The `prompt` span of one run of the loop, under the session's span; its text when
    /// prompts are captured.
    pub(crate) fn prompt(
        &self,
        telemetry: &Telemetry,
        session_id: &str,
        prompt: Option<&str>,
    ) -> PromptSpan {
        let mut attributes = vec![KeyValue::new("gen_ai.operation.name", "invoke_agent")];
        attributes.push(KeyValue::new("gen_ai.agent.name", telemetry.agent_name().to_owned()));
        if let (true, Some(prompt)) = (telemetry.capture.prompts, prompt) {
            attributes
                .push(KeyValue::new("gen_ai.input.messages", messages("user", prompt, telemetry)));
        }
        let session = self.session(telemetry, session_id);
        let name = "prompt".to_owned();
        PromptSpan { cx: self.start_under(&session, name, SpanKind::Internal, attributes) }
    }

    /// The `chat {model}` span of one model request.
    pub(crate) fn chat(&self, model: &dyn ModelClient) -> ChatSpan {
        let endpoint = model.endpoint();
        let model_id =
            endpoint.as_ref().map_or_else(|| model.name().to_owned(), |e| e.model.clone());
        let provider = endpoint.as_ref().map_or("openai", |e| e.provider);
        let mut common = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider),
            KeyValue::new("gen_ai.request.model", model_id.clone()),
        ];
        if let Some(endpoint) = &endpoint {
            if let Some(address) = &endpoint.server_address {
                common.push(KeyValue::new("server.address", address.clone()));
            }
            if let Some(port) = endpoint.server_port {
                common.push(KeyValue::new("server.port", i64::from(port)));
            }
        }
        let cx = self.start(format!("chat {model_id}"), SpanKind::Client, common.clone());
        ChatSpan { cx, common, started: Instant::now() }
    }

    /// The `execute_tool {tool}` span of one call; its arguments when they are captured. No span
    /// once the tracer is known to be the no-op one.
    pub(crate) fn tool(&self, call: &ToolCall, telemetry: &Telemetry) -> ToolSpan {
        if self.tracer_is_noop.get() == Some(&true) {
            return ToolSpan { cx: None };
        }
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.call_id.clone()),
            KeyValue::new("gen_ai.tool.type", "function"),
        ];
        if telemetry.capture.tool_arguments {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                telemetry.redact(&call.arguments),
            ));
        }
        let name = format!("execute_tool {}", call.name);
        let parent = Context::current();
        let cx = self.start_under(&parent, name, SpanKind::Internal, attributes);
        self.tracer_is_noop.get_or_init(|| is_noop(&parent, &cx));
        ToolSpan { cx: Some(cx) }
    }

    /// Records on the current tool call's span who decided whether it runs (`config`: the
    /// rules or the mode; `user`; `hook`) and what (`accept` or `reject`), and counts it.
    pub(crate) fn decision(&self, accepted: bool, source: &'static str) {
        let decision = if accepted { "accept" } else { "reject" };
        opentelemetry::trace::get_active_span(|span| {
            span.set_attribute(KeyValue::new("agent.tool.decision", decision));
            span.set_attribute(KeyValue::new("agent.tool.decision.source", source));
        });
        self.instruments.decision(decision, source);
    }

    /// The `compact` span of one compaction.
    pub(crate) fn compaction(&self) -> Context {
        let attributes = vec![KeyValue::new("gen_ai.operation.name", "compact")];
        self.start("compact".to_owned(), SpanKind::Internal, attributes)
    }
}

/// Whether the span just started in `child` under `parent` comes from the API's no-op tracer.
/// The no-op tracer hands back its parent's span context and records nothing; an SDK's tracer
/// gives every span a fresh span id, even one its sampler drops (an SDK that is shut down or
/// suppressed hands back an empty context and records nothing, which is as good as no-op).
fn is_noop(parent: &Context, child: &Context) -> bool {
    let span = child.span();
    !span.is_recording() && span.span_context().span_id() == parent.span().span_context().span_id()
}

/// The root span of a session: `invoke_agent {name}`, ended when this value is dropped.
#[derive(Debug)]
pub struct SessionSpan {
    cx: Context,
}

impl SessionSpan {
    /// Starts `invoke_agent {name}` under the current context.
    pub(crate) fn start(name: &str, conversation_id: &str) -> Self {
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(format!("invoke_agent {name}"))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                KeyValue::new("gen_ai.agent.name", name.to_owned()),
                KeyValue::new("gen_ai.conversation.id", conversation_id.to_owned()),
            ])
            .start_with_context(&tracer, &Context::current());
        Self { cx: Context::current().with_span(span) }
    }

    /// The context to run the session's prompts in, so their spans are its children.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Ends the span now (dropping the value does the same).
    pub fn end(self) {
        self.cx.span().end();
    }
}

impl Drop for SessionSpan {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// The span of one prompt.
pub(crate) struct PromptSpan {
    pub(crate) cx: Context,
}

impl PromptSpan {
    /// Records how the run ended (and the answer when answers are captured), and ends the span.
    pub(crate) fn finish(self, finish: &Finish, turns: usize, telemetry: &Telemetry) {
        let span = self.cx.span();
        let (reason, error) = match finish {
            Finish::Answered(_) => ("answered", None),
            Finish::MaxTurns(_) => ("max_turns", Some("max_turns")),
            Finish::Cancelled => ("cancelled", None),
            Finish::ModelError(err) => ("model_error", Some(model_error_code(&err.kind))),
            Finish::Stopped(_) => ("stopped", None),
            Finish::InvalidOutput(_) => ("invalid_output", Some("invalid_output")),
        };
        span.set_attribute(KeyValue::new("agent.finish_reason", reason));
        span.set_attribute(KeyValue::new("agent.turns", i64::try_from(turns).unwrap_or(i64::MAX)));
        if let (true, Finish::Answered(answer)) = (telemetry.capture.answers, finish) {
            span.set_attribute(KeyValue::new(
                "gen_ai.output.messages",
                messages("assistant", answer, telemetry),
            ));
        }
        if let Some(code) = error {
            span.set_attribute(KeyValue::new("error.type", code));
            span.set_status(Status::error(code));
        }
        span.end();
    }
}

/// The span of one model request, with the attributes its metrics share.
pub(crate) struct ChatSpan {
    pub(crate) cx: Context,
    common: Vec<KeyValue>,
    started: Instant,
}

impl ChatSpan {
    /// Records the response (usage, finish reason) or the error, the metrics, and ends the span.
    pub(crate) fn finish(mut self, otel: &Otel, result: Result<Answered<'_>, &ModelError>) {
        let span = self.cx.span();
        match result {
            Ok(Answered { usage, stop, response_id, model }) => {
                if let Some(id) = response_id {
                    span.set_attribute(KeyValue::new("gen_ai.response.id", id.to_owned()));
                }
                if let Some(model) = model {
                    span.set_attribute(KeyValue::new("gen_ai.response.model", model.to_owned()));
                }
                if let Some(stop) = stop {
                    let reason = finish_reason(stop);
                    span.set_attribute(KeyValue::new(
                        "gen_ai.response.finish_reasons",
                        Value::Array(vec![StringValue::from(reason)].into()),
                    ));
                }
                if let Some(usage) = usage {
                    span.set_attributes(usage_attributes(usage));
                    otel.instruments.tokens(usage, &self.common);
                }
            }
            Err(err) => {
                let code = model_error_code(&err.kind);
                span.set_attribute(KeyValue::new("error.type", code));
                span.set_status(Status::error(format!("{code}: {err}")));
                self.common.push(KeyValue::new("error.type", code));
            }
        }
        otel.instruments.operation(self.started.elapsed(), &self.common);
        span.end();
    }
}

/// What a model request that succeeded reports on its span.
pub(crate) struct Answered<'a> {
    pub(crate) usage: Option<&'a Usage>,
    pub(crate) stop: Option<&'a StopReason>,
    pub(crate) response_id: Option<&'a str>,
    /// The model the server says answered (`gen_ai.response.model`).
    pub(crate) model: Option<&'a str>,
}

/// The span of one tool call; none when no tracer records it.
pub(crate) struct ToolSpan {
    pub(crate) cx: Option<Context>,
}

impl ToolSpan {
    /// Records the outcome (error code, duration, output when captured), the metrics, and ends
    /// the span.
    pub(crate) fn finish(self, otel: &Otel, outcome: &Outcome, telemetry: &Telemetry) {
        let code = outcome.error_code.as_ref().map(agent_core::ToolErrorKind::as_str);
        otel.instruments.tool_call(&outcome.tool, code, outcome.duration);
        let Some(cx) = self.cx else { return };
        let span = cx.span();
        let duration_ms = i64::try_from(outcome.duration.as_millis()).unwrap_or(i64::MAX);
        span.set_attribute(KeyValue::new("agent.tool.duration_ms", duration_ms));
        span.set_attribute(KeyValue::new("agent.tool.truncated", outcome.truncated));
        if telemetry.capture.tool_outputs {
            span.set_attribute(KeyValue::new(
                "gen_ai.tool.call.result",
                telemetry.redact(&outcome.text),
            ));
        }
        if let Some(code) = code {
            span.set_attribute(KeyValue::new("error.type", code.to_owned()));
            span.set_status(Status::error(code.to_owned()));
        }
        span.end();
    }
}

/// Records on the current tool call's span how many bytes of its output the cap dropped.
pub(crate) fn record_dropped(bytes: usize) {
    opentelemetry::trace::get_active_span(|span| {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        span.set_attribute(KeyValue::new("agent.tool.output.dropped_bytes", bytes));
    });
}

/// Finishes a compaction span with what the compaction did.
pub(crate) fn finish_compaction(cx: &Context, info: &CompactionInfo) {
    let span = cx.span();
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    span.set_attributes([
        KeyValue::new("agent.compaction.reason", format!("{:?}", info.reason).to_lowercase()),
        KeyValue::new("agent.compaction.tokens_before", count(info.tokens_before)),
        KeyValue::new("agent.compaction.tokens_after", count(info.tokens_after)),
        KeyValue::new("agent.compaction.turns_dropped", count(info.turns_dropped)),
        KeyValue::new("agent.compaction.summarized", info.summarized),
    ]);
    if info.summary_error.is_some() {
        span.set_attribute(KeyValue::new("error.type", "summary_failed"));
        span.set_status(Status::error("summary_failed"));
    }
    span.end();
}

fn usage_attributes(usage: &Usage) -> [KeyValue; 4] {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    [
        KeyValue::new("gen_ai.usage.input_tokens", count(usage.input_tokens)),
        KeyValue::new("gen_ai.usage.output_tokens", count(usage.output_tokens)),
        KeyValue::new("gen_ai.usage.cache_read.input_tokens", count(usage.cached_input_tokens)),
        KeyValue::new("gen_ai.usage.reasoning.output_tokens", count(usage.reasoning_tokens)),
    ]
}

/// The conventions' finish reasons (`stop`, `length`, `content_filter`, or the provider's word).
fn finish_reason(stop: &StopReason) -> String {
    match stop {
        StopReason::Completed => "stop".to_owned(),
        StopReason::MaxTokens => "length".to_owned(),
        StopReason::ContentFilter => "content_filter".to_owned(),
        StopReason::Other(other) => other.clone(),
    }
}

/// One message as the conventions' `gen_ai.*.messages` JSON: a role and one text part, redacted.
fn messages(role: &str, text: &str, telemetry: &Telemetry) -> String {
    let message = serde_json::json!([
        { "role": role, "parts": [{ "type": "text", "content": telemetry.redact(text) }] }
    ]);
    message.to_string()
}

/// A model error's class as the `error.type` code.
fn model_error_code(kind: &ModelErrorKind) -> &'static str {
    match kind {
        ModelErrorKind::Auth => "auth",
        ModelErrorKind::RateLimit { .. } => "rate_limit",
        ModelErrorKind::ContextTooLong => "context_too_long",
        ModelErrorKind::ModelNotFound => "model_not_found",
        ModelErrorKind::Server => "server",
        ModelErrorKind::BadResponse => "bad_response",
        ModelErrorKind::Network => "network",
        ModelErrorKind::InvalidRequest => "invalid_request",
        ModelErrorKind::Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use opentelemetry::trace::{TracerProvider as _, noop::NoopTracer};
    use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SdkTracerProvider};

    use super::*;

    /// An `Otel` over `tracer` instead of the global one, so tests do not share a provider.
    fn otel(tracer: BoxedTracer) -> Otel {
        let session = Mutex::new(None);
        Otel {
            tracer,
            instruments: Instruments::new(SCOPE),
            session,
            tracer_is_noop: OnceLock::new(),
        }
    }

    fn outcome() -> Outcome {
        Outcome {
            call_id: "c".to_owned(),
            tool: "t".to_owned(),
            ok: true,
            error_code: None,
            text: String::new(),
            duration: Duration::ZERO,
            truncated: false,
            output_path: None,
            remedy: None,
            stop: None,
            images: Vec::new(),
        }
    }

    /// Runs three calls through `otel` and returns whether each got a span.
    fn three_calls(otel: &Otel) -> Vec<bool> {
        let telemetry = Telemetry::default();
        (0..3)
            .map(|n| {
                let span = otel.tool(&ToolCall::function(format!("c{n}"), "t", "{}"), &telemetry);
                let had = span.cx.is_some();
                span.finish(otel, &outcome(), &telemetry);
                had
            })
            .collect()
    }

    #[test]
    fn without_an_sdk_only_the_first_call_builds_a_span() {
        let otel = otel(BoxedTracer::new(Box::new(NoopTracer::new())));
        assert_eq!(three_calls(&otel), [true, false, false]);
    }

    #[test]
    fn with_an_sdk_every_call_gets_its_whole_span() {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let otel = otel(BoxedTracer::new(Box::new(provider.tracer(SCOPE))));
        assert_eq!(three_calls(&otel), [true, true, true]);
        let spans = exporter.get_finished_spans().unwrap();
        let ids: Vec<String> = spans
            .iter()
            .filter_map(|span| {
                let id = span.attributes.iter().find(|kv| kv.key.as_str() == "gen_ai.tool.call.id");
                id.map(|kv| kv.value.to_string())
            })
            .collect();
        assert_eq!(ids, ["c0", "c1", "c2"]);
    }

    /// A sampler that drops every span still gets every span to decide on: the SDK is told from the
    /// no-op tracer not by what it records but by the fresh span id it gives each span.
    #[test]
    fn an_sdk_whose_sampler_drops_everything_is_not_taken_for_the_no_op_tracer() {
        let provider = SdkTracerProvider::builder().with_sampler(Sampler::AlwaysOff).build();
        let otel = otel(BoxedTracer::new(Box::new(provider.tracer(SCOPE))));
        assert_eq!(three_calls(&otel), [true, true, true]);
    }
}
