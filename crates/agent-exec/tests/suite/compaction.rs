//! Long sessions against the scripted server: requests stay inside a 32k-token window, the loop
//! compacts several times, the goal and the ledger survive, and a server's context overflow
//! leads to one compaction and a successful retry — for Chat Completions, Responses with
//! `previous_response_id`, and stateless Responses.

use std::sync::{Arc, Mutex};

use agent_core::{
    Access, CancellationToken, CharEstimate, Effects, ModelClient, ToolContext, ToolError,
    ToolOutput, Typed, TypedTool,
};
use agent_exec::{
    AgentBuilder, ExecutorConfig, PermissionMode,
    agent::{AgentEvent, Finish},
    compaction::{CompactionInfo, CompactionReason, ContextConfig, SUMMARY_MARKER},
};
use agent_model::{
    ChatClient, ClientConfig, ResponsesClient,
    scripted::{Fault, Script, ScriptedCall, ScriptedServer, Turn},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const GOAL: &str = "GOAL-7f3a: print a megabyte many times and keep the printer fast";
const WINDOW: u64 = 32_768;

/// Input of the `print_mb` tool.
#[derive(Deserialize, JsonSchema)]
struct PrintInput {
    /// The command line.
    command: String,
}

/// Prints 1 MB the way the bash tool reports a command (`exit 0 · …` first).
struct PrintMb;

impl TypedTool for PrintMb {
    type Input = PrintInput;
    const NAME: &'static str = "print_mb";
    fn description(&self) -> String {
        "Runs a command that prints a megabyte.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::default()
    }
    fn access(&self, input: &PrintInput) -> Vec<Access> {
        vec![Access::command(input.command.clone())]
    }
    async fn run(&self, input: PrintInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let line = format!("{} the quick brown fox jumps over the lazy dog\n", input.command);
        Ok(ToolOutput::text(format!(
            "exit 0 · 0.1 s · workdir .\n{}",
            line.repeat((1 << 20) / line.len())
        )))
    }
}

#[derive(Clone, Copy, Debug)]
enum Api {
    Chat,
    ResponsesPrev,
    ResponsesStateless,
}

fn model(api: Api, server: &ScriptedServer) -> Box<dyn ModelClient> {
    let config = ClientConfig::new(server.url(), "scripted");
    match api {
        Api::Chat => Box::new(ChatClient::new(&config).unwrap()),
        Api::ResponsesPrev => Box::new(ResponsesClient::new(&config).unwrap()),
        Api::ResponsesStateless => Box::new(ResponsesClient::stateless(&config).unwrap()),
    }
}

/// Runs `GOAL` against `turns` with a 32k window; the events and the server.
async fn session(
    api: Api,
    turns: Vec<Turn>,
    session_dir: &std::path::Path,
) -> (Finish, Vec<AgentEvent>, ScriptedServer) {
    let script = Script::new(turns)
        .with_standing(SUMMARY_MARKER, Turn::text("SUMMARY: the user wants megabytes printed."));
    let server = ScriptedServer::start(script).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut executor = ExecutorConfig::new("long");
    executor.session_dir = Some(session_dir.to_path_buf());
    let mut agent = AgentBuilder::new(workspace.path())
        .permission_mode(PermissionMode::Bypass)
        .tool(Arc::new(Typed::new(PrintMb).unwrap()))
        .executor_config(executor)
        .context(ContextConfig::new(Arc::new(CharEstimate), WINDOW, "configured"))
        .max_turns(1000)
        .build_boxed(model(api, &server))
        .unwrap();
    let events = Mutex::new(Vec::new());
    let finish = agent
        .prompt_with(GOAL, &CancellationToken::new(), |event| events.lock().unwrap().push(event))
        .await;
    (finish, events.into_inner().unwrap(), server)
}

fn compactions(events: &[AgentEvent]) -> Vec<CompactionInfo> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Compaction { info, .. } => Some(info.clone()),
            _ => None,
        })
        .collect()
}

fn print_turns(count: usize) -> Vec<Turn> {
    (0..count)
        .map(|i| {
            Turn::tool_calls([ScriptedCall::new(
                format!("call_{i}"),
                "print_mb",
                json!({"command": format!("print --part {i}")}),
            )])
        })
        .collect()
}

async fn check_long_session(api: Api) {
    let dir = tempfile::tempdir().unwrap();
    let mut turns = print_turns(300);
    turns.push(Turn::text("done"));
    let (finish, events, server) = session(api, turns, dir.path()).await;
    assert_eq!(finish, Finish::Answered("done".to_owned()));

    // The loop's own count of every request (the whole conversation, also when only new items
    // go on the wire) stays under the threshold, hence under the window.
    let counted: Vec<usize> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Request { estimated_input_tokens, .. } => Some(*estimated_input_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(counted.len(), 301);
    assert!(counted.iter().all(|&tokens| tokens <= (WINDOW as usize) * 8 / 10), "{counted:?}");
    let infos = compactions(&events);
    assert!(infos.iter().filter(|info| info.summarized).count() >= 3, "{infos:#?}");
    assert!(infos.iter().all(|info| info.tokens_after < info.tokens_before), "{infos:#?}");

    // What went on the wire: no body is over the window even at four characters a token, the
    // summary requests were answered, and the final turn's context holds the goal and the
    // ledger.
    let requests: Vec<Value> =
        server.requests().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    let (summaries, turns): (Vec<&Value>, Vec<&Value>) =
        requests.iter().partition(|body| body.to_string().contains(SUMMARY_MARKER));
    assert_eq!(summaries.len(), infos.iter().filter(|info| info.summarized).count());
    assert_eq!(turns.len(), 301);
    for body in &requests {
        let chars = body.to_string().chars().count();
        assert!(chars / 4 <= WINDOW as usize, "a request of {chars} characters");
    }
    // With previous_response_id the server holds the chain: the final turn's context is the
    // chain's first request (sent whole after the last compaction) and what followed it.
    let root = match api {
        Api::ResponsesPrev => {
            let root =
                turns.iter().rposition(|body| body["previous_response_id"].is_null()).unwrap();
            assert!(root > 0, "the chain restarted after a compaction");
            assert!(turns[root + 1..].iter().all(|body| body["previous_response_id"].is_string()));
            turns[root]
        }
        Api::Chat | Api::ResponsesStateless => {
            assert!(turns.iter().all(|body| body["previous_response_id"].is_null()));
            turns[300]
        }
    };
    let text = root.to_string();
    assert!(text.contains(GOAL), "the goal survived");
    assert!(text.contains("Ledger of the compacted turns"), "{text:.3000}");
    assert_eq!(
        text.matches("Ledger of the compacted turns").count(),
        1,
        "one summary replaces the last"
    );
    assert!(text.contains("SUMMARY: the user wants megabytes printed."));
    assert!(
        text.contains("`print --part 0` → exit 0") || text.contains("not listed"),
        "{text:.3000}"
    );
    let saved = dir.path().join("outputs/call_0.txt");
    assert!(std::fs::metadata(&saved).unwrap().len() >= 1 << 20, "the full output is on disk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_chat_session_stays_inside_the_window() {
    check_long_session(Api::Chat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_responses_session_with_previous_response_id_stays_inside_the_window() {
    check_long_session(Api::ResponsesPrev).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_stateless_responses_session_stays_inside_the_window() {
    check_long_session(Api::ResponsesStateless).await;
}

fn overflow() -> Turn {
    let body = json!({"error": {
        "message": "This model's maximum context length is 32768 tokens. However, your messages resulted in 40000 tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded"
    }});
    Turn::fault(Fault::Status {
        status: 400,
        body: body.to_string(),
        content_type: None,
        headers: Default::default(),
    })
}

async fn check_overflow(api: Api) {
    let dir = tempfile::tempdir().unwrap();
    let mut turns = print_turns(4);
    turns.push(overflow());
    turns.push(Turn::text("done"));
    let (finish, events, server) = session(api, turns, dir.path()).await;
    assert_eq!(finish, Finish::Answered("done".to_owned()));
    let infos = compactions(&events);
    assert_eq!(infos.len(), 1, "{infos:#?}");
    assert_eq!(infos[0].reason, CompactionReason::Overflow);
    assert!(infos[0].summarized && infos[0].turns_dropped > 0, "{infos:#?}");
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    // Four tool turns, the refused request, the summary, the retry.
    assert_eq!(bodies.len(), 7);
    assert!(bodies[5].contains(SUMMARY_MARKER));
    assert!(bodies[6].contains(GOAL) && bodies[6].contains("Ledger of the compacted turns"));
    let retry: Value = serde_json::from_str(&bodies[6]).unwrap();
    assert!(retry["previous_response_id"].is_null(), "the retry starts a new chain");
    if let Api::Chat = api {
        assert!(bodies[6].len() < bodies[4].len(), "the retry is smaller than the refused request");
    }
}

#[tokio::test]
async fn a_context_overflow_compacts_once_and_retries_chat() {
    check_overflow(Api::Chat).await;
}

#[tokio::test]
async fn a_context_overflow_compacts_once_and_retries_responses() {
    check_overflow(Api::ResponsesPrev).await;
}

#[tokio::test]
async fn a_second_overflow_in_a_row_is_the_models_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut turns = print_turns(4);
    turns.extend([overflow(), overflow(), Turn::text("never")]);
    let (finish, events, _server) = session(Api::Chat, turns, dir.path()).await;
    assert!(
        matches!(finish, Finish::ModelError(ref err) if err.kind == agent_core::ModelErrorKind::ContextTooLong),
        "{finish:?}"
    );
    assert_eq!(compactions(&events).len(), 1);
}

/// The one request the scripted server refused as too long, and the one after it.
fn refused_and_retry(server: &ScriptedServer, refused_at: usize) -> (String, String) {
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    (bodies[refused_at].clone(), bodies[refused_at + 1].clone())
}

#[tokio::test]
async fn an_overflow_with_two_large_outputs_in_the_current_turn_retries_at_a_quarter_of_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let both = Turn::tool_calls([
        ScriptedCall::new("call_a", "print_mb", json!({"command": "print a"})),
        ScriptedCall::new("call_b", "print_mb", json!({"command": "print b"})),
    ]);
    let turns = vec![both, overflow(), Turn::text("done")];
    let (finish, events, server) = session(Api::Chat, turns, dir.path()).await;
    assert_eq!(finish, Finish::Answered("done".to_owned()));
    let infos = compactions(&events);
    assert_eq!(infos.len(), 1, "{infos:#?}");
    assert_eq!((infos[0].reason, infos[0].outputs_shrunk), (CompactionReason::Overflow, 2));
    // No turn could be dropped (there is only the current one); its outputs shrank instead.
    assert_eq!(infos[0].turns_dropped, 0, "{infos:#?}");
    let (refused, retry) = refused_and_retry(&server, 1);
    assert!(
        retry.len() * 4 <= refused.len(),
        "retry {} bytes, refused {}",
        retry.len(),
        refused.len()
    );
    // The retry still says what the calls were and where their whole outputs are.
    assert!(
        retry.contains("output shrunk by compaction") && retry.contains("call_b.txt"),
        "{retry}"
    );
    assert!(std::fs::metadata(dir.path().join("outputs/call_b.txt")).unwrap().len() > 10_000);
}

#[tokio::test]
async fn an_overflow_keeps_the_newest_output_whole_where_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    // One large output and one small, newest; shrinking the large one is enough.
    let both = Turn::tool_calls([
        ScriptedCall::new("call_a", "print_mb", json!({"command": "print a"})),
        ScriptedCall::new("call_b", "missing_tool", json!({})),
    ]);
    let turns = vec![both, overflow(), Turn::text("done")];
    let (finish, _events, server) = session(Api::Chat, turns, dir.path()).await;
    assert_eq!(finish, Finish::Answered("done".to_owned()));
    let (refused, retry) = refused_and_retry(&server, 1);
    assert!(
        retry.len() * 4 <= refused.len(),
        "retry {} bytes, refused {}",
        retry.len(),
        refused.len()
    );
    let retry: Value = serde_json::from_str(&retry).unwrap();
    let outputs: Vec<&str> = retry["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(outputs[0].contains("output shrunk by compaction"), "{outputs:?}");
    assert!(!outputs[1].contains("output shrunk by compaction"), "{outputs:?}");
}

#[tokio::test]
async fn a_prompt_larger_than_the_window_is_refused_before_it_is_sent() {
    let script = Script::new([Turn::text("never")]);
    let server = ScriptedServer::start(script).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut agent = AgentBuilder::new(workspace.path())
        .context(ContextConfig::new(Arc::new(CharEstimate), WINDOW, "configured"))
        .build_boxed(model(Api::Chat, &server))
        .unwrap();
    // 50,000 tokens at four characters a token.
    let prompt = "word ".repeat(40_000);
    let finish = agent.prompt_with(&prompt, &CancellationToken::new(), |_| {}).await;
    let Finish::ModelError(err) = finish else { panic!("{finish:?}") };
    assert_eq!(err.kind, agent_core::ModelErrorKind::ContextTooLong);
    assert!(err.message.starts_with("the prompt alone is 50000 tokens"), "{}", err.message);
    assert!(err.message.contains("the window is 32768"), "{}", err.message);
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn refused_oversized_arguments_are_replaced_by_a_note_and_never_resent() {
    let dir = tempfile::tempdir().unwrap();
    // 200,000 characters of arguments the tool refuses (`command` is missing): more than the
    // whole window.
    let huge = "x".repeat(200_000);
    let refused = Turn::tool_calls([ScriptedCall::new("call_0", "print_mb", json!({"cmd": huge}))]);
    let turns = vec![refused, Turn::text("done")];
    let (finish, events, server) = session(Api::Chat, turns, dir.path()).await;
    assert_eq!(finish, Finish::Answered("done".to_owned()));
    let infos = compactions(&events);
    assert_eq!(infos.len(), 1, "{infos:#?}");
    assert_eq!(infos[0].arguments_shrunk, 1, "{infos:#?}");
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    assert!(!bodies[1].contains(&"x".repeat(1000)), "the arguments were sent again");
    assert!(
        bodies[1].contains("arguments shrunk by compaction: 200010 characters left out"),
        "{:.3000}",
        bodies[1]
    );
    // The model still reads why the call failed.
    assert!(bodies[1].contains("invalid_arguments"), "{:.2000}", bodies[1]);
}

#[tokio::test]
async fn an_overflow_with_nothing_to_shrink_ends_the_run_saying_why_instead_of_resending() {
    let dir = tempfile::tempdir().unwrap();
    let (finish, events, server) =
        session(Api::Chat, vec![overflow(), Turn::text("never")], dir.path()).await;
    let Finish::ModelError(err) = finish else { panic!("{finish:?}") };
    assert_eq!(err.kind, agent_core::ModelErrorKind::ContextTooLong);
    assert!(err.message.contains("compaction found nothing to shrink"), "{}", err.message);
    assert!(compactions(&events).is_empty(), "a compaction that changed nothing is not recorded");
    assert_eq!(server.requests().len(), 1, "the refused request was not sent again");
}
