//! Diagnostics after edits end to end: `agent exec` with a scripted model against the pinned
//! pyright (`scripts/peers/lsp/`). An edit through `edit_file`, `apply_patch` or a `bash`
//! command that rewrites the file must put the error it introduced into the next request, and
//! never an error an earlier change introduced and a later one fixed; the `diagnostics` tool
//! lists what the file holds now.

use std::path::Path;

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{exec::exec, stderr};

/// The file before the session: one error that was always there (`undefined_name`).
const BEFORE: &str =
    "def f(x: int) -> int:\n    return x\n\nz: int = 3\n\ny: int = undefined_name\n";
/// What a command copies over it in the `bash` case: `w`'s error fixed, a new one on `v`.
const BY_COMMAND: &str = "def f(x: int) -> int:\n    return x\n\nz: int = 3\nw: str = \"ok\"\nv: bytes = 1.5\n\ny: int = undefined_name\n";

/// The first error an edit introduces, the second (which also fixes the first), and the third
/// (the command's, which fixes the second), as pyright words them.
const FIRST: &str = "\"Literal['text']\" is not assignable to declared type \"int\"";
const SECOND: &str = "\"Literal[5]\" is not assignable to declared type \"str\"";
const THIRD: &str = "\"float\" is not assignable to declared type \"bytes\"";
const OLD: &str = "undefined_name";

/// A workspace holding `a.py` ([`BEFORE`]) and `b.py` ([`BY_COMMAND`], which no server has
/// seen), and a config file naming the pinned pyright with a wait long enough for a loaded
/// machine; `profile` goes into the default profile. `None` when pyright is not installed.
fn workspace(dir: &Path, profile: &str) -> Option<String> {
    let pyright =
        agent_test_support::peer("lsp", "node/node_modules/.bin/pyright-langserver", "pyright")?;
    std::fs::write(dir.join("a.py"), BEFORE).unwrap();
    std::fs::write(dir.join("b.py"), BY_COMMAND).unwrap();
    let config = dir.join("config.toml");
    let text = format!(
        "default_profile = \"p\"\n[lsp]\nedit_wait_ms = 60000\n[lsp.python]\ncommand = [{:?}, \"--stdio\"]\nfile_types = [\"py\"]\n[profiles.p]\n{profile}\n",
        pyright.display()
    );
    std::fs::write(&config, text).unwrap();
    Some(config.display().to_string())
}

/// The text of the answer to `call_id` in a request body, on either API.
fn answer(body: &Value, call_id: &str) -> String {
    let items = body["messages"].as_array().or_else(|| body["input"].as_array()).unwrap();
    let item = items
        .iter()
        .rev()
        .find(|item| {
            (item["role"] == "tool" && item["tool_call_id"] == call_id)
                || (item["call_id"] == call_id && item["type"].as_str().is_some_and(is_output))
        })
        .unwrap_or_else(|| panic!("no answer to {call_id} in {body}"));
    match item.get("content").or_else(|| item.get("output")) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => panic!("an answer without text: {item}"),
    }
}

fn is_output(kind: &str) -> bool {
    kind.ends_with("_output")
}

/// The diagnostics part of a change's answer: from its first line that speaks of the change
/// (the edit tools also show the lines around the edit, where the old error's line may be).
fn report(text: &str) -> &str {
    let at = ["\nThis edit ", "\nThis command "].iter().filter_map(|line| text.find(line)).min();
    at.map_or("", |at| &text[at + 1..])
}

/// One step's answer carries `new` and none of `gone`.
#[track_caller]
fn check(text: &str, new: &[&str], gone: &[&str]) {
    for wanted in new {
        assert!(text.contains(wanted), "{wanted:?} missing from:\n{text}");
    }
    for unwanted in gone {
        assert!(!text.contains(unwanted), "{unwanted:?} still in:\n{text}");
    }
}

/// Runs `turns` (each one call, answered in the next request) and a closing text; returns every
/// request body.
async fn run(dir: &Path, config: &str, api: &str, calls: Vec<ScriptedCall>) -> Vec<Value> {
    let mut turns: Vec<Turn> = calls.into_iter().map(|call| Turn::tool_calls([call])).collect();
    turns.push(Turn::text("Done."));
    let args = ["--config", config, "--api", api, "--permission-mode", "bypass", "exec", "edit"];
    let (output, bodies) = exec(dir, turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    bodies
}

fn read(id: &str) -> ScriptedCall {
    ScriptedCall::new(id, "read_file", json!({"path": "a.py"}))
}

fn edit(id: &str, old: &str, new: &str) -> ScriptedCall {
    ScriptedCall::new(
        id,
        "edit_file",
        json!({"path": "a.py", "old_string": old, "new_string": new}),
    )
}

/// `edit_file` twice, then a command that rewrites the file, then the `diagnostics` tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_change_brings_its_own_new_error_and_never_a_fixed_one() {
    let dir = tempfile::tempdir().unwrap();
    let Some(config) = workspace(dir.path(), "") else { return };
    let calls = vec![
        read("c0"),
        edit("c1", "z: int = 3", "z: int = \"text\""),
        edit("c2", "z: int = \"text\"", "z: int = 3\nw: str = 5"),
        ScriptedCall::new("c3", "bash", json!({"command": "cp b.py a.py"})),
        ScriptedCall::new("c4", "diagnostics", json!({"path": "a.py"})),
    ];
    let bodies = run(dir.path(), &config, "chat", calls).await;
    check_two_edits(&bodies);
    let third = answer(&bodies[4], "c3");
    check(
        report(&third),
        &["This command introduced 1 error in a.py (pyright-langserver)", THIRD, "fixed 1 error"],
        &[FIRST, SECOND, OLD],
    );
    // The whole list now: the old error and the command's, nothing that was fixed.
    let listed = answer(&bodies[5], "c4");
    check(&listed, &["(2 errors) in 1 file:", "a.py:", OLD, THIRD], &[FIRST, SECOND]);
}

/// The first two edits' answers (calls `c1` and `c2`, answered in the third and fourth requests):
/// each reports its own new error, the second also the one it fixed, and neither the old error.
fn check_two_edits(bodies: &[Value]) {
    let first = answer(&bodies[2], "c1");
    check(
        report(&first),
        &["This edit introduced 1 error in a.py (pyright-langserver)", FIRST],
        &[OLD],
    );
    let second = answer(&bodies[3], "c2");
    check(
        report(&second),
        &["This edit introduced 1 error", SECOND, "It fixed 1 error."],
        &[FIRST, OLD],
    );
}

/// The same through `apply_patch`, the edit tool of the GPT-5 family, on the Responses API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_patch_brings_its_own_new_error_and_never_a_fixed_one() {
    let dir = tempfile::tempdir().unwrap();
    let profile = "edit_tool = \"apply_patch\"\napply_patch_shape = \"builtin\"";
    let Some(config) = workspace(dir.path(), profile) else { return };
    let patch = |id: &str, diff: &str| {
        ScriptedCall::apply_patch(id, json!({"type": "update_file", "path": "a.py", "diff": diff}))
    };
    let calls = vec![
        read("c0"),
        patch("c1", "@@\n-z: int = 3\n+z: int = \"text\"\n"),
        patch("c2", "@@\n-z: int = \"text\"\n+z: int = 3\n+w: str = 5\n"),
    ];
    let bodies = run(dir.path(), &config, "responses", calls).await;
    check_two_edits(&bodies);
}

/// The `diagnostics` tool without a path lists every file the servers checked; a path no server
/// takes is refused in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diagnostics_tool_lists_the_checked_files_and_refuses_an_uncovered_one() {
    let dir = tempfile::tempdir().unwrap();
    let Some(config) = workspace(dir.path(), "") else { return };
    std::fs::write(dir.path().join("notes.txt"), "text\n").unwrap();
    let calls = vec![
        ScriptedCall::new("c0", "diagnostics", json!({"path": null})),
        read("c1"),
        edit("c2", "z: int = 3", "z: int = \"text\""),
        ScriptedCall::new("c3", "diagnostics", json!({"path": null})),
        ScriptedCall::new("c4", "diagnostics", json!({"path": "notes.txt"})),
    ];
    let bodies = run(dir.path(), &config, "chat", calls).await;
    check(&answer(&bodies[1], "c0"), &["No file has been checked in this session yet"], &[]);
    check(&answer(&bodies[4], "c3"), &["(2 errors) in 1 file:", OLD, FIRST], &[]);
    check(&answer(&bodies[5], "c4"), &["no language server is configured for notes.txt"], &[]);
}
