//! Two prompts on the Responses API: the second request continues the stored response with
//! `previous_response_id` and sends only the new user message, not the whole conversation.
//!
//! Run it: `cargo run -p agent-exec --example responses_continuation`.

#![allow(clippy::print_stdout)]

use std::error::Error;

use agent_exec::{Agent, agent::Finish};
use agent_model::{
    ClientConfig, ResponsesClient,
    scripted::{Script, ScriptedCall, ScriptedServer, Turn},
};
use agent_tools::{BuiltinConfig, BuiltinTools};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), Box<dyn Error>> {
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new("call_1", "uppercase", json!({"text": "hello"}))]),
        Turn::text("HELLO"),
        Turn::text("You asked me to shout hello."),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;

    let model = ResponsesClient::new(&ClientConfig::new(server.url(), "scripted"))?;
    let mut agent =
        Agent::builder(workspace.path()).builtin_tools(&BuiltinConfig::default())?.build(model)?;
    let first = agent.prompt("Shout hello.").await;
    let second = agent.prompt("What did I ask you first?").await;
    println!("first: {first:?}\nsecond: {second:?}");
    assert!(matches!(second, Finish::Answered(_)));

    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(|request| serde_json::from_str(&request.body))
        .collect::<Result<_, _>>()?;
    let last = &bodies[2];
    assert!(last["previous_response_id"].is_string(), "{last}");
    // Only the new user message travels; the server holds the rest.
    assert_eq!(last["input"].as_array().map(Vec::len), Some(1), "{last}");
    Ok(())
}
