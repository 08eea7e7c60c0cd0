//! Measures what a `PreToolUse` hook adds to a tool call: the same `uppercase` call through
//! `Executor::execute` with no hooks and with one hook running `true`, and the difference.
//!
//! Run with `cargo run --release -p agent-exec --example hook_cost [-- --json] [--quick]`. With
//! `--json` it prints one `{"name","unit","median","min","max","runs"}` object per line, which
//! `cargo xtask bench` collects as `hook.pre_tool_use_ms`; each run is one call.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::{sync::Arc, time::Instant};

use agent_core::{
    CancellationToken, Effects, ToolCall, ToolContext, ToolError, ToolOutput, Typed, TypedTool,
};
use agent_exec::{AgentBuilder, Executor, Hook, HookEvent, Hooks, PermissionMode};
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

fn executor(dir: &std::path::Path, hooks: Hooks) -> Executor {
    AgentBuilder::new(dir)
        .tool(Arc::new(Typed::new(Uppercase).unwrap()))
        .permission_mode(PermissionMode::Bypass)
        .hooks(hooks)
        .build_executor()
        .unwrap()
}

/// Milliseconds per call of `calls` calls, one figure per call.
async fn time(exec: &Executor, calls: usize) -> Vec<f64> {
    let call = ToolCall {
        call_id: "c1".to_owned(),
        name: "uppercase".to_owned(),
        arguments: r#"{"text":"hello"}"#.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    };
    let token = CancellationToken::new();
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        assert!(exec.execute(&call, &token).await.ok);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let calls = if args.iter().any(|arg| arg == "--quick") { 20 } else { 100 };
    let dir = tempfile::tempdir().unwrap();
    let plain = executor(dir.path(), Hooks::default());
    let hooked = executor(dir.path(), Hooks::new([Hook::new(HookEvent::PreToolUse, "true")]));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        time(&hooked, 5).await;
        let baseline = median(&mut time(&plain, calls).await);
        let mut added: Vec<f64> =
            time(&hooked, calls).await.into_iter().map(|ms| ms - baseline).collect();
        let value = median(&mut added);
        let (min, max) = (added[0], added[added.len() - 1]);
        if json {
            let line = serde_json::json!({"name": "hook.pre_tool_use_ms", "unit": "ms", "median": value, "min": min, "max": max, "runs": added.len()});
            println!("{line}");
        } else {
            println!(
                "hook.pre_tool_use_ms median {value:.2} ms added per call (min {min:.2}, max {max:.2}, {calls} calls): a PreToolUse hook running `true`"
            );
        }
    });
}
