//! The plan through compaction: a long session compacts at least three times, and every request
//! after a compaction carries the plan verbatim from the session's own copy, never a summary.

use std::sync::{Arc, Mutex};

use agent_core::{
    CancellationToken, CharEstimate, Effects, ToolContext, ToolError, ToolOutput, Typed, TypedTool,
};
use agent_exec::{
    AgentBuilder, ExecutorConfig, PermissionMode,
    agent::{AgentEvent, Finish},
    compaction::{ContextConfig, SUMMARY_MARKER},
    plan::PlanBook,
};
use agent_model::{
    ChatClient, ClientConfig,
    scripted::{Script, ScriptedCall, ScriptedServer, Turn},
};
use agent_tools::UpdatePlan;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Input of `print_big`.
#[derive(Deserialize, JsonSchema)]
struct Input {
    /// Which part.
    part: u32,
}

/// Prints 200 KB.
struct PrintBig;

impl TypedTool for PrintBig {
    type Input = Input;
    const NAME: &'static str = "print_big";
    fn description(&self) -> String {
        "Prints a lot.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: Input, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("part {} {}\n", input.part, "x".repeat(200_000))))
    }
}

const CHECKLIST: &str = "[x] 1. read the code\n[>] 2. fix the bug\n[ ] 3. run the tests\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_survives_three_compactions_verbatim() {
    let plan = json!([
        {"id": null, "step": "read the code", "status": "completed"},
        {"id": null, "step": "fix the bug", "status": "in_progress"},
        {"id": null, "step": "run the tests", "status": "pending"},
    ]);
    let mut turns = vec![Turn::tool_calls([ScriptedCall::new(
        "plan",
        "update_plan",
        json!({"explanation": null, "plan": plan, "ops": null}),
    )])];
    for part in 0..300 {
        let call = ScriptedCall::new(format!("p{part}"), "print_big", json!({"part": part}));
        turns.push(Turn::tool_calls([call]));
    }
    turns.push(Turn::text("done"));
    let script = Script::new(turns).with_standing(SUMMARY_MARKER, Turn::text("SUMMARY: printing."));
    let server = ScriptedServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let book = Arc::new(PlanBook::open(dir.path()));
    let mut executor = ExecutorConfig::new("plan");
    executor.session_dir = Some(dir.path().to_path_buf());
    let model = ChatClient::new(&ClientConfig::new(server.url(), "scripted")).unwrap();
    let mut agent = AgentBuilder::new(dir.path())
        .permission_mode(PermissionMode::Bypass)
        .tool(Arc::new(Typed::new(PrintBig).unwrap()))
        .tool(Arc::new(Typed::new(UpdatePlan::new(book.clone())).unwrap()))
        .pinned(book.clone())
        .executor_config(executor)
        .context(ContextConfig::new(Arc::new(CharEstimate), 32_768, "configured"))
        .max_turns(1000)
        .build(model)
        .unwrap();
    let events = Mutex::new(Vec::new());
    let finish = agent
        .prompt_with("fix it", &CancellationToken::new(), |e| events.lock().unwrap().push(e))
        .await;
    assert_eq!(finish, Finish::Answered("done".into()));
    let summarized = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compaction { info, .. } if info.summarized))
        .count();
    assert!(summarized >= 3, "only {summarized} compactions");
    assert_eq!(book.snapshot().checklist(), CHECKLIST, "the plan itself changed");
    // Every request after the first summary carries the plan, exactly as the book holds it.
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && !r.body.contains(SUMMARY_MARKER))
        .map(|r| r.body.clone())
        .collect();
    let escaped = serde_json::to_string(CHECKLIST).unwrap();
    let escaped = escaped.trim_matches('"');
    let after = bodies.iter().skip_while(|b| !b.contains("Ledger of the compacted turns"));
    let mut count = 0;
    for body in after {
        count += 1;
        assert!(body.contains("The plan (1 of 3 done; kept verbatim"), "{body:.2000}");
        assert!(body.contains(escaped), "the checklist changed: {body:.2000}");
    }
    assert!(count > 3, "{count} requests after the first compaction");
}
