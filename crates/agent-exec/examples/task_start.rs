//! `task.start_ms`: from a `task` call entering the executor to the child's first model request,
//! with a model that answers at once, so the figure is the harness's share alone (definition
//! look-up, the narrowed executor, the child's transcript, the loop's first request).
//!
//! `cargo run --release -p agent-exec --example task_start [-- --json] [--quick]`

// A benchmark prints its figure; its setup may fail loudly.
#![allow(clippy::print_stdout)]

use std::{
    sync::{Arc, Mutex},
    time::Instant,
};

use agent_core::{
    BoxFuture, CallShape, CancellationToken, Message, ModelClient, ModelError, ModelEvent,
    ModelRequest, ModelStream, StopReason, ToolCall, Typed,
};
use agent_exec::{
    AgentBuilder, ExecutorConfig, PermissionMode,
    child::{ChildStart, Children, ChildrenConfig, ModelSource},
};
use agent_tools::{BuiltinConfig, BuiltinTools, Task};

/// Records when each request arrives and answers with one message.
#[derive(Clone, Default)]
struct Stamp(Arc<Mutex<Vec<Instant>>>);

impl ModelClient for Stamp {
    fn name(&self) -> &str {
        "stamp"
    }
    fn stream<'a>(
        &'a self,
        _request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(Instant::now());
        }
        let events = vec![
            Ok(ModelEvent::Message(Message::assistant("done"))),
            Ok(ModelEvent::Completed {
                response_id: None,
                model: None,
                stop: StopReason::Completed,
            }),
        ];
        Box::pin(async move { Ok(Box::pin(futures_util::stream::iter(events)) as ModelStream<'a>) })
    }
}

impl ModelSource for Stamp {
    fn model(&self, _start: &ChildStart<'_>) -> Option<Box<dyn ModelClient>> {
        Some(Box::new(self.clone()))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let runs = if args.iter().any(|a| a == "--quick") { 50 } else { 300 };
    let dir = tempfile::tempdir()?;
    let stamp = Stamp::default();
    let mut config = ChildrenConfig::default();
    config.limits.session_tokens = u64::MAX;
    config.session_dir = Some(dir.path().to_path_buf());
    let children = Children::new(Arc::new(stamp.clone()), config);
    let mut executor = ExecutorConfig::new("bench");
    executor.session_dir = Some(dir.path().to_path_buf());
    let parent = AgentBuilder::new(dir.path())
        .builtin_tools(&BuiltinConfig::default())?
        .tool(Arc::new(Typed::new(Task::new(children.clone()))?))
        .permission_mode(PermissionMode::DontAsk)
        .executor_config(executor)
        .build_executor()?;
    children.attach(&parent, "");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let mut times: Vec<f64> = Vec::with_capacity(runs);
    for index in 0..runs + 5 {
        let call = ToolCall {
            call_id: format!("t{index}"),
            name: "task".into(),
            arguments: r#"{"description":"b","prompt":"look","agent":"explore"}"#.into(),
            item_id: None,
            shape: CallShape::Function,
        };
        let started = Instant::now();
        let outcome = runtime.block_on(parent.execute(&call, &CancellationToken::new()));
        assert!(outcome.ok, "{}", outcome.text);
        let first = stamp.0.lock().map(|seen| seen.last().copied()).ok().flatten();
        if index >= 5
            && let Some(first) = first
        {
            times.push(first.duration_since(started).as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let (min, max) = (times[0], times[times.len() - 1]);
    if json {
        let line = serde_json::json!({"name": "task.start_ms", "unit": "ms", "median": median, "min": min, "max": max, "runs": times.len()});
        println!("{line}");
    } else {
        println!(
            "task.start_ms median {median:.3} ms (min {min:.3}, max {max:.3}, {} runs)",
            times.len()
        );
    }
    Ok(())
}
