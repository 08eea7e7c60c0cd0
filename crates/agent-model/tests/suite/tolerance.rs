//! Payloads from compatible servers that differ from OpenAI's, one test each.

use agent_core::{Item, Message, ModelErrorKind, ModelEvent, StopReason};
use agent_model::scripted::{Fault, Quirks, ScriptedCall, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{ALL, Api, call, client, config, failure, items, reasoning_text, run, start, user};

fn read_a(quirks: Quirks) -> Turn {
    Turn::tool_calls([ScriptedCall::new("call_1", "read_file", json!({"path": "a"}))])
        .with_quirks(quirks)
}

/// Plays `turn` through every API and mode; returns each run's events.
async fn each(turn: Turn, apis: &[(Api, bool)]) -> Vec<Vec<ModelEvent>> {
    let mut all = Vec::new();
    for &(api, stream) in apis {
        let server = start([turn.clone()]).await;
        let client = client(api, &config(&server, stream));
        all.push(
            run(client.as_ref(), &[user("go")], None)
                .await
                .unwrap_or_else(|e| panic!("{api:?} stream={stream}: {e}")),
        );
    }
    all
}

#[tokio::test]
async fn arguments_as_an_object() {
    let quirks = Quirks { arguments_as_object: true, ..Quirks::default() };
    for events in each(read_a(quirks), &ALL).await {
        assert_eq!(
            items(&events),
            [ModelEvent::ToolCall(call("call_1", "read_file", r#"{"path":"a"}"#))]
        );
    }
}

#[tokio::test]
async fn missing_type_id_object_and_created() {
    let quirks = Quirks { omit_ids: true, ..Quirks::default() };
    let chat = [(Api::Chat, true), (Api::Chat, false)];
    for events in each(read_a(quirks.clone()), &chat).await {
        // Chat calls without an id get a synthetic one, so their output can still be paired.
        let [ModelEvent::ToolCall(got)] = &items(&events)[..] else { panic!("{events:?}") };
        assert!(got.call_id.starts_with("call_synthetic_"), "{got:?}");
        assert_eq!((got.name.as_str(), got.arguments.as_str()), ("read_file", r#"{"path":"a"}"#));
        assert!(matches!(events.last(), Some(ModelEvent::Completed { response_id: None, .. })));
    }
    // The Responses API keeps `call_id` (only the item id is gone).
    let responses = [(Api::Responses, true), (Api::Responses, false)];
    for events in each(read_a(quirks), &responses).await {
        assert_eq!(
            items(&events),
            [ModelEvent::ToolCall(call("call_1", "read_file", r#"{"path":"a"}"#))]
        );
    }
}

#[tokio::test]
async fn finish_reason_empty_and_eos() {
    for reason in ["", "eos"] {
        let quirks = Quirks { finish_reason: Some(reason.into()), ..Quirks::default() };
        let turn = Turn::text("done").with_quirks(quirks);
        for events in each(turn, &[(Api::Chat, true), (Api::Chat, false)]).await {
            assert_eq!(items(&events), [ModelEvent::Message(Message::assistant("done"))]);
            assert!(
                matches!(
                    events.last(),
                    Some(ModelEvent::Completed { stop: StopReason::Completed, .. })
                ),
                "{reason:?}"
            );
        }
    }
}

#[tokio::test]
async fn unknown_output_item_type() {
    let quirks = Quirks { unknown_item: true, ..Quirks::default() };
    let mut turn = read_a(quirks);
    turn.text = Some("Found it.".into());
    for events in each(turn, &ALL).await {
        assert_eq!(
            items(&events),
            [
                ModelEvent::Message(Message::assistant("Found it.")),
                ModelEvent::ToolCall(call("call_1", "read_file", r#"{"path":"a"}"#)),
            ]
        );
    }
}

#[tokio::test]
async fn error_chunk_mid_stream() {
    let chunk = json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "code": null}});
    for api in [Api::Chat, Api::Responses] {
        let turn = Turn::text("partial answer that never ends")
            .with_fault(Fault::Chunk { events: 3, chunk: chunk.clone() });
        let server = start([turn]).await;
        let client = client(api, &config(&server, true));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::Server, "{api:?}");
        assert_eq!(
            error.message,
            "the server reported an error: The server had an error while processing your request."
        );
        assert_eq!(server.requests().len(), 1, "a broken stream is not replayed");
    }
}

#[tokio::test]
async fn ollama_error_string_body() {
    let fault = Fault::Status {
        status: 404,
        body: r#"{"error":"model \"llama9\" not found, try pulling it first"}"#.into(),
        content_type: None,
        headers: Default::default(),
    };
    for (api, stream) in ALL {
        let server = start([Turn::fault(fault.clone())]).await;
        let client = client(api, &config(&server, stream));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::ModelNotFound);
        assert_eq!(error.status, Some(404));
        assert_eq!(
            error.message,
            r#"the model was not found (http 404): model "llama9" not found, try pulling it first"#
        );
    }
}

#[tokio::test]
async fn plain_text_404() {
    let fault = Fault::Status {
        status: 404,
        body: "404 page not found".into(),
        content_type: Some("text/plain; charset=utf-8".into()),
        headers: Default::default(),
    };
    for (api, stream) in ALL {
        let server = start([Turn::fault(fault.clone())]).await;
        let client = client(api, &config(&server, stream));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!((error.kind.clone(), error.status), (ModelErrorKind::InvalidRequest, Some(404)));
        assert!(
            error.message.contains("check the base url")
                && error.message.ends_with("404 page not found"),
            "{}",
            error.message
        );
        assert_eq!(error.request_id.as_deref(), Some("req_scripted_1"));
    }
}

#[tokio::test]
async fn tool_fragments_without_index() {
    let quirks = Quirks { omit_tool_index: true, fragment_chars: 2, ..Quirks::default() };
    let turn = Turn::tool_calls([
        ScriptedCall::new("call_1", "read_file", json!({"path": "a"})),
        ScriptedCall::new("call_2", "read_file", json!({"path": "b"})),
    ])
    .with_quirks(quirks);
    for events in each(turn, &[(Api::Chat, true)]).await {
        assert_eq!(
            items(&events),
            [
                ModelEvent::ToolCall(call("call_1", "read_file", r#"{"path":"a"}"#)),
                ModelEvent::ToolCall(call("call_2", "read_file", r#"{"path":"b"}"#)),
            ]
        );
    }
}

#[tokio::test]
async fn reasoning_field_is_captured_and_replayed_under_the_same_name() {
    let quirks = Quirks { reasoning_field: true, ..Quirks::default() };
    let turn = read_a(quirks).with_reasoning("thinking");
    let server = start([turn, Turn::text("ok")]).await;
    let client = client(Api::Chat, &config(&server, true));
    let mut transcript = vec![user("go")];
    let events = run(client.as_ref(), &transcript, None).await.unwrap();
    assert_eq!(items(&events)[0], ModelEvent::Reasoning(reasoning_text("thinking")));
    for event in events {
        match event {
            ModelEvent::Reasoning(reasoning) => transcript.push(Item::Reasoning(reasoning)),
            ModelEvent::ToolCall(call) => transcript.push(Item::ToolCall(call)),
            _ => {}
        }
    }
    transcript.push(super::output("call_1", "alpha"));
    run(client.as_ref(), &transcript, None).await.unwrap();
    let assistant = &server.requests()[1].json()["messages"][2];
    assert_eq!(assistant["reasoning"], "thinking", "{assistant}");
    assert_eq!(assistant.get("reasoning_content"), None);
}
