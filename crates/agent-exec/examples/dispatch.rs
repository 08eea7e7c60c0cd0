//! Measures the executor's per-call cost: 200,000 `uppercase` calls through the full path (look
//! up, parse and validate, permission policy, run under a timeout and token, cap, outcome).
//!
//! Run with `cargo run --release -p agent-exec --no-default-features --example dispatch`.

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

fn main() {
    let dir = std::env::temp_dir();
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap();
    let policy = PermissionPolicy::new(Workspace::new(&dir).unwrap(), PermissionMode::Default);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("bench"));
    let call = ToolCall {
        call_id: "call_1".to_owned(),
        name: "uppercase".to_owned(),
        arguments: r#"{"text":"hello world"}"#.to_owned(),
        item_id: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let token = CancellationToken::new();
    runtime.block_on(async {
        // Warm up caches and the allocator.
        for _ in 0..10_000 {
            assert!(exec.execute(&call, &token).await.ok);
        }
        // The machine may be shared: report the best of five rounds.
        let mut best = u128::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            let mut bytes = 0;
            for _ in 0..CALLS {
                bytes += exec.execute(&call, &token).await.text.len();
            }
            assert_eq!(bytes, CALLS * "HELLO WORLD".len());
            best = best.min(started.elapsed().as_nanos() / CALLS as u128);
        }
        println!("{CALLS} calls, best of 5 rounds: {best} ns/call through Executor::execute");

        // The validator alone, for comparison: the part of the cost the executor does not own.
        let tool = exec.registry().get("uppercase").unwrap().clone();
        let mut best_prepare = u128::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(tool.prepare(&call.arguments).unwrap());
            }
            best_prepare = best_prepare.min(started.elapsed().as_nanos() / CALLS as u128);
        }
        println!("of which Tool::prepare (parse + validate), best of 5: {best_prepare} ns/call");

        // The executor's own share: a tool whose prepare and run do no work at all.
        let mut registry = Registry::new();
        registry.register(Arc::new(Noop(noop_spec()))).unwrap();
        let policy = PermissionPolicy::new(Workspace::new(&dir).unwrap(), PermissionMode::Default);
        let exec = Executor::new(registry, policy, ExecutorConfig::new("bench"));
        let noop = ToolCall { name: "noop".to_owned(), ..call.clone() };
        let mut best_noop = u128::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(exec.execute(&noop, &token).await);
            }
            best_noop = best_noop.min(started.elapsed().as_nanos() / CALLS as u128);
        }
        println!("executor overhead alone (no-op tool), best of 5: {best_noop} ns/call");
    });
}
