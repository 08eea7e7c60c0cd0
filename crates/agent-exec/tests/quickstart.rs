//! The library quick start of `docs/library.md`, built and run exactly as written: its
//! `Cargo.toml` and `src/main.rs` go into a directory outside the workspace (depending on the
//! crates by path), and the program runs against the scripted server on 127.0.0.1.
//!
//! The inner build shares this workspace's target directory, lock file and dev profile, so it
//! reuses compiled dependencies where their features agree, and runs `--offline`: every crate it
//! needs is already in the local registry cache from building the workspace. Cargo holds no lock
//! on the target directory while tests run, so the inner build does not wait for the outer one.

// Helpers outside `#[test]` functions unwrap too; clippy.toml only exempts the tests themselves.
// The inner `cargo run` is a plain process, outside any sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::{path::Path, process::Command};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::json;

/// The first fenced block of `lang` after `heading` in the document.
fn block<'a>(doc: &'a str, heading: &str, lang: &str) -> &'a str {
    let section = doc.split(heading).nth(1).expect("the heading is in the document");
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).expect("the block is in the section") + fence.len();
    let len = section[start..].find("```").expect("the block is closed");
    &section[start..start + len]
}

#[test]
fn the_quick_start_program_builds_and_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let doc = std::fs::read_to_string(root.join("docs/library.md")).unwrap();
    let manifest = block(&doc, "## Quick start", "toml");
    let main = block(&doc, "## Quick start", "rust,no_run");
    assert!(main.lines().count() <= 40, "the quick start promises under 40 lines");

    let project = tempfile::tempdir().unwrap();
    let crates = format!("{}/crates/", root.display());
    std::fs::write(
        project.path().join("Cargo.toml"),
        manifest.replace("../agent/crates/", &crates),
    )
    .unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/main.rs"), main).unwrap();
    std::fs::copy(root.join("Cargo.lock"), project.path().join("Cargo.lock")).unwrap();
    // The toolchain file pins the same compiler the workspace uses.
    std::fs::copy(root.join("rust-toolchain.toml"), project.path().join("rust-toolchain.toml"))
        .unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = runtime
        .block_on(ScriptedServer::start(Script::new([
            Turn::tool_calls([ScriptedCall::new(
                "call_1",
                "word_count",
                json!({"text": "to be or not to be"}),
            )]),
            Turn::text("There are 6 words."),
        ])))
        .unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    // The workspace's dev profile, so that dependencies compiled for the workspace are reused.
    let profile = [
        "--config",
        "profile.dev.debug=\"line-tables-only\"",
        "--config",
        "profile.dev.package.\"*\".opt-level=1",
        "--config",
        "profile.dev.package.\"*\".debug=false",
    ];
    let output = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--offline"])
        .args(profile)
        .current_dir(project.path())
        .env("CARGO_TARGET_DIR", target)
        .env("OPENAI_BASE_URL", server.url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(stdout.trim(), r#"Answered("There are 6 words.")"#);
    let second = &server.requests()[1].body;
    assert!(second.contains(r#""content":"6""#), "the tool's output reached the model: {second}");
}
