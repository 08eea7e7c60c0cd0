//! Both protocol eras from the client side: a Python SDK server forced to 2025-11-25, forced to
//! 2026-07-28 and left to choose, and server-everything (a 2025 server): the revision chosen, a
//! call, progress that keeps a call alive past its idle timeout, a question answered (an
//! elicitation request in the 2025 era, an `input_required` result in the 2026 one), and a
//! cancelled call that the server sees cancelled.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use agent_core::{BoxFuture, CancellationToken, ToolCall};
use agent_exec::{AgentBuilder, Executor, PermissionMode};
use agent_mcp::{
    Answer, Elicit, McpSession, McpTools, Protocol, Question, Server, ServerConfig, ServerEnv,
};
use serde_json::Value;

use super::{appears, py_server, python};

/// Answers as a user would: yes (with the given field values over the form's defaults) or no;
/// keeps every question it was asked.
struct User {
    yes: bool,
    fill: serde_json::Map<String, Value>,
    asked: Mutex<Vec<Question>>,
}

impl Elicit for User {
    fn elicit<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            self.asked.lock().unwrap().push(question.clone());
            if !self.yes {
                return Answer::Decline;
            }
            let mut content = serde_json::Map::new();
            for field in &question.fields {
                if let Some(value) = field.schema.get("default") {
                    content.insert(field.name.clone(), value.clone());
                }
            }
            content.extend(self.fill.clone());
            Answer::Accept(content)
        })
    }
}

fn user(yes: bool, fill: Value) -> Arc<User> {
    let fill = fill.as_object().cloned().unwrap_or_default();
    Arc::new(User { yes, fill, asked: Mutex::default() })
}

/// An executor over the one server `s` of `config`, its questions answered by `user`.
async fn connect(
    workspace: &Path,
    config: ServerConfig,
    user: Arc<User>,
) -> (Executor, Arc<Server>) {
    let env = ServerEnv { workspace: workspace.to_path_buf(), session_dir: None };
    let session = McpSession::new(&BTreeMap::from([("s".to_owned(), config)]), env).unwrap();
    session.questions().answer_with(user);
    let server = Arc::clone(&session.servers()[0]);
    let tools = McpTools::start(session, |_| {});
    tools.wait_all().await;
    let executor = AgentBuilder::new(workspace)
        .late_tools(tools)
        .permission_mode(PermissionMode::Bypass)
        .build_executor()
        .unwrap();
    executor.refresh_late_tools().await;
    (executor, server)
}

async fn run(executor: &Executor, tool: &str, arguments: &str) -> agent_exec::Outcome {
    let call = ToolCall {
        call_id: format!("call-{tool}"),
        name: format!("mcp__s__{tool}"),
        arguments: arguments.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    };
    executor.execute(&call, &CancellationToken::new()).await
}

/// The Python server forced to `era`, our client choosing (`protocol = "auto"`).
fn python_in(python: &Path, markers: &Path, era: &str) -> ServerConfig {
    py_server(python, markers, |config| {
        config.args.extend(["--era".to_owned(), era.to_owned()]);
        // Idle for at most 1 s: the 2.5 s call below lives on its progress alone.
        config.tool_timeout_sec = 1.0;
    })
}

/// Everything one era must do, against the Python server forced to `era`.
async fn check_python(python: &Path, era: &str, speaks: &str) {
    let dir = tempfile::tempdir().unwrap();
    let yes = user(true, Value::Null);
    let (executor, server) =
        connect(dir.path(), python_in(python, dir.path(), era), yes.clone()).await;
    assert_eq!(server.revision().as_deref(), Some(speaks), "{era}");

    let echoed = run(&executor, "echo", r#"{"text":"hi"}"#).await;
    assert!(echoed.ok && echoed.text == "hi", "{era}: {}", echoed.text);

    let slow = run(&executor, "slow", r#"{"seconds":2.5,"step":0.3}"#).await;
    assert!(slow.ok && slow.text.starts_with("finished after"), "{era}: {}", slow.text);

    // A yes creates the marker; the question reached our Elicit with the server's words.
    let asked = run(&executor, "ask", r#"{"name":"confirmed"}"#).await;
    assert!(asked.ok && asked.text == "created confirmed", "{era}: {}", asked.text);
    assert!(dir.path().join("confirmed").exists(), "{era}");
    let question = yes.asked.lock().unwrap()[0].clone();
    assert_eq!(question.message, "Create the marker confirmed?", "{era}");
    assert_eq!(question.server, "s");

    // Cancelled once it runs at the server: the server's tool sees the cancellation.
    let call = ToolCall {
        call_id: "call-hang".to_owned(),
        name: "mcp__s__hang".to_owned(),
        arguments: r#"{"name":"hung"}"#.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    };
    let token = CancellationToken::new();
    let started = dir.path().join("hung.started");
    let (outcome, seen) = tokio::join!(executor.execute(&call, &token), async {
        let seen = appears(&started, Duration::from_secs(30)).await;
        token.cancel();
        seen
    });
    assert!(seen && !outcome.ok, "{era}: {}", outcome.text);
    let cancelled = appears(&dir.path().join("hung"), Duration::from_secs(30)).await;
    assert!(cancelled, "{era}: the server never saw the cancellation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_server_is_spoken_to_with_the_2025_handshake() {
    let Some(python) = python() else { return };
    check_python(&python, "legacy", "2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_only_server_is_spoken_to_in_2026() {
    let Some(python) = python() else { return };
    check_python(&python, "modern", "2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_both_eras_is_spoken_to_in_2026() {
    let Some(python) = python() else { return };
    check_python(&python, "auto", "2026-07-28").await;
}

/// A no is the server's to handle, in both eras: nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_question_is_declined_in_both_eras() {
    let Some(python) = python() else { return };
    for era in ["legacy", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let config = python_in(&python, dir.path(), era);
        let (executor, _) = connect(dir.path(), config, user(false, Value::Null)).await;
        let asked = run(&executor, "ask", r#"{"name":"refused"}"#).await;
        assert_eq!(asked.text, "not created: decline", "{era}");
        assert!(!dir.path().join("refused").exists(), "{era}");
    }
}

/// The `protocol` key pins an era: pinned to the other one, the server does not start, and says
/// why; pinned to its own, it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_protocol_speaks_only_that_era() {
    let Some(python) = python() else { return };
    for (era, pinned, starts) in [
        ("legacy", Protocol::Modern, false),
        ("modern", Protocol::Legacy, false),
        ("legacy", Protocol::Legacy, true),
        ("modern", Protocol::Modern, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = python_in(&python, dir.path(), era);
        config.protocol = pinned;
        let (_, server) = connect(dir.path(), config, user(true, Value::Null)).await;
        assert_eq!(server.revision().is_some(), starts, "{era} pinned to {pinned:?}");
        if !starts {
            let error = server.last_error().await.unwrap_or_default();
            assert!(error.contains("handshake failed"), "{era} pinned to {pinned:?}: {error}");
        }
    }
}

/// server-everything, the reference server, speaks 2025-11-25: its tools, its progress and its
/// elicitation form (a required name filled in). (Its cancellation leaves nothing to look at;
/// the Python server's `hang` shows a cancellation arriving, in both eras.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_is_spoken_to_in_2025() {
    let Some(everything) = agent_test_support::mcp_peer(
        "node/node_modules/.bin/mcp-server-everything",
        "server-everything",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Started as the tests of the agent-cli suite start it.
    let mut config = ServerConfig::stdio(everything.display().to_string(), vec!["stdio".into()]);
    config.startup_timeout_sec = 120.0;
    config.tool_timeout_sec = 1.0;
    let yes = user(true, serde_json::json!({"name": "Ada Lovelace"}));
    let (executor, server) = connect(dir.path(), config, yes.clone()).await;
    assert_eq!(server.revision().as_deref(), Some("2025-11-25"));

    let echoed = run(&executor, "echo", r#"{"message":"hi"}"#).await;
    assert_eq!(echoed.text, "Echo: hi");

    // 3 s of work with progress every 0.5 s outlives the 1 s idle timeout.
    let long =
        run(&executor, "trigger-long-running-operation", r#"{"duration":3,"steps":6}"#).await;
    assert!(long.ok && long.text.contains("completed"), "{}", long.text);

    let asked = run(&executor, "trigger-elicitation-request", "{}").await;
    assert!(asked.ok && asked.text.contains("Ada Lovelace"), "{}", asked.text);
    assert_eq!(
        yes.asked.lock().unwrap()[0].message,
        "Please provide inputs for the following fields:"
    );

    assert_eq!(run(&executor, "echo", r#"{"message":"again"}"#).await.text, "Echo: again");
}
