//! The exact request bodies each adapter sends, captured by the scripted server.

use agent_core::{
    Continuation, Image, Item, Message, ModelClient, ModelEvent, Reasoning, ToolCall,
};
use agent_model::{
    ResponsesClient,
    scripted::{Fault, ScriptedCall, Turn},
};
use async_openai::types::{chat::CreateChatCompletionRequest, responses::CreateResponse};
use insta::assert_json_snapshot;
use serde_json::{Value, json};

/// Our request bodies must also be valid to async-openai's typed (OpenAI-canonical) structs.
#[track_caller]
fn conforms(body: &Value) {
    let result = if body.get("messages").is_some() {
        serde_json::from_value::<CreateChatCompletionRequest>(body.clone()).map(|_| ())
    } else {
        serde_json::from_value::<CreateResponse>(body.clone()).map(|_| ())
    };
    if let Err(error) = result {
        panic!("not a canonical OpenAI request ({error}): {body}");
    }
}

use super::{Api, call, client, config, output, reasoning_text, run, start, user};

/// A transcript with a finished tool round: reasoning, text and two calls, then their outputs.
fn tool_round() -> Vec<Item> {
    vec![
        user("What is in a.txt and b.txt?"),
        Item::Reasoning(reasoning_text("I should read both files.")),
        Item::Message(Message::assistant("Let me look.")),
        Item::ToolCall(call("call_a", "read_file", r#"{"path":"a.txt"}"#)),
        Item::ToolCall(call("call_b", "read_file", r#"{"path":"b.txt"}"#)),
        output("call_a", "alpha"),
        output("call_b", "beta"),
    ]
}

#[tokio::test]
async fn chat_first_turn() {
    let server = start([Turn::text("Hi.")]).await;
    let client = client(Api::Chat, &config(&server, true));
    run(client.as_ref(), &[user("Hello")], None).await.unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some(format!("Bearer {}", super::KEY).as_str()));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    conforms(&request.json());
    assert_json_snapshot!(request.json());
}

#[tokio::test]
async fn chat_tool_result_turn() {
    let server = start([Turn::text("alpha and beta")]).await;
    let client = client(Api::Chat, &config(&server, false));
    run(client.as_ref(), &tool_round(), None).await.unwrap();
    conforms(&server.requests()[0].json());
    assert_json_snapshot!(server.requests()[0].json());
}

#[tokio::test]
async fn responses_first_turn() {
    let server = start([Turn::text("Hi.")]).await;
    let client = client(Api::Responses, &config(&server, true));
    run(client.as_ref(), &[user("Hello")], None).await.unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    conforms(&request.json());
    assert_json_snapshot!(request.json());
}

/// Plays a first turn that calls two tools, answers them, and continues the stored response.
async fn continued_turn(
    client: &dyn ModelClient,
) -> (Vec<Item>, Result<Vec<ModelEvent>, agent_core::ModelError>) {
    let mut items = vec![user("What is in a.txt and b.txt?")];
    let events = run(client, &items, None).await.unwrap();
    let mut response_id = None;
    for event in events {
        match event {
            ModelEvent::ToolCall(call) => items.push(Item::ToolCall(call)),
            ModelEvent::Reasoning(reasoning) => items.push(Item::Reasoning(reasoning)),
            ModelEvent::Message(message) => items.push(Item::Message(message)),
            ModelEvent::Completed { response_id: id, .. } => response_id = id,
            _ => {}
        }
    }
    let continuation =
        Continuation { previous_response_id: response_id.unwrap(), items_known: items.len() };
    items.push(output("call_a", "alpha"));
    items.push(output("call_b", "beta"));
    let second = run(client, &items, Some(&continuation)).await;
    (items, second)
}

fn two_reads() -> Turn {
    Turn::tool_calls([
        ScriptedCall::new("call_a", "read_file", json!({"path": "a.txt"})),
        ScriptedCall::new("call_b", "read_file", json!({"path": "b.txt"})),
    ])
    .with_reasoning("I should read both files.")
}

#[tokio::test]
async fn responses_continuation_turn() {
    let server = start([two_reads(), Turn::text("alpha and beta")]).await;
    let client = client(Api::Responses, &config(&server, true));
    assert!(client.supports_continuation());
    let (_, second) = continued_turn(client.as_ref()).await;
    second.unwrap();
    let body = server.requests()[1].json();
    assert_eq!(body["previous_response_id"], "resp_scripted_1");
    conforms(&body);
    assert_json_snapshot!(body);
}

#[tokio::test]
async fn responses_stateless_turn() {
    let server = start([Turn::text("alpha and beta")]).await;
    let client = ResponsesClient::stateless(&config(&server, true)).unwrap();
    assert!(!client.supports_continuation());
    let mut items = tool_round();
    // Encrypted reasoning is replayed; reasoning without it cannot be, and is dropped.
    items.insert(
        1,
        Item::Reasoning(Reasoning {
            id: Some("rs_1".into()),
            summary: vec!["Reading both.".into()],
            encrypted_content: Some("enc_1".into()),
            text: None,
        }),
    );
    if let Item::ToolCall(ToolCall { item_id, .. }) = &mut items[4] {
        *item_id = Some("fc_1".into());
    }
    run(&client, &items, None).await.unwrap();
    conforms(&server.requests()[0].json());
    assert_json_snapshot!(server.requests()[0].json());
}

#[tokio::test]
async fn responses_falls_back_to_stateless_when_continuation_is_rejected() {
    let rejected = Fault::Status {
        status: 400,
        body: json!({"error": {"message": "Unsupported parameter: 'previous_response_id'.", "type": "invalid_request_error", "param": "previous_response_id", "code": null}}).to_string(),
        content_type: None,
        headers: Default::default(),
    };
    let server = start([
        two_reads(),
        Turn::fault(rejected),
        Turn::text("alpha and beta"),
        Turn::text("more"),
    ])
    .await;
    let client = ResponsesClient::new(&config(&server, true)).unwrap();
    let (mut items, second) = continued_turn(&client).await;
    let events = second.unwrap();
    assert!(matches!(events.last(), Some(ModelEvent::Completed { .. })));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let retried = requests[2].json();
    assert_eq!(retried["store"], false);
    assert_eq!(retried.get("previous_response_id"), None);
    // The whole transcript: user, reasoning (encrypted), two calls, two outputs.
    let kinds: Vec<_> =
        retried["input"].as_array().unwrap().iter().map(|item| item["type"].clone()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    // The fallback is remembered: the next request is stateless without trying again.
    assert!(!client.supports_continuation() && client.is_stateless());
    items.push(Item::Message(Message::user("And c.txt?")));
    let continuation =
        Continuation { previous_response_id: "resp_scripted_3".into(), items_known: 6 };
    run(&client, &items, Some(&continuation)).await.unwrap();
    let last = server.requests()[3].json();
    assert_eq!((last["store"].clone(), last.get("previous_response_id")), (json!(false), None));
}

/// An assistant message that only calls tools carries `content: ""`, which every known server
/// accepts (llama-cpp-python answers `null` and a missing key with HTTP 500).
#[tokio::test]
async fn chat_tool_only_turn() {
    let server = start([Turn::text("HELLO WORLD")]).await;
    let client = client(Api::Chat, &config(&server, false));
    let items = vec![
        user("Upper-case 'hello world'."),
        Item::ToolCall(call("call_1", "shell", r#"{"command":"echo hello world | tr a-z A-Z"}"#)),
        output("call_1", "HELLO WORLD"),
    ];
    run(client.as_ref(), &items, None).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body["messages"][2]["content"], "");
    assert_eq!(body["tool_choice"], "auto");
    conforms(&body);
    assert_json_snapshot!(body);
}

/// The `messages` text of a raw Chat body, without its closing bracket: what the next request
/// must begin with for a server's prompt cache to be hit.
fn messages_prefix(body: &str) -> &str {
    let start = body.find(r#""messages":["#).expect("a messages array");
    // Inside a JSON string a quote is escaped, so `],"` only occurs where the array ends.
    let end = start + body[start..].find(r#"],""#).expect("the end of the messages array");
    &body[..end]
}

/// Each Chat request begins with exactly the bytes of the previous request's messages, so
/// llama.cpp's KV cache and OpenAI's prompt caching are hit: nothing before the new messages is
/// reordered or rewritten from one turn to the next.
#[tokio::test]
async fn chat_requests_are_prefix_stable() {
    for stream in [true, false] {
        let server = start([
            two_reads(),
            Turn::tool_calls([ScriptedCall::new("call_c", "shell", json!({"command": "ls"}))]),
            Turn::text("alpha, beta, and a listing"),
        ])
        .await;
        let client = client(Api::Chat, &config(&server, stream));
        let mut items = vec![user("What is in a.txt and b.txt?")];
        for _ in 0..3 {
            let events = run(client.as_ref(), &items, None).await.unwrap();
            let mut calls = Vec::new();
            for event in events {
                match event {
                    ModelEvent::ToolCall(call) => {
                        calls.push(call.call_id.clone());
                        items.push(Item::ToolCall(call));
                    }
                    ModelEvent::Reasoning(reasoning) => items.push(Item::Reasoning(reasoning)),
                    ModelEvent::Message(message) => items.push(Item::Message(message)),
                    _ => {}
                }
            }
            items.extend(calls.iter().map(|id| output(id, "some output")));
        }
        let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
        assert_eq!(bodies.len(), 3);
        for pair in bodies.windows(2) {
            let before = messages_prefix(&pair[0]);
            assert!(
                pair[1].starts_with(before),
                "stream={stream}: the next request rewrote its prefix:\n{before}\n{}",
                pair[1]
            );
        }
    }
}

/// A first-turn tool choice forces the tool on the request after the user's message only; the
/// turn after the tool's output is free to answer.
#[tokio::test]
async fn first_turn_tool_choice_applies_to_the_first_turn_only() {
    let server = start([
        Turn::tool_calls([ScriptedCall::new("call_a", "read_file", json!({"path": "a.txt"}))]),
        Turn::text("alpha"),
    ])
    .await;
    let mut config = config(&server, true);
    config.first_turn_tool_choice = Some(agent_core::ToolChoice::Tool("read_file".into()));
    let client = client(Api::Chat, &config);
    let mut items = vec![user("Read a.txt.")];
    run(client.as_ref(), &items, None).await.unwrap();
    items.push(Item::ToolCall(call("call_a", "read_file", r#"{"path":"a.txt"}"#)));
    items.push(output("call_a", "alpha"));
    run(client.as_ref(), &items, None).await.unwrap();
    let choices: Vec<Value> =
        server.requests().iter().map(|request| request.json()["tool_choice"].clone()).collect();
    assert_eq!(
        choices,
        [json!({"type": "function", "function": {"name": "read_file"}}), json!("auto")]
    );
}

/// A tool output carrying an image (an MCP tool's image result).
fn image_round() -> Vec<Item> {
    let mut output =
        output("call_1", "[image saved: /s/mcp/files/call_1-0.png (image/png, 68 bytes)]");
    if let Item::ToolOutput(output) = &mut output {
        output.images.push(Image { mime_type: "image/png".into(), data: "iVBORw0KGgo=".into() });
    }
    vec![
        user("Show me the chart."),
        Item::ToolCall(call("call_1", "mcp__charts__render", "{}")),
        output,
    ]
}

/// On the Responses API an image result reaches the model as image input: the call's output is
/// a list of its text and an `input_image` with a `data:` URL.
#[tokio::test]
async fn responses_image_output_turn() {
    let server = start([Turn::text("A bar chart.")]).await;
    let client = ResponsesClient::stateless(&config(&server, true)).unwrap();
    run(&client, &image_round(), None).await.unwrap();
    let body = server.requests()[0].json();
    conforms(&body);
    assert_json_snapshot!(body["input"]);
}

/// On Chat Completions a `role: tool` message holds only text, so the images of a run of tool
/// messages follow it as one user message of `image_url` parts, after every tool message of the
/// run (each still follows the assistant message with its `tool_call_id`).
#[tokio::test]
async fn chat_image_output_turn() {
    let server = start([Turn::text("A bar chart.")]).await;
    let client = client(Api::Chat, &config(&server, false));
    let mut items = image_round();
    items.insert(2, Item::ToolCall(call("call_2", "read_file", r#"{"path":"a.txt"}"#)));
    items.push(output("call_2", "alpha"));
    run(client.as_ref(), &items, None).await.unwrap();
    let body = server.requests()[0].json();
    conforms(&body);
    assert_json_snapshot!(body["messages"]);
}

/// A model that takes no image input gets the text only, on both APIs: the text names the image,
/// and no image data is sent for the server to refuse.
#[tokio::test]
async fn no_image_input_sends_the_text_only() {
    for api in [Api::Chat, Api::Responses] {
        let server = start([Turn::text("A bar chart.")]).await;
        let mut config = config(&server, false);
        config.image_input = false;
        let client = client(api, &config);
        run(client.as_ref(), &image_round(), None).await.unwrap();
        let body = server.requests()[0].json();
        conforms(&body);
        let text = body.to_string();
        assert!(text.contains("[image saved: /s/mcp/files/call_1-0.png"), "{api:?}: {text}");
        assert!(!text.contains("iVBORw0KGgo"), "{api:?}: {text}");
    }
}
