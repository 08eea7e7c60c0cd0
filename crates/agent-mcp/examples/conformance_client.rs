//! Our MCP client as the conformance suite's client under test (`@modelcontextprotocol/conformance
//! client --command …`): the suite starts a scenario's server, runs this program with the server's
//! URL as its last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`, and judges what
//! it sent.
//!
//! The client is the one `agent` uses, unchanged: an `McpSession` of one streamable HTTP server
//! (`protocol = "auto"` unless `MCP_PROTOCOL` says otherwise), its tools called through
//! `Executor::execute` as a model's calls are. The server's questions are answered as a user who
//! says yes to everything would (the form's defaults), which is what the elicitation scenarios
//! ask for. Scenarios it has no part for only connect and list the tools. It prints the protocol
//! revision spoken and each call's observation, and exits 1 when the server could not be reached.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::{collections::BTreeMap, process::ExitCode, sync::Arc};

use agent_core::{BoxFuture, CancellationToken, ToolCall};
use agent_exec::{AgentBuilder, PermissionMode};
use agent_mcp::{Answer, Elicit, McpSession, McpTools, Question, ServerConfig, ServerEnv};

/// Says yes to every question, with the form's defaults.
struct Yes;

impl Elicit for Yes {
    fn elicit<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            match agent_mcp::defaults(question) {
                Some(content) => Answer::Accept(content),
                None => Answer::Decline,
            }
        })
    }
}

fn main() -> ExitCode {
    let Some(url) = std::env::args().next_back() else { return ExitCode::from(2) };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let mut config = ServerConfig::http(url);
    if let Ok(protocol) = std::env::var("MCP_PROTOCOL") {
        config.protocol = serde_json::from_value(serde_json::Value::String(protocol)).unwrap();
    }
    let workspace = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let env = ServerEnv { workspace: workspace.path().to_path_buf(), session_dir: None };
        let session = McpSession::new(&BTreeMap::from([("s".to_owned(), config)]), env).unwrap();
        session.questions().answer_with(Arc::new(Yes));
        let server = Arc::clone(&session.servers()[0]);
        let tools = McpTools::start(session, |problem| eprintln!("{problem}"));
        tools.wait_all().await;
        let Some(revision) = server.revision() else {
            eprintln!("the server did not start");
            return ExitCode::from(1);
        };
        println!("protocol {revision}");
        let executor = AgentBuilder::new(workspace.path())
            .late_tools(tools)
            .permission_mode(PermissionMode::Bypass)
            .build_executor()
            .unwrap();
        executor.refresh_late_tools().await;
        let calls: &[(&str, &str)] = match scenario.as_str() {
            "tools_call" => &[("add_numbers", r#"{"a":1,"b":2}"#)],
            "elicitation-sep1034-client-defaults" => &[("test_client_elicitation_defaults", "{}")],
            "sse-retry" => &[("test_reconnection", "{}")],
            _ => &[],
        };
        for (index, (tool, arguments)) in calls.iter().enumerate() {
            let call = ToolCall {
                call_id: format!("c{index}"),
                name: agent_mcp::tool_name("s", tool),
                arguments: (*arguments).to_owned(),
                item_id: None,
                shape: agent_core::CallShape::Function,
            };
            let outcome = executor.execute(&call, &CancellationToken::new()).await;
            println!("{tool}: {}", outcome.text);
        }
        ExitCode::SUCCESS
    })
}
