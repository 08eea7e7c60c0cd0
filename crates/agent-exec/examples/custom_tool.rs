//! A tool of your own beside the built-ins: the model calls `word_count`, reads its output and
//! answers. The model here is the scripted server on 127.0.0.1, so the example runs offline;
//! point `ClientConfig` at any OpenAI-compatible server to use a real one.
//!
//! Run it: `cargo run -p agent-exec --example custom_tool`.

#![allow(clippy::print_stdout)]

use std::{error::Error, sync::Arc};

use agent_core::{Effects, ToolContext, ToolError, ToolOutput, Typed, TypedTool};
use agent_exec::{Agent, PermissionMode, agent::Finish};
use agent_model::{
    ChatClient, ClientConfig,
    scripted::{Script, ScriptedCall, ScriptedServer, Turn},
};
use agent_tools::{BuiltinConfig, BuiltinTools};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Input of the `word_count` tool.
#[derive(Deserialize, JsonSchema)]
struct WordCountInput {
    /// The text whose words to count.
    text: String,
}

/// Counts words: one input type gives the schema, the strict schema and the validation.
struct WordCount;

impl TypedTool for WordCount {
    type Input = WordCountInput;
    const NAME: &'static str = "word_count";

    fn description(&self) -> String {
        "Counts the whitespace-separated words of a text.".to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    async fn run(&self, input: WordCountInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text.split_whitespace().count().to_string()))
    }
}

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), Box<dyn Error>> {
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new(
            "call_1",
            "word_count",
            json!({"text": "to be or not to be"}),
        )]),
        Turn::text("There are 6 words."),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;

    let model = ChatClient::new(&ClientConfig::new(server.url(), "scripted"))?;
    let mut agent = Agent::builder(workspace.path())
        .tool(Arc::new(Typed::new(WordCount)?))
        .builtin_tools(&BuiltinConfig::default())?
        .permission_mode(PermissionMode::DontAsk)
        .build(model)?;
    let finish = agent.prompt("How many words are in 'to be or not to be'?").await;

    let Finish::Answered(answer) = finish else { return Err(format!("{finish:?}").into()) };
    println!("answer: {answer}");
    // The tool's output went back to the model in the second request.
    let second = &server.requests()[1].body;
    assert!(second.contains(r#""role":"tool""#) && second.contains(r#""content":"6""#));
    Ok(())
}
