//! Checkpoints end to end: `agent exec` with the scripted model, the real tools and the real
//! sandbox, in a git repository with uncommitted work; then `agent undo` and `--fork`.

use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{agent, data_dir, exec::exec, session_id, stderr, stdout, transcript};

/// Every file under `root` (`.git` too when `git` is set) with its bytes and mode.
fn tree(root: &Path, git: bool) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    fn walk(root: &Path, dir: &Path, git: bool, out: &mut BTreeMap<PathBuf, (Vec<u8>, u32)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if !git && rel == Path::new(".git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                out.insert(rel, (Vec::new(), mode));
                walk(root, &path, git, out);
            } else {
                out.insert(rel, (std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, git, &mut out);
    out
}

/// `git ARGS` in `dir`, without optional locks, so reading the status never rewrites the index.
#[allow(clippy::disallowed_methods, reason = "the test's own git, not a product process")]
fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.fsmonitor=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// A repository with committed files and uncommitted work (a changed tracked file, an untracked one).
fn repo() -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    for (name, text) in [
        ("a.txt", "alpha\n"),
        ("b.txt", "x x x\n"),
        ("c.txt", "gone\n"),
        ("d.txt", "moved\n"),
        ("run.sh", "echo run\n"),
    ] {
        std::fs::write(ws.join(name), text).unwrap();
    }
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "start"]);
    std::fs::write(ws.join("a.txt"), "alpha\nwork in progress\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "not committed\n").unwrap();
    (base, ws)
}

fn every_kind_of_write() -> Vec<Turn> {
    let command = "sed -i s/x/y/g b.txt && rm c.txt && mv d.txt e.txt && echo new > new.txt && chmod +x run.sh";
    vec![
        Turn::tool_calls([ScriptedCall::new("c1", "read_file", json!({"path": "a.txt"}))]),
        Turn::tool_calls([ScriptedCall::new(
            "c2",
            "edit_file",
            json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        )]),
        Turn::tool_calls([ScriptedCall::new("c3", "bash", json!({"command": command}))]),
        Turn::text("Done."),
    ]
}

const BYPASS: [&str; 2] = ["--permission-mode", "bypass"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_brings_back_the_tree_the_index_and_never_writes_in_git() {
    let (_base, ws) = repo();
    let before = tree(&ws, false);
    let status = git(&ws, &["status", "--porcelain"]);
    let git_before = tree(&ws.join(".git"), true);
    let (output, _) =
        exec(&ws, every_kind_of_write(), &[&BYPASS[..], &["exec", "change it all"]].concat()).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = tree(&ws, false);
    assert_eq!(after[Path::new("a.txt")].0, b"ALPHA\nwork in progress\n");
    assert_eq!(after[Path::new("b.txt")].0, b"y y y\n");
    assert_eq!(after[Path::new("run.sh")].1 & 0o111, 0o111);
    assert!(!after.contains_key(Path::new("c.txt")) && after.contains_key(Path::new("e.txt")));

    let undo = agent(&ws, &["undo"]);
    assert_eq!(undo.status.code(), Some(0), "{}{}", stdout(&undo), stderr(&undo));
    assert!(stdout(&undo).contains("renamed back e.txt -> d.txt"), "{}", stdout(&undo));
    assert_eq!(tree(&ws, false), before, "{}", stdout(&undo));
    assert_eq!(git(&ws, &["status", "--porcelain"]), status);
    // Nothing under .git changed at all: not the index, not a ref, not an object.
    assert_eq!(tree(&ws.join(".git"), true), git_before);

    // The undo was recorded: redoing it gives the turn's tree back.
    let redo = agent(&ws, &["undo", "--redo"]);
    assert_eq!(redo.status.code(), Some(0), "{}", stdout(&redo));
    assert_eq!(tree(&ws, false), after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_user_changed_is_a_conflict_until_forced() {
    let (_base, ws) = repo();
    let before = tree(&ws, false);
    let (output, _) =
        exec(&ws, every_kind_of_write(), &[&BYPASS[..], &["exec", "change it all"]].concat()).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::write(ws.join("b.txt"), "the user's\n").unwrap();

    let undo = agent(&ws, &["undo"]);
    assert_eq!(undo.status.code(), Some(1), "{}", stdout(&undo));
    let text = stdout(&undo);
    assert!(text.contains("conflict     b.txt"), "{text}");
    assert!(text.contains("-y y y") && text.contains("+the user's"), "{text}");
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "the user's\n");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "alpha\nwork in progress\n");

    let forced = agent(&ws, &["undo", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stdout(&forced));
    assert_eq!(tree(&ws, false), before, "{}", stdout(&forced));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_turn_two_of_four_ends_there_and_the_original_resumes_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let (first, _) = exec(&ws, vec![Turn::text("one")], &["exec", "turn 1"]).await;
    let id = session_id(&first);
    for n in 2..=4 {
        let (output, _) =
            exec(&ws, vec![Turn::text("ok")], &["exec", "--resume", &id, &format!("turn {n}")])
                .await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let original =
        std::fs::read(data_dir(&ws).join("sessions").join(&id).join("transcript.jsonl")).unwrap();
    let users = |bodies: &[serde_json::Value]| -> Vec<String> {
        bodies[0]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let fork = format!("{id}:2");
    let (forked, bodies) =
        exec(&ws, vec![Turn::text("forked")], &["--fork", &fork, "exec", "after the fork"]).await;
    assert_eq!(forked.status.code(), Some(0), "{}", stderr(&forked));
    assert_eq!(users(&bodies), ["turn 1", "turn 2", "after the fork"]);
    let new = session_id(&forked);
    assert_ne!(new, id);
    assert_eq!(transcript(&ws, &new).iter().filter(|l| l["item"]["role"] == "user").count(), 3);
    // The original was only read.
    assert_eq!(
        std::fs::read(data_dir(&ws).join("sessions").join(&id).join("transcript.jsonl")).unwrap(),
        original
    );
    let (resumed, bodies) =
        exec(&ws, vec![Turn::text("still here")], &["exec", "--resume", &id, "turn 5"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(users(&bodies), ["turn 1", "turn 2", "turn 3", "turn 4", "turn 5"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_files_and_node_modules_are_named_and_the_store_keeps_under_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("one"), "1".repeat(3_000)).unwrap();
    std::fs::write(ws.join("two"), "2".repeat(3_000)).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[checkpoints]\nstore_cap_bytes = 4096\n").unwrap();
    let command = "head -c 50000000 /dev/zero > big.bin && mkdir -p node_modules/pkg && echo 1 > node_modules/pkg/index.js \
                   && echo changed > one && echo changed > two && head -c 5000 /dev/zero > three";
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("c1", "bash", json!({"command": command}))]),
        Turn::text("Done."),
    ];
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--permission-mode",
        "bypass",
        "exec",
        "write a lot",
    ];
    let (output, _) = exec(&ws, turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let dry = agent(&ws, &["undo", "--dry-run"]);
    let text = stdout(&dry);
    assert!(
        text.contains("not covered  big.bin (50000000 bytes, over the 10000000-byte limit)"),
        "{text}"
    );
    assert!(
        text.contains(
            "not covered  node_modules/pkg/index.js (inside the ignored directory node_modules)"
        ),
        "{text}"
    );
    assert!(text.contains("store is at its 4096-byte cap"), "{text}");
    let sessions = data_dir(&ws).join("sessions");
    let session = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();
    let blobs: u64 = std::fs::read_dir(session.join("checkpoints/blobs"))
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum();
    assert!(blobs <= 4096, "{blobs} bytes stored");
    // A dry run changed nothing.
    assert!(ws.join("big.bin").exists() && ws.join("three").exists());
}
