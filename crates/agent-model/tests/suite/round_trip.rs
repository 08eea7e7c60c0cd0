//! Complete answers through both APIs, streamed and whole: what the loop appends is the same.

use agent_core::{Message, ModelEvent, StopReason};
use agent_model::scripted::{Quirks, ScriptedCall, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{ALL, call, client, config, items, reasoning_text, run, start, text_deltas, user};

/// Plays `turn` through every API and mode and checks the complete items and the last event.
async fn check(turn: Turn, expect: Vec<ModelEvent>) {
    for (api, stream) in ALL {
        let server = start([turn.clone()]).await;
        let client = client(api, &config(&server, stream));
        let events = run(client.as_ref(), &[user("go")], None).await.unwrap();
        assert_eq!(items(&events), expect, "{api:?} stream={stream}");
        match events.last() {
            Some(ModelEvent::Completed {
                stop: StopReason::Completed,
                response_id: Some(_),
                model: Some(_),
            }) => {}
            other => panic!("{api:?} stream={stream}: last event {other:?}"),
        }
        assert!(
            events
                .iter()
                .any(|event| matches!(event, ModelEvent::Usage(usage) if usage.input_tokens == 42))
        );
        if let Some(text) = &turn.text {
            assert_eq!(&text_deltas(&events), text, "{api:?} stream={stream}");
        }
        assert_eq!(server.requests().len(), 1);
    }
}

fn two_calls() -> Vec<ScriptedCall> {
    vec![
        ScriptedCall::new("call_1", "read_file", json!({"path": "src/main.rs"})),
        ScriptedCall::new(
            "call_2",
            "shell",
            json!({"command": "cargo test --workspace -- --nocapture"}),
        ),
    ]
}

fn expected_calls() -> Vec<ModelEvent> {
    vec![
        ModelEvent::ToolCall(call("call_1", "read_file", r#"{"path":"src/main.rs"}"#)),
        ModelEvent::ToolCall(call(
            "call_2",
            "shell",
            r#"{"command":"cargo test --workspace -- --nocapture"}"#,
        )),
    ]
}

#[tokio::test]
async fn two_parallel_tool_calls() {
    check(Turn::tool_calls(two_calls()), expected_calls()).await;
}

#[tokio::test]
async fn reasoning_item_before_a_call() {
    let turn = Turn::tool_calls([ScriptedCall::new("call_9", "read_file", json!({"path": "a"}))])
        .with_reasoning("The user wants a; reading it first.");
    let expect = vec![
        ModelEvent::Reasoning(reasoning_text("The user wants a; reading it first.")),
        ModelEvent::ToolCall(call("call_9", "read_file", r#"{"path":"a"}"#)),
    ];
    check(turn, expect).await;
}

#[tokio::test]
async fn interleaved_argument_fragments() {
    let quirks = Quirks { interleave_arguments: true, fragment_chars: 3, ..Quirks::default() };
    check(Turn::tool_calls(two_calls()).with_quirks(quirks), expected_calls()).await;
}

#[tokio::test]
async fn text_answer() {
    let text = "The answer is 42.\nUnicode survives fragmenting: héllo wörld ✓.";
    check(Turn::text(text), vec![ModelEvent::Message(Message::assistant(text))]).await;
}

#[tokio::test]
async fn text_and_calls_keep_their_order() {
    let mut turn = Turn::tool_calls(two_calls());
    turn.text = Some("Checking.".into());
    let mut expect = vec![ModelEvent::Message(Message::assistant("Checking."))];
    expect.extend(expected_calls());
    check(turn, expect).await;
}
