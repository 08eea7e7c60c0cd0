//! A front end answering approvals: in the `default` permission mode edits and most commands ask,
//! and the program's own [`Approver`] decides — here a policy in code that allows writes under
//! `notes/` and refuses everything else, telling the model why.
//!
//! Run it: `cargo run -p agent-exec --example approvals`.

#![allow(clippy::print_stdout)]

use std::{error::Error, sync::Arc};

use agent_core::{Access, BoxFuture};
use agent_exec::{Agent, Approval, ApprovalRequest, Approver, PermissionMode, agent::Finish};
use agent_model::{
    ChatClient, ClientConfig,
    scripted::{Script, ScriptedCall, ScriptedServer, Turn},
};
use agent_tools::{BuiltinConfig, BuiltinTools};
use serde_json::json;

/// Allows writing files under `notes/`; refuses anything else with a reason the model reads.
struct NotesOnly;

impl Approver for NotesOnly {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let notes_only = request
            .access
            .iter()
            .all(|access| matches!(access, Access::Write(path) if path.starts_with("notes/")));
        println!("asked: {} ({}) -> {}", request.tool, request.reason, notes_only);
        Box::pin(async move {
            if notes_only {
                Approval::AllowOnce
            } else {
                Approval::Deny { reason: Some("only notes/ may change".to_owned()) }
            }
        })
    }
}

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), Box<dyn Error>> {
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([
            ScriptedCall::new("c1", "write_file", json!({"path": "notes/a.md", "content": "hi"})),
            ScriptedCall::new("c2", "write_file", json!({"path": "src/x.rs", "content": "//"})),
        ]),
        Turn::text("Wrote notes/a.md; src/ is off limits."),
    ]))
    .await?;
    let workspace = tempfile::tempdir()?;

    let model = ChatClient::new(&ClientConfig::new(server.url(), "scripted"))?;
    let mut agent = Agent::builder(workspace.path())
        .builtin_tools(&BuiltinConfig::default())?
        .permission_mode(PermissionMode::Default)
        .approver(Arc::new(NotesOnly))
        .build(model)?;
    let finish = agent.prompt("Take a note, then touch the code.").await;

    assert!(matches!(finish, Finish::Answered(_)), "{finish:?}");
    assert!(workspace.path().join("notes/a.md").is_file());
    assert!(!workspace.path().join("src/x.rs").exists(), "the refused write did not happen");
    assert!(server.requests()[1].body.contains("only notes/ may change"));
    Ok(())
}
