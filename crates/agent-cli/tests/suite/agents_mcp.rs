//! A child uses the parent's MCP servers (the same connections) under the parent's rules: its
//! call of an MCP tool reaches the server when the parent allows it, and is refused unrun when
//! the parent's policy would refuse it.

use std::path::Path;

use agent_model::scripted::{Script, ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{
    agents::{answered, config, run, task},
    mcp::{py_table, python},
    stderr,
};

/// A `general` child calls `mcp__py__touch` for `name`; what the parent's `task` call read.
async fn child_touches(dir: &Path, markers: &Path, name: &str, flags: &[&str]) -> String {
    let python = python().expect("checked by the caller");
    let config = config(dir, &py_table(&python, markers, "required = true\n"));
    let touch = ScriptedCall::new("m1", "mcp__py__touch", json!({"name": name}));
    let script =
        Script::new([Turn::tool_calls([task("t", "general", "touch \"A1\"")]), Turn::text("done")])
            .with_standing("\"m1\"", Turn::text("touched"))
            .with_standing("\\\"A1\\\"", Turn::tool_calls([touch]));
    let mut args = vec!["--config", &config];
    args.extend_from_slice(flags);
    args.extend(["exec", "go"]);
    let (output, requests) = run(dir, script, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The child's own request offered the server's tool.
    let child = requests.iter().find(|r| r.body.contains("\\\"A1\\\"")).unwrap();
    assert!(child.body.contains("\"mcp__py__touch\""), "the child was not offered the MCP tool");
    answered(&requests, "t")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_calls_the_parents_mcp_server_under_the_parents_rules() {
    if python().is_none() {
        return;
    }
    let (dir, markers) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let answer =
        child_touches(dir.path(), markers.path(), "allowed", &["--allow", "mcp__py__touch"]).await;
    assert!(answer.starts_with("touched"), "{answer}");
    assert!(markers.path().join("allowed").exists(), "the child's call did not reach the server");
    // Without the parent's rule, `exec` has no one to ask: the child's call is refused unrun.
    let dir = tempfile::tempdir().unwrap();
    child_touches(dir.path(), markers.path(), "denied", &[]).await;
    assert!(!markers.path().join("denied").exists(), "the child's call ran without a rule");
}
