//! Measures the executor's per-call cost: 200,000 `uppercase` calls through the full path (look
//! up, parse and validate, permission policy, run under a timeout and token, cap, outcome), the
//! same with 10% invalid JSON and 10% schema violations, and validation alone.
//!
//! Run with `cargo run --release -p agent-exec --example dispatch [-- --json] [--quick]`. With
//! `--json` it prints one `{"name","unit","median","min","max","runs"}` object per line, which
//! `cargo xtask bench` collects; each run is one round of 200,000 calls.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::{sync::Arc, time::Instant};

use agent_core::{
    BoxFuture, CancellationToken, Effects, PreparedCall, Tool, ToolCall, ToolContext, ToolError,
    ToolOutput, ToolSpec, Typed, TypedTool, schema::ArgsError,
};
use agent_exec::{Executor, ExecutorConfig, PermissionMode, PermissionPolicy, Registry, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

/// Input of `uppercase`.
#[derive(Deserialize, JsonSchema)]
struct Input {
    /// The text.
    text: String,
}

struct Uppercase;

impl TypedTool for Uppercase {
    type Input = Input;
    const NAME: &'static str = "uppercase";
    fn description(&self) -> String {
        "Returns the text in upper case.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: Input, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text.to_uppercase()))
    }
}

/// A tool that does nothing, to measure the executor alone.
struct Noop(ToolSpec);

fn noop_spec() -> ToolSpec {
    ToolSpec {
        name: "noop".to_owned(),
        description: "Does nothing.".to_owned(),
        parameters: serde_json::json!({"type": "object"}),
        strict: false,
        aliases: Vec::new(),
        effects: Effects::READ_ONLY,
        rule_name: "Noop".to_owned(),
        text_input: None,
        shape: agent_core::ToolShape::Function,
    }
}

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
        Box::pin(async { Ok(ToolOutput::text(String::new())) })
    }
}

const CALLS: usize = 200_000;

fn call(arguments: &str) -> ToolCall {
    ToolCall {
        call_id: "call_1".to_owned(),
        name: "uppercase".to_owned(),
        arguments: arguments.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    }
}

/// Median, min and max of per-round figures, printed as a JSON line or as text.
fn report(json: bool, name: &str, mut values: Vec<f64>, about: &str) {
    values.sort_by(f64::total_cmp);
    let (median, min, max) = (values[values.len() / 2], values[0], values[values.len() - 1]);
    if json {
        let line = serde_json::json!({"name": name, "unit": "ns", "median": median, "min": min, "max": max, "runs": values.len()});
        println!("{line}");
    } else {
        println!(
            "{name:<24} median {median:>7.0} ns/call (min {min:.0}, max {max:.0}, {} rounds of {CALLS}): {about}",
            values.len()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let rounds = if args.iter().any(|arg| arg == "--quick") { 3 } else { 7 };
    let dir = std::env::temp_dir();
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap();
    let policy = PermissionPolicy::new(Workspace::new(&dir).unwrap(), PermissionMode::Default);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("bench"));
    let valid = call(r#"{"text":"hello world"}"#);
    // Every tenth call is not JSON and every tenth (offset by five) violates the schema.
    let mixed: Vec<ToolCall> = (0..10)
        .map(|i| match i {
            0 => call(r#"{"text":"hello world""#),
            5 => call(r#"{"txt":"hello world"}"#),
            _ => call(r#"{"text":"hello world"}"#),
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let token = CancellationToken::new();
    runtime.block_on(async {
        // Warm up caches and the allocator.
        for _ in 0..10_000 {
            assert!(exec.execute(&valid, &token).await.ok);
        }
        let mut per_round = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            let mut bytes = 0;
            for _ in 0..CALLS {
                bytes += exec.execute(&valid, &token).await.text.len();
            }
            assert_eq!(bytes, CALLS * "HELLO WORLD".len());
            per_round.push(started.elapsed().as_nanos() as f64 / CALLS as f64);
        }
        report(json, "dispatch.valid", per_round, "valid calls through Executor::execute");

        let mut per_round = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            let mut failed = 0;
            for i in 0..CALLS {
                failed += usize::from(!exec.execute(&mixed[i % 10], &token).await.ok);
            }
            assert_eq!(failed, CALLS / 5);
            per_round.push(started.elapsed().as_nanos() as f64 / CALLS as f64);
        }
        report(json, "dispatch.mixed", per_round, "10% invalid JSON, 10% schema violations");

        // Each kind of failure alone, to show where the mixed figure's extra cost comes from.
        for (name, bad) in
            [("dispatch.invalid_json", &mixed[0]), ("dispatch.schema_violation", &mixed[5])]
        {
            let mut per_round = Vec::new();
            for _ in 0..rounds {
                let started = Instant::now();
                for _ in 0..CALLS {
                    assert!(!exec.execute(bad, &token).await.ok);
                }
                per_round.push(started.elapsed().as_nanos() as f64 / CALLS as f64);
            }
            report(json, name, per_round, "every call fails before it runs");
        }

        // The validator alone: the part of the cost the executor does not own.
        let tool = exec.registry().get("uppercase").unwrap().clone();
        let mut per_round = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(tool.prepare(&valid.arguments).unwrap());
            }
            per_round.push(started.elapsed().as_nanos() as f64 / CALLS as f64);
        }
        report(json, "dispatch.validate_only", per_round, "Tool::prepare (parse + validate)");

        // The executor's own share: a tool whose prepare and run do no work at all.
        let mut registry = Registry::new();
        registry.register(Arc::new(Noop(noop_spec()))).unwrap();
        let policy = PermissionPolicy::new(Workspace::new(&dir).unwrap(), PermissionMode::Default);
        let exec = Executor::new(registry, policy, ExecutorConfig::new("bench"));
        let noop = ToolCall { name: "noop".to_owned(), ..valid.clone() };
        let mut per_round = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(exec.execute(&noop, &token).await);
            }
            per_round.push(started.elapsed().as_nanos() as f64 / CALLS as f64);
        }
        report(json, "dispatch.executor_only", per_round, "a no-op tool: the executor alone");
    });
}
