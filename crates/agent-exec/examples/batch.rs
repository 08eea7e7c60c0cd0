//! Measures one turn of eight read-only calls that each take 200 ms: `Executor::execute_batch`
//! should run them together, so the turn takes barely more than 200 ms, not 1.6 s.
//!
//! Run with `cargo run --release -p agent-exec --example batch [-- --json] [--quick]`. With
//! `--json` it prints a `{"name","unit","median","min","max","runs"}` line for `cargo xtask bench`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agent_core::{
    CancellationToken, Effects, ToolCall, ToolContext, ToolError, ToolOutput, Typed, TypedTool,
};
use agent_exec::{Executor, ExecutorConfig, PermissionMode, PermissionPolicy, Registry, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

/// Input of `wait`.
#[derive(Deserialize, JsonSchema)]
struct Input {
    /// How long to wait, in milliseconds.
    ms: u64,
}

/// A read-only tool that takes a fixed time, like a slow search or a fetch.
struct Wait;

impl TypedTool for Wait {
    type Input = Input;
    const NAME: &'static str = "wait";
    fn description(&self) -> String {
        "Waits, then answers.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: Input, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(input.ms)).await;
        Ok(ToolOutput::text("done"))
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let runs = if args.iter().any(|arg| arg == "--quick") { 5 } else { 15 };
    let dir = std::env::temp_dir();
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(Wait).unwrap())).unwrap();
    let policy = PermissionPolicy::new(Workspace::new(&dir).unwrap(), PermissionMode::Default);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("bench"));
    let calls: Vec<ToolCall> = (0..8)
        .map(|i| ToolCall {
            call_id: format!("call_{i}"),
            name: "wait".to_owned(),
            arguments: r#"{"ms":200}"#.to_owned(),
            item_id: None,
            shape: agent_core::CallShape::Function,
        })
        .collect();
    let token = CancellationToken::new();
    let mut times = Vec::new();
    for round in 0..=runs {
        let started = Instant::now();
        let outcomes = exec.execute_batch(&calls, &token).await;
        let took = started.elapsed().as_secs_f64() * 1e3;
        assert!(outcomes.iter().all(|outcome| outcome.ok && outcome.text == "done"));
        // The first round warms up.
        if round > 0 {
            times.push(took);
        }
    }
    times.sort_by(f64::total_cmp);
    let (median, min, max) = (times[times.len() / 2], times[0], times[times.len() - 1]);
    if json {
        let line = serde_json::json!({"name": "batch.eight_reads", "unit": "ms", "median": median, "min": min, "max": max, "runs": runs});
        println!("{line}");
    } else {
        println!(
            "8 read-only calls of 200 ms in one batch: median {median:.1} ms (min {min:.1}, max {max:.1}, {runs} runs)"
        );
    }
}
