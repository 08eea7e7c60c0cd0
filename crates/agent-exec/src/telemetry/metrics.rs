//! The metrics: token usage and operation duration as the GenAI conventions name them, the
//! conventions' tool duration, and our counts of tool calls by outcome and of decisions.

use std::time::Duration;

use agent_core::Usage;
use opentelemetry::{
    KeyValue, global,
    metrics::{Counter, Histogram},
};

/// The conventions' bucket boundaries for token counts.
const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The conventions' bucket boundaries for durations, in seconds.
const SECONDS_BUCKETS: &[f64] =
    &[0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// The instruments of one executor.
pub(crate) struct Instruments {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
    tool_calls: Counter<u64>,
    decisions: Counter<u64>,
}

impl Instruments {
    pub(crate) fn new(scope: &'static str) -> Self {
        let meter = global::meter(scope);
        Self {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(SECONDS_BUCKETS.to_vec())
                .build(),
            tool_duration: meter
                .f64_histogram("gen_ai.execute_tool.duration")
                .with_unit("s")
                .with_description("Duration of tool executions.")
                .with_boundaries(SECONDS_BUCKETS.to_vec())
                .build(),
            tool_calls: meter
                .u64_counter("agent.tool.calls")
                .with_unit("{call}")
                .with_description("Tool calls, by tool and outcome (`ok` or the error code).")
                .build(),
            decisions: meter
                .u64_counter("agent.tool.decisions")
                .with_unit("{decision}")
                .with_description(
                    "Permission decisions on tool calls, by decision and who made it.",
                )
                .build(),
        }
    }

    /// Counts one permission decision.
    pub(crate) fn decision(&self, decision: &'static str, source: &'static str) {
        let attributes = [
            KeyValue::new("agent.tool.decision", decision),
            KeyValue::new("agent.tool.decision.source", source),
        ];
        self.decisions.add(1, &attributes);
    }

    /// Records a response's input and output tokens.
    pub(crate) fn tokens(&self, usage: &Usage, common: &[KeyValue]) {
        for (kind, count) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
            let mut attributes = common.to_vec();
            attributes.push(KeyValue::new("gen_ai.token.type", kind));
            self.token_usage.record(count, &attributes);
        }
    }

    /// Records how long a model request took.
    pub(crate) fn operation(&self, took: Duration, common: &[KeyValue]) {
        self.operation_duration.record(took.as_secs_f64(), common);
    }

    /// Counts a tool call and records its duration.
    pub(crate) fn tool_call(&self, tool: &str, error: Option<&str>, took: Duration) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        ];
        if let Some(code) = error {
            attributes.push(KeyValue::new("error.type", code.to_owned()));
        }
        self.tool_duration.record(took.as_secs_f64(), &attributes);
        attributes.push(KeyValue::new("agent.tool.outcome", error.unwrap_or("ok").to_owned()));
        self.tool_calls.add(1, &attributes);
    }
}
