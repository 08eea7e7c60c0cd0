//! The agent loop with custom tools and the Responses `apply_patch` built-in, against the
//! scripted Responses server, streamed and whole: each call reaches its tool as the text the
//! tool takes, and the next request answers it in its own item type under its `call_id`.
//!
//! `apply_patch` here is a stand-in with the real tool's contract (a function shape of
//! `{"patch": "<text>"}`, a freeform shape of the raw text): it records what it was given, so
//! the test shows what the patch tool itself receives from each shape.

use std::sync::{Arc, Mutex};

use agent_core::{
    BuiltinTool, Effects, GrammarSyntax, Item, Reshaped, TextInput, ToolContext, ToolError,
    ToolOutput, ToolShape, Typed, TypedTool,
};
use agent_exec::{Agent, PermissionMode, agent::Finish};
use agent_model::{
    ClientConfig, ResponsesClient,
    scripted::{Script, ScriptedCall, ScriptedServer, Turn},
};
use insta::assert_json_snapshot;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The function shape of `apply_patch`.
#[derive(Deserialize, JsonSchema)]
struct PatchInput {
    /// The whole patch, `*** Begin Patch` to `*** End Patch`.
    patch: String,
}

/// Records each patch it is given.
struct StandInPatch(Arc<Mutex<Vec<String>>>);

impl TypedTool for StandInPatch {
    type Input = PatchInput;
    const NAME: &'static str = "apply_patch";
    fn description(&self) -> String {
        "Applies a patch.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::WRITES_FILES
    }
    fn text_input(&self) -> Option<TextInput> {
        Some(TextInput::grammar("patch", GrammarSyntax::Lark, "start: begin_patch hunk+ end_patch"))
    }
    async fn run(&self, input: PatchInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(input.patch);
        Ok(ToolOutput::text("Done: 1 file changed."))
    }
}

/// Input of `ticket`.
#[derive(Deserialize, JsonSchema)]
struct TicketInput {
    /// A ticket id.
    id: String,
}

/// A freeform tool whose text must match a regex.
struct Ticket;

impl TypedTool for Ticket {
    type Input = TicketInput;
    const NAME: &'static str = "ticket";
    fn description(&self) -> String {
        "Opens a ticket by id.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    fn text_input(&self) -> Option<TextInput> {
        Some(TextInput::grammar("id", GrammarSyntax::Regex, "[A-Z]+-[0-9]+"))
    }
    async fn run(&self, input: TicketInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ticket {} is open", input.id)))
    }
}

const PATCH: &str = "*** Begin Patch\n*** Add File: notes.txt\n+hi\n*** End Patch";

fn calls() -> Turn {
    Turn::tool_calls([
        ScriptedCall::apply_patch(
            "call_update",
            json!({"type": "update_file", "path": "src/a.rs", "diff": "@@ fn a\n-1\n+2\n"}),
        ),
        ScriptedCall::apply_patch(
            "call_create",
            json!({"type": "create_file", "path": "b.txt", "diff": "+one\n+two\n"}),
        ),
        ScriptedCall::apply_patch("call_delete", json!({"type": "delete_file", "path": "c.txt"})),
        ScriptedCall::custom("call_freeform", "apply_patch", PATCH),
        ScriptedCall::custom("call_ticket", "ticket", "AB-12"),
        ScriptedCall::custom("call_bad_ticket", "ticket", "not a ticket"),
    ])
}

#[tokio::test]
async fn native_calls_run_their_tool_and_are_answered_in_kind() {
    for stream in [true, false] {
        let workspace = tempfile::tempdir().unwrap();
        let server =
            ScriptedServer::start(Script::new([calls(), Turn::text("done")])).await.unwrap();
        let mut config = ClientConfig::new(server.url(), "gpt-5");
        config.stream = stream;
        let patches = Arc::new(Mutex::new(Vec::new()));
        let patch = Arc::new(Typed::new(StandInPatch(patches.clone())).unwrap());
        let mut agent = Agent::builder(workspace.path())
            .tool(Arc::new(Reshaped::new(patch, ToolShape::Builtin(BuiltinTool::ApplyPatch))))
            .tool(Arc::new(Reshaped::new(
                Arc::new(Typed::new(Ticket).unwrap()),
                ToolShape::Freeform,
            )))
            .permission_mode(PermissionMode::Bypass)
            .build(ResponsesClient::new(&config).unwrap())
            .unwrap();
        let finish = agent.prompt("Edit the files.").await;
        assert!(matches!(finish, Finish::Answered(_)), "{finish:?}");

        // What the patch tool received: each operation as patch text, the freeform call as is.
        assert_json_snapshot!(format!("native_patches_stream_{stream}"), *patches.lock().unwrap());
        let requests = server.requests();
        assert_json_snapshot!(format!("native_tools_stream_{stream}"), requests[0].json()["tools"]);
        // The next request answers every call, in its item type, under its call id.
        let input = requests[1].json()["input"].clone();
        assert_json_snapshot!(format!("native_answers_stream_{stream}"), input);
        let answered: Vec<(&str, &str)> = input
            .as_array()
            .unwrap()
            .iter()
            .map(|item| (item["type"].as_str().unwrap(), item["call_id"].as_str().unwrap()))
            .collect();
        assert_eq!(
            answered,
            [
                ("apply_patch_call_output", "call_update"),
                ("apply_patch_call_output", "call_create"),
                ("apply_patch_call_output", "call_delete"),
                ("custom_tool_call_output", "call_freeform"),
                ("custom_tool_call_output", "call_ticket"),
                ("custom_tool_call_output", "call_bad_ticket"),
            ]
        );
        // Text that does not match a regex grammar never reaches its tool.
        let bad = &input[5]["output"];
        assert!(bad.as_str().unwrap().contains("invalid_arguments"), "{bad}");
        // The transcript keeps each call's shape and raw input, so a resumed session replays it.
        let items = &agent.conversation().items;
        let saved = serde_json::to_value(items).unwrap();
        let back: Vec<Item> = serde_json::from_value(saved).unwrap();
        assert_eq!(&back, items);
        let shapes: Vec<Value> = items
            .iter()
            .filter_map(|item| match item {
                Item::ToolCall(call) => Some(json!([call.call_id, call.shape])),
                _ => None,
            })
            .collect();
        assert_eq!(shapes[0], json!(["call_update", "apply_patch"]));
        assert_eq!(shapes[3], json!(["call_freeform", "custom"]));
    }
}

/// Input of `print_text`.
#[derive(Deserialize, JsonSchema)]
struct PrintInput {
    /// What to print.
    text: String,
}

/// A freeform tool with a long output, so a session of its calls needs compaction.
struct PrintText;

impl TypedTool for PrintText {
    type Input = PrintInput;
    const NAME: &'static str = "print_text";
    fn description(&self) -> String {
        "Prints the text many times.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    fn text_input(&self) -> Option<TextInput> {
        Some(TextInput::text("text"))
    }
    async fn run(&self, input: PrintInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("{}\n", input.text).repeat(4000)))
    }
}

/// A long session of custom calls is compacted and stays valid in kind: every output that goes
/// on the wire is a `custom_tool_call_output` whose call is in the same request or held by the
/// server, stateless and continued alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_custom_calls_and_their_outputs_in_kind() {
    use agent_core::{CancellationToken, CharEstimate};
    use agent_exec::{
        AgentBuilder, ExecutorConfig,
        agent::AgentEvent,
        compaction::{ContextConfig, SUMMARY_MARKER},
    };

    for stateless in [true, false] {
        let mut turns: Vec<Turn> = (0..40)
            .map(|i| {
                Turn::tool_calls([ScriptedCall::custom(
                    format!("call_{i}"),
                    "print_text",
                    format!("line {i}"),
                )])
            })
            .collect();
        turns.push(Turn::text("done"));
        let script =
            Script::new(turns).with_standing(SUMMARY_MARKER, Turn::text("SUMMARY: printing."));
        let server = ScriptedServer::start(script).await.unwrap();
        let config = ClientConfig::new(server.url(), "gpt-5");
        let model = if stateless {
            ResponsesClient::stateless(&config).unwrap()
        } else {
            ResponsesClient::new(&config).unwrap()
        };
        let workspace = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut executor = ExecutorConfig::new("long");
        executor.session_dir = Some(dir.path().to_path_buf());
        let mut agent = AgentBuilder::new(workspace.path())
            .permission_mode(PermissionMode::Bypass)
            .tool(Arc::new(Reshaped::new(
                Arc::new(Typed::new(PrintText).unwrap()),
                ToolShape::Freeform,
            )))
            .executor_config(executor)
            .context(ContextConfig::new(Arc::new(CharEstimate), 32_768, "configured"))
            .max_turns(100)
            .build(model)
            .unwrap();
        let compacted = Mutex::new(0);
        let finish = agent
            .prompt_with("print", &CancellationToken::new(), |event| {
                if matches!(event, AgentEvent::Compaction { .. }) {
                    *compacted.lock().unwrap() += 1;
                }
            })
            .await;
        assert_eq!(finish, Finish::Answered("done".to_owned()), "stateless={stateless}");
        assert!(*compacted.lock().unwrap() > 0, "stateless={stateless}: no compaction");
        for request in server.requests() {
            let body = request.json();
            if body.to_string().contains(SUMMARY_MARKER) {
                continue;
            }
            let input = body["input"].as_array().unwrap();
            let kinds = |kind: &str| -> Vec<&str> {
                input
                    .iter()
                    .filter(|item| item["type"] == kind)
                    .map(|item| item["call_id"].as_str().unwrap())
                    .collect()
            };
            assert!(
                kinds("function_call").is_empty() && kinds("function_call_output").is_empty(),
                "{body}"
            );
            // A request that carries the whole transcript pairs every output with its call.
            if body["previous_response_id"].is_null() {
                assert_eq!(
                    kinds("custom_tool_call"),
                    kinds("custom_tool_call_output"),
                    "stateless={stateless}"
                );
            }
        }
    }
}
