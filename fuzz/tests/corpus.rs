//! Every target's seed corpus (`fuzz/corpus/<target>/`) replayed through the target: the
//! properties hold on every seed, and every target has seeds. The regression inputs of the
//! campaign's findings live in the corpus too, named after what they found.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn check(name: &str) {
    let target = agent_fuzz::target(name).unwrap_or_else(|| panic!("no target {name}"));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus").join(name);
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .unwrap();
    seeds.sort();
    assert!(!seeds.is_empty(), "{name} has no seeds in {}", dir.display());
    for seed in seeds {
        let data = std::fs::read(&seed).unwrap();
        let outcome = std::panic::catch_unwind(|| (target.run)(&data));
        assert!(outcome.is_ok(), "{}: the property failed", seed.display());
    }
}

#[test]
fn every_target_is_tested_here() {
    let here = include_str!("corpus.rs");
    for target in agent_fuzz::TARGETS {
        assert!(here.contains(&format!("fn {}()", target.name)), "{} has no test", target.name);
    }
}

#[test]
fn sse() {
    check("sse");
}
#[test]
fn chat_stream() {
    check("chat_stream");
}
#[test]
fn responses_stream() {
    check("responses_stream");
}
#[test]
fn apply_patch() {
    check("apply_patch");
}
#[test]
fn acp_frames() {
    check("acp_frames");
}
#[test]
fn mcp_frames() {
    check("mcp_frames");
}
#[test]
fn lsp_frames() {
    check("lsp_frames");
}
#[test]
fn html() {
    check("html");
}
#[test]
fn proxy_hello() {
    check("proxy_hello");
}
#[test]
fn proxy_host() {
    check("proxy_host");
}
#[test]
fn transcript() {
    check("transcript");
}
#[test]
fn skill() {
    check("skill");
}
#[test]
fn command() {
    check("command");
}
#[test]
fn config() {
    check("config");
}
#[test]
fn shell() {
    check("shell");
}

/// The transcript seeds load whole (the target checks only transcripts that do), so they are in
/// the format the writer uses.
#[test]
fn transcript_seeds_load() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/transcript");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let loaded = agent_exec::fuzz::load_transcript(&std::fs::read(&path).unwrap());
        let loaded = loaded.unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert!(loaded.torn_lines.is_empty(), "{}", path.display());
    }
}
