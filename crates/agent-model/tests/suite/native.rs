//! Custom tools and the Responses built-ins (`apply_patch`, `shell`), streamed and whole: the
//! tools each API is offered, the calls the model makes, and the items that answer them.

use agent_core::{
    BuiltinTool, CallOutput, CallShape, Continuation, Effects, GrammarSyntax, Item, ModelClient,
    ModelEvent, ModelRequest, TextInput, ToolCall, ToolChoice, ToolShape, ToolSpec,
};
use agent_model::scripted::{Fault, ScriptedCall, Turn};
use futures_util::StreamExt;
use insta::assert_json_snapshot;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Api, client, config, start, user};

const PATCH: &str = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch";

fn spec(name: &str, shape: ToolShape, text_input: Option<TextInput>) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({
            "type": "object",
            "properties": {"input": {"type": "string"}},
            "required": ["input"],
            "additionalProperties": false
        }),
        strict: true,
        aliases: Vec::new(),
        effects: Effects::WRITES_FILES,
        rule_name: name.into(),
        text_input,
        shape,
    }
}

/// A freeform tool with a Lark grammar, one with a regex, one with plain text, and the two
/// built-ins.
fn tools() -> Vec<ToolSpec> {
    vec![
        spec(
            "patch_text",
            ToolShape::Freeform,
            Some(TextInput::grammar(
                "input",
                GrammarSyntax::Lark,
                "start: \"*** Begin Patch\" /.+/s",
            )),
        ),
        spec(
            "ticket",
            ToolShape::Freeform,
            Some(TextInput::grammar("input", GrammarSyntax::Regex, "[A-Z]+-[0-9]+")),
        ),
        spec("notes", ToolShape::Freeform, Some(TextInput::text("input"))),
        spec(
            "apply_patch",
            ToolShape::Builtin(BuiltinTool::ApplyPatch),
            Some(TextInput::text("input")),
        ),
        spec("shell", ToolShape::Builtin(BuiltinTool::Shell), None),
    ]
}

async fn run(
    client: &dyn ModelClient,
    items: &[Item],
    continuation: Option<&Continuation>,
) -> Result<Vec<ModelEvent>, agent_core::ModelError> {
    let tools = tools();
    let request = ModelRequest {
        instructions: "Edit files.",
        items,
        tools: &tools,
        tool_choice: &ToolChoice::Auto,
        parallel_tool_calls: true,
        continuation,
        output_schema: None,
    };
    let mut stream = client.stream(request).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

fn calls(events: &[ModelEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

fn native_turn() -> Turn {
    Turn::tool_calls([
        ScriptedCall::custom("call_custom", "patch_text", PATCH),
        ScriptedCall::apply_patch(
            "call_patch",
            json!({"type": "update_file", "path": "src/lib.rs", "diff": "@@ fn a\n-    1\n+    2\n"}),
        ),
        ScriptedCall::apply_patch(
            "call_create",
            json!({"type": "create_file", "path": "new.txt", "diff": "+hello\n+world\n"}),
        ),
        ScriptedCall::shell(
            "call_shell",
            json!({"commands": ["ls", "cat a.txt"], "timeout_ms": 5000, "max_output_length": 4096}),
        ),
    ])
}

fn expected_calls() -> Vec<(String, String, String, CallShape)> {
    vec![
        ("call_custom".into(), "patch_text".into(), PATCH.into(), CallShape::Custom),
        (
            "call_patch".into(),
            "apply_patch".into(),
            "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn a\n-    1\n+    2\n*** End Patch"
                .into(),
            CallShape::ApplyPatch,
        ),
        (
            "call_create".into(),
            "apply_patch".into(),
            "*** Begin Patch\n*** Add File: new.txt\n+hello\n+world\n*** End Patch".into(),
            CallShape::ApplyPatch,
        ),
        (
            "call_shell".into(),
            "shell".into(),
            r#"{"commands":["ls","cat a.txt"],"timeout_ms":5000,"max_output_length":4096}"#.into(),
            CallShape::Shell,
        ),
    ]
}

fn answered(calls: &[ToolCall]) -> Vec<Item> {
    let mut items = vec![user("Fix it.")];
    items.extend(calls.iter().cloned().map(Item::ToolCall));
    for call in calls {
        let (text, ok) = match call.shape {
            CallShape::Shell => (
                json!({"output": [
                    {"command": "ls", "stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
                    {"command": "cat a.txt", "stdout": "", "stderr": "", "outcome": {"type": "timeout"}}
                ]})
                .to_string(),
                true,
            ),
            CallShape::ApplyPatch if call.call_id == "call_create" => {
                ("{\"ok\":false,\"error\":\"outside_workspace\"}".to_owned(), false)
            }
            _ => (format!("done: {}", call.call_id), true),
        };
        items.push(Item::ToolOutput(CallOutput {
            call_id: call.call_id.clone(),
            output: text,
            ok,
            error: None,
            images: Vec::new(),
        }));
    }
    items
}

/// Each native call, streamed and whole, becomes a call of its tool with its raw input, and the
/// next request answers each in its own item type under its `call_id` (continued and stateless).
#[tokio::test]
async fn responses_native_calls_round_trip() {
    for stream in [true, false] {
        let server = start([native_turn(), Turn::text("ok"), Turn::text("ok")]).await;
        let client = client(Api::Responses, &config(&server, stream));
        let events = run(client.as_ref(), &[user("Fix it.")], None).await.unwrap();
        let got = calls(&events);
        let shapes: Vec<_> = got
            .iter()
            .map(|call| {
                (call.call_id.clone(), call.name.clone(), call.arguments.clone(), call.shape)
            })
            .collect();
        assert_eq!(shapes, expected_calls(), "stream={stream}");
        assert!(got.iter().all(|call| call.item_id.is_some()), "stream={stream}");
        let response_id = events.iter().find_map(|event| match event {
            ModelEvent::Completed { response_id, .. } => response_id.clone(),
            _ => None,
        });
        let items = answered(&got);
        let continuation = Continuation {
            previous_response_id: response_id.unwrap_or_default(),
            items_known: 1 + got.len(),
        };
        run(client.as_ref(), &items, Some(&continuation)).await.unwrap();
        let stateless = agent_model::ResponsesClient::stateless(&config(&server, stream)).unwrap();
        run(&stateless, &items, None).await.unwrap();
        let requests = server.requests();
        assert_json_snapshot!(
            format!("responses_native_first_stream_{stream}"),
            requests[0].json()
        );
        assert_json_snapshot!(
            format!("responses_native_continued_stream_{stream}"),
            requests[1].json()["input"]
        );
        assert_json_snapshot!(
            format!("responses_native_stateless_stream_{stream}"),
            requests[2].json()["input"]
        );
        // Every output the next request carries answers a call of the first, by its call id.
        for input in requests[1].json()["input"].as_array().unwrap() {
            let call_id = input["call_id"].as_str().unwrap();
            assert!(got.iter().any(|call| call.call_id == call_id), "{call_id}");
        }
    }
}

/// A custom call on Chat Completions, streamed and whole: read as `type: "custom"`, replayed the
/// same way, answered by a `tool` message.
#[tokio::test]
async fn chat_custom_call_round_trips() {
    for stream in [true, false] {
        let turn = Turn::tool_calls([ScriptedCall::custom("call_custom", "patch_text", PATCH)]);
        let server = start([turn, Turn::text("ok")]).await;
        let client = client(Api::Chat, &config(&server, stream));
        let events = run(client.as_ref(), &[user("Fix it.")], None).await.unwrap();
        let got = calls(&events);
        assert_eq!(got.len(), 1, "stream={stream}");
        assert_eq!((got[0].arguments.as_str(), got[0].shape), (PATCH, CallShape::Custom));
        run(client.as_ref(), &answered(&got), None).await.unwrap();
        let requests = server.requests();
        assert_json_snapshot!(
            format!("chat_native_first_stream_{stream}"),
            requests[0].json()["tools"]
        );
        assert_json_snapshot!(
            format!("chat_native_answer_stream_{stream}"),
            requests[1].json()["messages"]
        );
    }
}

/// A server that refuses custom tools gets the request again with them as functions, once: the
/// client keeps sending functions afterwards without being refused again.
#[tokio::test]
async fn a_refusal_of_custom_tools_falls_back_to_functions_once() {
    for api in [Api::Chat, Api::Responses] {
        let refusal = Fault::Status {
            status: 400,
            body: json!({"error": {"message": "Invalid value: 'custom'. Supported values are: 'function'.", "type": "invalid_request_error", "param": "tools[0].type"}}).to_string(),
            content_type: None,
            headers: Default::default(),
        };
        let server = start([Turn::fault(refusal), Turn::text("one"), Turn::text("two")]).await;
        let client = client(api, &config(&server, true));
        run(client.as_ref(), &[user("a")], None).await.unwrap();
        run(client.as_ref(), &[user("b")], None).await.unwrap();
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{api:?}");
        let types = |body: &Value| -> Vec<String> {
            body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|tool| tool["type"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert!(types(&requests[0].json()).contains(&"custom".to_owned()), "{api:?}");
        for request in &requests[1..] {
            assert!(!types(&request.json()).contains(&"custom".to_owned()), "{api:?}");
        }
    }
}
