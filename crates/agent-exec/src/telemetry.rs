//! OpenTelemetry: the spans and metrics of a session, named as the GenAI semantic conventions say.
//!
//! This crate only emits, through the OpenTelemetry API (`opentelemetry`), which does nothing
//! until a program installs an SDK: the `agent` binary installs an OTLP exporter when one is
//! configured, and a library user installs whatever provider they like before building the agent
//! (docs/telemetry.md shows both). The tracer and the instruments are taken from the global
//! providers when the [`crate::Executor`] is built, so a provider installed later is not seen.
//!
//! The tree: `invoke_agent` (one per [`crate::Executor`], the session) → `prompt` (one per prompt)
//! → `chat {model}` (one per model request) and `execute_tool {tool}` (one per call), with
//! `compact` around a compaction. A subagent run inside a tool call is a child of that call's
//! span: [`Telemetry::invoke_agent`] starts its own `invoke_agent` span under the current one.
//!
//! Content (prompts, answers, tool arguments and outputs) is left out unless [`Capture`] opts in
//! field by field, and even then the session's secrets are replaced by `[redacted]`, as in the
//! transcript.
//!
//! ```
//! use agent_exec::telemetry::{Capture, Telemetry};
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! // A program installs a provider first (here one that keeps spans in memory)…
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! opentelemetry::global::set_tracer_provider(provider.clone());
//! // …then builds its agent with the content it wants exported (none by default).
//! let mut config = agent_exec::ExecutorConfig::new("session-1");
//! config.telemetry = Telemetry::new(Capture { tool_arguments: true, ..Capture::default() }, vec![]);
//! # let _ = config;
//! provider.shutdown().ok();
//! ```

mod metrics;
mod spans;

use std::sync::Arc;

pub use self::spans::SessionSpan;
pub(crate) use self::spans::{Answered, Otel};
pub(crate) use self::spans::{finish_compaction, record_dropped};

/// Which content is exported, field by field; all off by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capture {
    /// The user's prompt, on the `prompt` span (`gen_ai.input.messages`).
    pub prompts: bool,
    /// The model's final answer, on the `prompt` span (`gen_ai.output.messages`).
    pub answers: bool,
    /// A tool call's arguments, on its `execute_tool` span (`gen_ai.tool.call.arguments`).
    pub tool_arguments: bool,
    /// A tool call's model-visible output, on its span (`gen_ai.tool.call.result`).
    pub tool_outputs: bool,
}

/// What a session exports beyond the spans' shape: the content opt-ins and the secrets that are
/// redacted from any content that is exported.
#[derive(Debug, Clone, Default)]
pub struct Telemetry {
    /// The content opt-ins.
    pub capture: Capture,
    secrets: Arc<[String]>,
    agent_name: Option<Arc<str>>,
}

/// Secrets shorter than this are not redacted, as in the transcript: replacing every `ab` would
/// garble the text and protect nothing.
const MIN_SECRET_LEN: usize = 4;

impl Telemetry {
    /// Exports the content `capture` names, with every one of `secrets` replaced by `[redacted]`
    /// (the transcript's list and rule).
    pub fn new(capture: Capture, secrets: Vec<String>) -> Self {
        let secrets = secrets.into_iter().filter(|secret| secret.len() >= MIN_SECRET_LEN).collect();
        Self { capture, secrets, agent_name: None }
    }

    /// The same settings, naming the agent `name` (`gen_ai.agent.name`; default `agent`), for a
    /// subagent.
    pub fn named(mut self, name: &str) -> Self {
        self.agent_name = Some(name.into());
        self
    }

    /// The agent's name on its `invoke_agent` span.
    pub fn agent_name(&self) -> &str {
        self.agent_name.as_deref().unwrap_or("agent")
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in self.secrets.iter() {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text
    }

    /// Starts an `invoke_agent` span for `name` under the current span (a subagent run inside a
    /// tool call), with the conversation id `conversation_id`; run the child agent's future
    /// inside it with [`opentelemetry::context::FutureExt::with_context`] and
    /// [`SessionSpan::context`].
    pub fn invoke_agent(&self, name: &str, conversation_id: &str) -> SessionSpan {
        SessionSpan::start(name, conversation_id)
    }
}
