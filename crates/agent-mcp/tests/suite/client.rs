//! The client side: a Python SDK server's tools through `McpSession`, `McpTools` and the
//! executor, exactly as an agent runs them: registry names, calls, error results, the permission
//! policy, and a call past its time limit cancelled at the server.

use std::{collections::BTreeMap, time::Duration};

use agent_core::{CancellationToken, ToolCall};
use agent_exec::{AgentBuilder, Executor, PermissionMode, RuleAction};
use agent_mcp::{McpSession, McpTools, ServerConfig, ServerEnv};
use serde_json::Value;

use super::{appears, executor, py_server, python};

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        call_id: format!("call-{name}"),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    }
}

/// The error code of a failed call's observation (`{"ok":false,"error":CODE,…}`), as the model
/// reads it.
fn error_code(text: &str) -> String {
    let observation: Value = serde_json::from_str(text).unwrap_or_default();
    observation["error"].as_str().unwrap_or_default().to_owned()
}

fn one(config: ServerConfig) -> BTreeMap<String, ServerConfig> {
    BTreeMap::from([("py".to_owned(), config)])
}

async fn run(executor: &Executor, name: &str, arguments: &str) -> agent_exec::Outcome {
    executor.execute(&call(name, arguments), &CancellationToken::new()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_tools_join_under_mcp_names_and_answer_calls() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = py_server(&python, dir.path(), |_| {});
    let (executor, problems) = executor(dir.path(), one(config), PermissionMode::Bypass).await;
    assert!(problems.lock().unwrap().is_empty(), "{problems:?}");

    let names: Vec<String> = executor.specs().into_iter().map(|spec| spec.name).collect();
    for tool in ["echo", "touch", "slow", "hang", "fail", "crash", "grow"] {
        assert!(names.contains(&format!("mcp__py__{tool}")), "{tool} missing from {names:?}");
    }
    // An untrusted server's tool is judged as one that may reach anything.
    let spec = executor.specs().into_iter().find(|spec| spec.name == "mcp__py__echo").unwrap();
    assert!(!spec.effects.read_only && spec.effects.network, "{:?}", spec.effects);

    let echoed = run(&executor, "mcp__py__echo", r#"{"text":"straße"}"#).await;
    assert!(echoed.ok, "{}", echoed.text);
    assert_eq!(echoed.text, "straße");

    // The call reached the server: the marker its tool writes is there.
    let touched = run(&executor, "mcp__py__touch", r#"{"name":"reached"}"#).await;
    assert!(touched.ok, "{}", touched.text);
    assert!(dir.path().join("reached").exists());

    // A schema the server declared is enforced before the call leaves.
    let bad = run(&executor, "mcp__py__echo", r#"{"txt":"x"}"#).await;
    assert_eq!(error_code(&bad.text), "invalid_arguments", "{}", bad.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_is_a_failed_observation_with_the_servers_words() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = py_server(&python, dir.path(), |_| {});
    let (executor, _) = executor(dir.path(), one(config), PermissionMode::Bypass).await;
    let failed = run(&executor, "mcp__py__fail", r#"{"message":"the disk is on fire"}"#).await;
    assert!(!failed.ok, "{}", failed.text);
    assert!(failed.text.contains("the disk is on fire"), "{}", failed.text);
    assert!(!error_code(&failed.text).is_empty(), "{}", failed.text);
}

/// Attack and control: in `dont-ask` mode a call no rule allows never reaches the server (its
/// marker is absent); the same call under an allow rule naming the tool does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_stands_between_the_model_and_the_server() {
    let Some(python) = python() else { return };
    for allowed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let config = py_server(&python, dir.path(), |_| {});
        let env = ServerEnv { workspace: dir.path().to_path_buf(), session_dir: None };
        let tools = McpTools::start(McpSession::new(&one(config), env).unwrap(), |_| {});
        tools.wait_all().await;
        let mut builder = AgentBuilder::new(dir.path())
            .late_tools(tools)
            .permission_mode(PermissionMode::DontAsk);
        if allowed {
            builder = builder.rule(RuleAction::Allow, "mcp__py__touch", "test");
        }
        let executor = builder.build_executor().unwrap();
        executor.refresh_late_tools().await;
        let outcome = run(&executor, "mcp__py__touch", r#"{"name":"smuggled"}"#).await;
        assert_eq!(outcome.ok, allowed, "{}", outcome.text);
        assert_eq!(dir.path().join("smuggled").exists(), allowed, "{}", outcome.text);
        if !allowed {
            assert_eq!(error_code(&outcome.text), "permission_denied", "{}", outcome.text);
        }
    }
}

/// A call that outlives the server's `tool_timeout_sec` fails with `timeout`, and the server
/// hears of it: its tool was cancelled (the marker the tool writes when cancelled appears).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_time_limit_is_cancelled_at_the_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = py_server(&python, dir.path(), |config| config.tool_timeout_sec = 1.0);
    let (executor, _) = executor(dir.path(), one(config), PermissionMode::Bypass).await;
    let hung = run(&executor, "mcp__py__hang", r#"{"name":"cancelled"}"#).await;
    assert!(!hung.ok, "{}", hung.text);
    assert_eq!(error_code(&hung.text), "timeout", "{}", hung.text);
    let marker = dir.path().join("cancelled");
    assert!(appears(&marker, Duration::from_secs(30)).await, "the server never saw the cancel");
}

/// A server that dies mid-call is an error the model can read, not a hang or a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_is_an_error() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = py_server(&python, dir.path(), |_| {});
    let (executor, _) = executor(dir.path(), one(config), PermissionMode::Bypass).await;
    let crashed = run(&executor, "mcp__py__crash", "{}").await;
    assert!(!crashed.ok, "{}", crashed.text);
    assert_eq!(error_code(&crashed.text), agent_mcp::UNAVAILABLE, "{}", crashed.text);
}
