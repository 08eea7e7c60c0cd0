//! Measures the harness's own time per compaction (`compaction.ms`): a conversation at the
//! threshold of a 32k-token window (the goal and 30 turns with 3 KB outputs), compacted through
//! `Agent::compact` by a model that answers the summary request at once, so what is timed is
//! the harness: counting, shrinking, saving full outputs, the ledger, rendering the summary
//! request, and rebuilding the transcript.
//!
//! Run with `cargo run --release -p agent-exec --example compaction [-- --json] [--quick]`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Instant;

use agent_core::{
    BoxFuture, CallOutput, CancellationToken, Item, Message, ModelClient, ModelError, ModelEvent,
    ModelRequest, ModelStream, StopReason, ToolCall,
};
use agent_exec::{AgentBuilder, ExecutorConfig, agent::Conversation, compaction::ContextConfig};

/// Answers every request with a fixed summary, at once.
struct Summarizer;

impl ModelClient for Summarizer {
    fn name(&self) -> &str {
        "summarizer"
    }

    fn stream<'a>(
        &'a self,
        _request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        let events = vec![
            Ok(ModelEvent::Message(Message::assistant("The user wants the tests fixed."))),
            Ok(ModelEvent::Completed {
                response_id: None,
                model: None,
                stop: StopReason::Completed,
            }),
        ];
        Box::pin(async move {
            let stream: ModelStream<'a> = Box::pin(futures_util::stream::iter(events));
            Ok(stream)
        })
    }
}

fn conversation() -> Conversation {
    let mut items =
        vec![Item::Message(Message::user("Fix the failing tests in crates/agent-exec."))];
    let line = "test context::tests::something ... ok (the quick brown fox jumps over it)\n";
    for turn in 0..30 {
        let call_id = format!("call_{turn}");
        items.push(Item::ToolCall(ToolCall {
            call_id: call_id.clone(),
            name: "bash".to_owned(),
            arguments: format!(r#"{{"command":"cargo test --part {turn}"}}"#),
            item_id: None,
            shape: agent_core::CallShape::Function,
        }));
        items.push(Item::ToolOutput(CallOutput {
            call_id,
            output: format!("exit 0 · 1.2 s · workdir .\n{}", line.repeat(3000 / line.len())),
            ok: true,
            error: None,
            images: Vec::new(),
        }));
    }
    Conversation { items, ..Conversation::default() }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let runs = if args.iter().any(|arg| arg == "--quick") { 10 } else { 30 };
    let dir = tempfile::tempdir().unwrap();
    let mut executor = ExecutorConfig::new("bench");
    executor.session_dir = Some(dir.path().join("session"));
    let context = ContextConfig::new(agent_model::counter_for("gpt-4o"), 32_768, "configured");
    let mut agent = AgentBuilder::new(dir.path())
        .executor_config(executor)
        .context(context)
        .build(Summarizer)
        .unwrap();
    let cancel = CancellationToken::new();
    let mut times = Vec::new();
    let mut sizes = (0, 0);
    for round in 0..=runs {
        agent.set_conversation(conversation());
        let _ = std::fs::remove_dir_all(dir.path().join("session"));
        let started = Instant::now();
        let info = agent.compact(&cancel, |_| {}).await.unwrap();
        let took = started.elapsed().as_secs_f64() * 1e3;
        assert!(info.summarized && info.tokens_after < info.tokens_before);
        sizes = (info.tokens_before, info.tokens_after);
        // The first round builds the encoding's tables.
        if round > 0 {
            times.push(took);
        }
    }
    times.sort_by(f64::total_cmp);
    let (median, min, max) = (times[times.len() / 2], times[0], times[times.len() - 1]);
    if json {
        let line = serde_json::json!({"name": "compaction.ms", "unit": "ms", "median": median, "min": min, "max": max, "runs": runs});
        println!("{line}");
    } else {
        println!(
            "compaction of {} → {} tokens: {median:.2} ms (min {min:.2}, max {max:.2}, {runs} runs)",
            sizes.0, sizes.1
        );
    }
}
