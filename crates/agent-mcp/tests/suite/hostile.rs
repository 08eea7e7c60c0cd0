//! A hostile stdio server (`tests/peers/py_hostile.py`, JSON-RPC by hand): what rmcp alone would
//! drop in silence is reported at once, and one bad tool costs only that tool.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use agent_core::{CancellationToken, ToolCall};
use agent_exec::PermissionMode;
use agent_mcp::ServerConfig;

use super::{executor, peer, python};

/// The hostile server as `h`, with `extra` arguments; calls may wait 60 s for an answer.
fn hostile(python: &std::path::Path, extra: &[&str]) -> BTreeMap<String, ServerConfig> {
    let mut args = vec![peer("py_hostile.py").display().to_string()];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let mut config = ServerConfig::stdio(python.display().to_string(), args);
    config.startup_timeout_sec = 120.0;
    config.tool_timeout_sec = 60.0;
    BTreeMap::from([("h".to_owned(), config)])
}

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall::function("c", name, arguments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_too_deep_drops_only_that_tool_and_says_so() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (executor, problems) =
        executor(dir.path(), hostile(&python, &[]), PermissionMode::Bypass).await;
    let names: Vec<String> = executor.specs().into_iter().map(|spec| spec.name).collect();
    for tool in ["lure", "huge", "fine"] {
        assert!(names.contains(&format!("mcp__h__{tool}")), "{tool} missing from {names:?}");
    }
    assert!(!names.contains(&"mcp__h__deep".to_owned()), "{names:?}");
    let problems = problems.lock().unwrap().join("\n");
    assert!(
        problems.contains("mcp tool `deep` of `h` is left out: its definition nests too deep"),
        "{problems}"
    );
    let fine = executor
        .execute(&call("mcp__h__fine", r#"{"text":"still here"}"#), &CancellationToken::new())
        .await;
    assert_eq!((fine.ok, fine.text.as_str()), (true, "still here"));
}

/// The control: a schema as deep as a message may be is read, so the test above can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_schema_within_the_bound_is_kept() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (executor, problems) =
        executor(dir.path(), hostile(&python, &["--deep", "20"]), PermissionMode::Bypass).await;
    let names: Vec<String> = executor.specs().into_iter().map(|spec| spec.name).collect();
    assert!(names.contains(&"mcp__h__deep".to_owned()), "{names:?} {problems:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_line_cap_fails_at_once_naming_the_cap() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (executor, _) = executor(dir.path(), hostile(&python, &[]), PermissionMode::Bypass).await;
    let start = Instant::now();
    let outcome = executor.execute(&call("mcp__h__huge", "{}"), &CancellationToken::new()).await;
    let took = start.elapsed();
    assert!(!outcome.ok, "{:.300}", outcome.text);
    assert!(outcome.text.contains("over the 16 MiB a message may take"), "{}", outcome.text);
    // Not the 60 s of tool_timeout_sec: the answer arrived, and was reported when it did.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    // The connection survives: the next call is answered.
    let fine = executor
        .execute(&call("mcp__h__fine", r#"{"text":"after"}"#), &CancellationToken::new())
        .await;
    assert_eq!((fine.ok, fine.text.as_str()), (true, "after"));
}
