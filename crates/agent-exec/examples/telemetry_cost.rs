//! Measures what OpenTelemetry costs one tool call on the loop: 20,000 `noop` calls through the
//! executor with no SDK installed (the API's no-op), then with an SDK installed (a batch span
//! processor and a periodic metric reader, over in-memory exporters, so the network is not part
//! of the figure: the OTLP exporter sends from its own threads). The figure is the difference,
//! per call, of the two rounds' medians.
//!
//! Run with `cargo run --release -p agent-exec --example telemetry_cost [-- --json] [--quick]`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::{sync::Arc, time::Instant};

use agent_core::{
    BoxFuture, CancellationToken, Effects, PreparedCall, Tool, ToolCall, ToolContext, ToolError,
    ToolOutput, ToolSpec, schema::ArgsError,
};
use agent_exec::{Executor, ExecutorConfig, PermissionMode, PermissionPolicy, Registry, Workspace};
use opentelemetry_sdk::{
    metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider},
    trace::{BatchSpanProcessor, InMemorySpanExporter, SdkTracerProvider},
};

struct Noop(ToolSpec);

impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn prepare(&self, _arguments: &str) -> Result<PreparedCall, ArgsError> {
        Ok(PreparedCall::new((), Vec::new()))
    }
    fn run<'a>(
        &'a self,
        _call: PreparedCall,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("done".to_owned())) })
    }
}

const CALLS: usize = 20_000;

fn executor() -> Executor {
    let spec = ToolSpec {
        name: "noop".to_owned(),
        description: "Does nothing.".to_owned(),
        parameters: serde_json::json!({"type": "object"}),
        strict: false,
        aliases: Vec::new(),
        effects: Effects::READ_ONLY,
        rule_name: "Noop".to_owned(),
        text_input: None,
        shape: agent_core::ToolShape::Function,
    };
    let mut registry = Registry::new();
    registry.register(Arc::new(Noop(spec))).unwrap();
    let workspace = Workspace::new(std::env::temp_dir()).unwrap();
    let policy = PermissionPolicy::new(workspace, PermissionMode::Default);
    Executor::new(registry, policy, ExecutorConfig::new("bench"))
}

/// Nanoseconds per call of each round.
fn rounds(runtime: &tokio::runtime::Runtime, count: usize) -> Vec<f64> {
    let exec = executor();
    let call = ToolCall {
        call_id: "call_1".to_owned(),
        name: "noop".to_owned(),
        arguments: "{}".to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    };
    let cancel = CancellationToken::new();
    (0..count)
        .map(|_| {
            let started = Instant::now();
            runtime.block_on(async {
                for _ in 0..CALLS {
                    std::hint::black_box(exec.execute(&call, &cancel).await);
                }
            });
            started.elapsed().as_nanos() as f64 / CALLS as f64
        })
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let count = if args.iter().any(|arg| arg == "--quick") { 3 } else { 7 };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let off = rounds(&runtime, count);
    let spans = BatchSpanProcessor::builder(InMemorySpanExporter::default()).build();
    let traces = SdkTracerProvider::builder().with_span_processor(spans).build();
    let reader = PeriodicReader::builder(InMemoryMetricExporter::default()).build();
    let meters = SdkMeterProvider::builder().with_reader(reader).build();
    opentelemetry::global::set_tracer_provider(traces.clone());
    opentelemetry::global::set_meter_provider(meters.clone());
    let on = rounds(&runtime, count);
    let _ = traces.shutdown();
    let _ = meters.shutdown();
    // Each round's difference against the median of the other side, in microseconds.
    let off_median = median(off.clone());
    let diffs: Vec<f64> = on.iter().map(|on| (on - off_median) / 1000.0).collect();
    let mut sorted = diffs.clone();
    sorted.sort_by(f64::total_cmp);
    let (mid, min, max) = (sorted[sorted.len() / 2], sorted[0], sorted[sorted.len() - 1]);
    if json {
        let line = serde_json::json!({"name": "telemetry.overhead_per_call_us", "unit": "µs", "median": mid, "min": min, "max": max, "runs": diffs.len()});
        println!("{line}");
    } else {
        println!(
            "telemetry.overhead_per_call_us median {mid:.2} µs (min {min:.2}, max {max:.2}); \
             a call costs {:.2} µs without an SDK, {:.2} µs with one",
            off_median / 1000.0,
            median(on) / 1000.0
        );
    }
}
