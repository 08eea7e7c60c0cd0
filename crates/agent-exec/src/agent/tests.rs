//! Tests of the agent loop with an in-process scripted model and small test tools.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use agent_core::{
    BoxFuture, CancellationToken, Continuation, Effects, Item, Message, ModelClient, ModelError,
    ModelErrorKind, ModelEvent, ModelRequest, ModelStream, StopReason, ToolCall, ToolContext,
    ToolError, ToolErrorKind, ToolOutput, Typed, TypedTool,
};
use futures_util::StreamExt as _;
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::Deserialize;

use super::*;
use crate::{ExecutorConfig, PermissionMode, PermissionPolicy, Registry, Workspace};

type Turn = Vec<Result<ModelEvent, ModelError>>;

/// A model that plays back scripted turns and records what each request carried.
struct ScriptedModel {
    turns: Mutex<VecDeque<Turn>>,
    seen: Mutex<Vec<(usize, Option<Continuation>)>>,
    continuation: bool,
}

impl ScriptedModel {
    fn new(continuation: bool, turns: Vec<Turn>) -> Self {
        Self { turns: Mutex::new(turns.into()), seen: Mutex::default(), continuation }
    }

    fn seen(&self) -> Vec<(usize, Option<Continuation>)> {
        self.seen.lock().unwrap().clone()
    }
}

impl ModelClient for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn supports_continuation(&self) -> bool {
        self.continuation
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        self.seen.lock().unwrap().push((request.items.len(), request.continuation.cloned()));
        let turn = self.turns.lock().unwrap().pop_front().unwrap_or_default();
        Box::pin(async move {
            let stream: ModelStream<'a> = Box::pin(futures_util::stream::iter(turn));
            Ok(stream)
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// What to do.
    text: String,
}

/// `echo` returns its text, `fail` always fails, `hang` waits until cancelled.
struct TestTool(&'static str);

impl TypedTool for TestTool {
    type Input = Input;
    const NAME: &'static str = "test";
    fn description(&self) -> String {
        "test tool".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: Input, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match self.0 {
            "fail" => Err(ToolError::new(ToolErrorKind::NotFound, "no such thing")),
            "hang" => {
                ctx.cancel.cancelled().await;
                Err(ToolError::new(ToolErrorKind::Cancelled, "stopped"))
            }
            _ => Ok(ToolOutput::text(input.text)),
        }
    }
}

fn executor(behaviour: &'static str, dir: &std::path::Path) -> Executor {
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(TestTool(behaviour)).unwrap())).unwrap();
    let policy = PermissionPolicy::new(Workspace::new(dir).unwrap(), PermissionMode::Bypass);
    Executor::new(registry, policy, ExecutorConfig::new("session"))
}

fn call(id: &str, text: &str) -> Result<ModelEvent, ModelError> {
    Ok(ModelEvent::ToolCall(ToolCall {
        call_id: id.to_owned(),
        name: "test".to_owned(),
        arguments: format!(r#"{{"text":"{text}"}}"#),
        item_id: None,
        shape: agent_core::CallShape::Function,
    }))
}

fn answer(text: &str) -> Result<ModelEvent, ModelError> {
    Ok(ModelEvent::Message(Message::assistant(text)))
}

fn done(id: &str) -> Result<ModelEvent, ModelError> {
    Ok(ModelEvent::Completed {
        response_id: Some(id.to_owned()),
        model: None,
        stop: StopReason::Completed,
    })
}

struct Run {
    finish: Finish,
    conversation: Conversation,
    events: Vec<AgentEvent>,
}

async fn check_run(model: &ScriptedModel, behaviour: &'static str, max_turns: usize) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let executor = executor(behaviour, dir.path());
    let mut config = AgentConfig::new("be brief");
    config.max_turns = max_turns;
    let mut conversation = Conversation::default();
    conversation.items.push(Item::Message(Message::user("go")));
    let mut events = Vec::new();
    let cancel = CancellationToken::new();
    let finish =
        run(model, &executor, &config, &mut conversation, &cancel, &mut |e| events.push(e)).await;
    Run { finish, conversation, events }
}

fn outputs(conversation: &Conversation) -> Vec<(String, bool, String)> {
    conversation
        .items
        .iter()
        .filter_map(|item| match item {
            Item::ToolOutput(out) => Some((out.call_id.clone(), out.ok, out.output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_answer_without_tools_ends_the_run() {
    let model = ScriptedModel::new(false, vec![vec![answer("hello"), done("r1")]]);
    let run = check_run(&model, "echo", 5).await;
    assert_eq!(run.finish, Finish::Answered("hello".to_owned()));
    assert_eq!(run.conversation.items.len(), 2);
    assert_eq!(
        run.events.last(),
        Some(&AgentEvent::Finished {
            reason: FinishReason::Answered,
            text: Some("hello".to_owned())
        })
    );
}

#[tokio::test]
async fn tool_outputs_are_paired_and_continuation_sends_only_new_items() {
    let model = ScriptedModel::new(
        true,
        vec![vec![call("c1", "a"), call("c2", "b"), done("r1")], vec![answer("ok"), done("r2")]],
    );
    let run = check_run(&model, "echo", 5).await;
    assert_eq!(run.finish, Finish::Answered("ok".to_owned()));
    assert_eq!(
        outputs(&run.conversation),
        vec![("c1".to_owned(), true, "a".to_owned()), ("c2".to_owned(), true, "b".to_owned())]
    );
    // The second request continues r1, which already holds the user message and both calls.
    let continuation = Continuation { previous_response_id: "r1".to_owned(), items_known: 3 };
    assert_eq!(model.seen(), vec![(1, None), (5, Some(continuation))]);
}

#[tokio::test]
async fn a_model_without_continuation_never_gets_one() {
    let model = ScriptedModel::new(
        false,
        vec![vec![call("c1", "a"), done("r1")], vec![answer("ok"), done("r2")]],
    );
    check_run(&model, "echo", 5).await;
    assert_eq!(model.seen(), vec![(1, None), (3, None)]);
}

#[tokio::test]
async fn the_turn_limit_is_reported_and_every_call_has_an_output() {
    let turns = (0..3).map(|i| vec![call(&format!("c{i}"), "x"), done("r")]).collect();
    let model = ScriptedModel::new(false, turns);
    let run = check_run(&model, "echo", 3).await;
    assert_eq!(run.finish, Finish::MaxTurns(3));
    assert_eq!(outputs(&run.conversation).len(), 3);
    assert!(
        run.events.contains(&AgentEvent::Finished { reason: FinishReason::MaxTurns, text: None })
    );
}

#[tokio::test]
async fn a_stream_that_breaks_drops_its_partial_turn() {
    let broken = ModelError::new(ModelErrorKind::Network, "connection reset");
    let model = ScriptedModel::new(
        false,
        vec![vec![call("c1", "a"), done("r1")], vec![call("c2", "b"), Err(broken.clone())]],
    );
    let run = check_run(&model, "echo", 5).await;
    assert_eq!(run.finish, Finish::ModelError(broken));
    // The user message, the first call and its output remain; the half turn with c2 is gone.
    assert_eq!(run.conversation.items.len(), 3);
    assert_eq!(outputs(&run.conversation), vec![("c1".to_owned(), true, "a".to_owned())]);
}

#[tokio::test]
async fn a_stream_without_completion_is_an_error_not_an_empty_answer() {
    let model = ScriptedModel::new(false, vec![vec![answer("partial")]]);
    let run = check_run(&model, "echo", 5).await;
    assert!(
        matches!(run.finish, Finish::ModelError(ref e) if e.kind == ModelErrorKind::BadResponse)
    );
    assert_eq!(run.conversation.items.len(), 1);
}

#[tokio::test]
async fn the_third_identical_failure_gets_a_harness_note() {
    let turns = (0..3).map(|i| vec![call(&format!("c{i}"), "same"), done("r")]).collect();
    let model = ScriptedModel::new(false, turns);
    let run = check_run(&model, "fail", 3).await;
    let notes: Vec<bool> =
        outputs(&run.conversation).iter().map(|(_, _, text)| text.contains("[harness]")).collect();
    assert_eq!(notes, vec![false, false, true]);
}

#[tokio::test]
async fn a_different_failure_resets_the_repeat_count() {
    let texts = ["same", "same", "other", "same", "same", "same"];
    let turns = texts.iter().enumerate().map(|(i, t)| vec![call(&format!("c{i}"), t), done("r")]);
    let model = ScriptedModel::new(false, turns.collect());
    let run = check_run(&model, "fail", texts.len()).await;
    let notes: Vec<bool> =
        outputs(&run.conversation).iter().map(|(_, _, text)| text.contains("[harness]")).collect();
    // `other` breaks the run of identical failures: the count starts again after it.
    assert_eq!(notes, vec![false, false, false, false, false, true]);
}

/// A model whose one turn streams `events` and then stalls, as a slow provider does mid-answer.
struct StallingModel(Mutex<Option<Turn>>);

impl ModelClient for StallingModel {
    fn name(&self) -> &str {
        "stalling"
    }

    fn supports_continuation(&self) -> bool {
        false
    }

    fn stream<'a>(
        &'a self,
        _request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelStream<'a>, ModelError>> {
        let turn = self.0.lock().unwrap().take().unwrap_or_default();
        Box::pin(async move {
            let stream = futures_util::stream::iter(turn).chain(futures_util::stream::pending());
            let stream: ModelStream<'a> = Box::pin(stream);
            Ok(stream)
        })
    }
}

#[tokio::test]
async fn cancelling_while_the_model_streams_drops_the_partial_turn() {
    let partial = vec![
        Ok(ModelEvent::TextDelta("Let me look".to_owned())),
        call("c1", "a"),
        Ok(ModelEvent::TextDelta(" at that".to_owned())),
    ];
    let model = StallingModel(Mutex::new(Some(partial)));
    let dir = tempfile::tempdir().unwrap();
    let executor = executor("echo", dir.path());
    let config = AgentConfig::new("be brief");
    let mut conversation = Conversation::default();
    conversation.items.push(Item::Message(Message::user("go")));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let mut events = Vec::new();
    // Ctrl-C arrives once the answer has started to stream; the stream itself never ends.
    let mut on_event = |event: AgentEvent| {
        if matches!(event, AgentEvent::TextDelta { .. }) {
            trigger.cancel();
        }
        events.push(event);
    };
    let finish = run(&model, &executor, &config, &mut conversation, &cancel, &mut on_event).await;
    assert_eq!(finish, Finish::Cancelled);
    // Only the user's message is left: no half message, no call without its output.
    assert_eq!(conversation.items, vec![Item::Message(Message::user("go"))]);
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ToolCallStarted { .. })), "{events:?}");
    assert_eq!(
        events.last(),
        Some(&AgentEvent::Finished { reason: FinishReason::Cancelled, text: None })
    );
}

#[tokio::test]
async fn cancelling_during_a_tool_call_still_answers_it() {
    let model = ScriptedModel::new(false, vec![vec![call("c1", "a"), done("r1")]]);
    let dir = tempfile::tempdir().unwrap();
    let executor = executor("hang", dir.path());
    let config = AgentConfig::new("be brief");
    let mut conversation = Conversation::default();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let finish = run(&model, &executor, &config, &mut conversation, &cancel, &mut |_| {}).await;
    assert_eq!(finish, Finish::Cancelled);
    let outputs = outputs(&conversation);
    assert_eq!(outputs.len(), 1);
    assert!(outputs[0].2.contains(r#""error":"cancelled""#), "{}", outputs[0].2);
}

#[tokio::test]
async fn every_appended_item_is_reported_once_in_order() {
    let model = ScriptedModel::new(
        false,
        vec![vec![call("c1", "a"), done("r1")], vec![answer("ok"), done("r2")]],
    );
    let run = check_run(&model, "echo", 5).await;
    let reported: Vec<Item> = run
        .events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ItemAdded { item } => Some(item.clone()),
            _ => None,
        })
        .collect();
    // Everything after the user's message, which the caller appended itself.
    assert_eq!(reported, run.conversation.items[1..]);
}

/// Background work that finished once, after the first tool call ran.
#[derive(Debug, Default)]
struct OneNotice(Mutex<Vec<String>>);

impl crate::Background for OneNotice {
    fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    fn running(&self) -> Vec<String> {
        Vec::new()
    }
}

#[tokio::test]
async fn a_background_notice_reaches_the_next_request_once() {
    let dir = tempfile::tempdir().unwrap();
    let background = Arc::new(OneNotice::default());
    let executor = executor("echo", dir.path()).with_background(background.clone());
    let model = ScriptedModel::new(
        false,
        vec![
            vec![call("c1", "a"), done("r1")],
            vec![call("c2", "b"), done("r2")],
            vec![answer("done"), done("r3")],
        ],
    );
    let config = AgentConfig::new("be brief");
    let mut conversation = Conversation::default();
    conversation.items.push(Item::Message(Message::user("go")));
    let cancel = CancellationToken::new();
    // A job ended before the run started: its notice is pending.
    background.0.lock().unwrap().push("[job 1 finished: exit 0]".to_owned());
    let finish = run(&model, &executor, &config, &mut conversation, &cancel, &mut |_| {}).await;
    assert_eq!(finish, Finish::Answered("done".to_owned()));
    let notices: Vec<usize> = conversation
        .items
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, Item::Message(m) if m.content.starts_with("[job 1")))
        .map(|(index, _)| index)
        .collect();
    // Before the first request (it was pending already), and only once.
    assert_eq!(notices, [1], "{:#?}", conversation.items);
    // The first request carried the user's message and the notice.
    assert_eq!(model.seen()[0].0, 2);
}
