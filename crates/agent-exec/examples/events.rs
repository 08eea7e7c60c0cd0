//! The whole path with its events: a model, the built-in tools, a permission policy and the loop,
//! printing every event as it happens — what a front end (terminal, JSON stream, GUI) renders.
//!
//! The scripted model lists the workspace, runs an allowed command and tries one the policy
//! refuses; the refusal reaches the model as an observation, not as an error of the program.
//!
//! Run it: `cargo run -p agent-exec --example events`.

#![allow(clippy::print_stdout)]

use std::error::Error;

use agent_core::{CancellationToken, ToolErrorKind};
use agent_exec::{
    Agent, PermissionMode,
    agent::{AgentEvent, Finish},
};
use agent_model::{
    ChatClient, ClientConfig,
    scripted::{Script, ScriptedCall, ScriptedServer, Turn},
};
use agent_tools::{BuiltinConfig, BuiltinTools};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), Box<dyn Error>> {
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new("call_1", "list_dir", json!({"path": "."}))]),
        Turn::tool_calls([
            ScriptedCall::new("call_2", "bash", json!({"command": "echo hello"})),
            ScriptedCall::new("call_3", "bash", json!({"command": "rm -rf src"})),
        ]),
        Turn::text("The workspace holds src/; echo works, deleting was refused."),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;
    std::fs::create_dir(workspace.path().join("src"))?;

    let model = ChatClient::new(&ClientConfig::new(server.url(), "scripted"))?;
    let mut agent = Agent::builder(workspace.path())
        .builtin_tools(&BuiltinConfig::default())?
        .permission_mode(PermissionMode::DontAsk)
        .allow("Bash(echo *)")
        .build(model)?;

    let mut finished = Vec::new();
    let finish = agent
        .prompt_with("What is in the workspace?", &CancellationToken::new(), |event| {
            if let AgentEvent::ToolCallFinished { name, ok, error, .. } = &event {
                finished.push((name.clone(), *ok, error.clone()));
            }
            // Every event is a serde type: this line is what `agent exec --json` prints.
            println!("{}", serde_json::to_string(&event).unwrap_or_default());
        })
        .await;

    assert!(matches!(finish, Finish::Answered(_)), "{finish:?}");
    let denied = Some(ToolErrorKind::PermissionDenied);
    assert_eq!(finished[1], ("bash".to_owned(), true, None));
    assert_eq!(finished[2], ("bash".to_owned(), false, denied));
    assert!(workspace.path().join("src").is_dir(), "the refused command did not run");
    Ok(())
}
