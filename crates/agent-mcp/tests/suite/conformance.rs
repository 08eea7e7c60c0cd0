//! The MCP conformance suite's client mode against our client: every scenario of the suite
//! (`--suite all`), judged against the committed baseline (`scripts/mcp/conformance-baseline.yml`),
//! so a new failure and a baseline entry that now passes both fail the test. The client under test
//! is `examples/conformance_client.rs`, which `cargo test` builds beside this suite.

use std::path::{Path, PathBuf};

/// The suite's CLI runner and the node_modules holding the pinned suite, or `None` (skipped).
pub(crate) fn suite() -> Option<(PathBuf, PathBuf)> {
    let modules = agent_test_support::mcp_peer(
        "node/node_modules/@modelcontextprotocol/conformance",
        "the MCP conformance suite",
    )?;
    let runner = repo().join("scripts/mcp/conformance.mjs");
    Some((runner, modules.parent()?.parent()?.to_path_buf()))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `target/debug/examples/conformance_client`, beside this test's own binary (`deps/`).
fn client() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples/conformance_client")
}

#[test]
fn every_applicable_client_scenario_passes() {
    let Some((runner, modules)) = suite() else { return };
    let client = client();
    assert!(client.exists(), "{} was not built", client.display());
    let results = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("node")
        .arg(runner)
        .arg(modules)
        .args(["client", "--suite", "all", "--command"])
        .arg(&client)
        .arg("--expected-failures")
        .arg(repo().join("scripts/mcp/conformance-baseline.yml"))
        .arg("-o")
        .arg(results.path())
        .current_dir(results.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // The handshake scenario is the one that failed before the client named 2025-11-25.
    assert!(stdout.contains("✓ initialize: 1 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains("Baseline check passed"), "{stdout}");
}
