//! Where project instructions go on the wire: after the instructions, in the Chat Completions
//! `system` message and the Responses `instructions` field, on every request.

use std::path::Path;

use agent_core::{CancellationToken, ModelClient};
use agent_exec::{AgentBuilder, project_doc::ProjectDocs};
use agent_model::{
    ChatClient, ClientConfig, ResponsesClient,
    scripted::{Script, ScriptedServer, Turn},
};
use serde_json::Value;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Two prompts through an agent whose workspace sits two levels inside a repository with
/// AGENTS.md files at the root and in between; the request bodies with the temporary directory
/// replaced by `<tmp>`.
async fn bodies(responses: bool) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(top.join("repo/.git")).unwrap();
    write(&top.join("repo/AGENTS.md"), "Run `cargo xtask ci` before committing.");
    write(&top.join("repo/crates/AGENTS.md"), "Every crate keeps its tests in tests/.");
    write(&top.join("user/AGENTS.md"), "Answer in English.");
    let workspace = top.join("repo/crates/one");
    std::fs::create_dir_all(&workspace).unwrap();
    let docs = ProjectDocs::discover(&workspace, Some(&top.join("user")));
    assert_eq!(docs.files.len(), 3);

    let server = ScriptedServer::start(Script::new([Turn::text("first"), Turn::text("second")]))
        .await
        .unwrap();
    let config = ClientConfig::new(server.url(), "scripted");
    let model: Box<dyn ModelClient> = if responses {
        Box::new(ResponsesClient::new(&config).unwrap())
    } else {
        Box::new(ChatClient::new(&config).unwrap())
    };
    let mut agent = AgentBuilder::new(&workspace)
        .instructions("You are a test agent.")
        .project_instructions(&docs.text)
        .build_boxed(model)
        .unwrap();
    let cancel = CancellationToken::new();
    agent.prompt_with("hello", &cancel, |_| {}).await;
    agent.prompt_with("again", &cancel, |_| {}).await;
    let tmp = top.display().to_string();
    server
        .requests()
        .iter()
        .map(|request| serde_json::from_str(&request.body.replace(&tmp, "<tmp>")).unwrap())
        .collect()
}

#[tokio::test]
async fn chat_sends_project_instructions_in_the_system_message() {
    let bodies = bodies(false).await;
    insta::assert_json_snapshot!("project_doc_chat", bodies[0]);
    assert_eq!(bodies[1]["messages"][0], bodies[0]["messages"][0], "on every request");
}

#[tokio::test]
async fn responses_send_project_instructions_as_instructions() {
    let bodies = bodies(true).await;
    insta::assert_json_snapshot!("project_doc_responses", bodies[0]);
    assert_eq!(bodies[1]["instructions"], bodies[0]["instructions"], "also when continuing");
    assert!(bodies[1]["previous_response_id"].is_string());
}

#[test]
fn without_files_the_instructions_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let docs = ProjectDocs::discover(dir.path(), None);
    let builder =
        AgentBuilder::new(dir.path()).instructions("Only this.").project_instructions(&docs.text);
    let agent = builder.build(agent_model::ReplayClient::new("none", Vec::new())).unwrap();
    assert_eq!(agent.config().instructions, "Only this.");
}
