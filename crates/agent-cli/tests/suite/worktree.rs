//! `agent --worktree`: two exec sessions edit the same file of one repository at once, each in
//! its own worktree, and the user's checkout is untouched; `agent worktree list|remove`.

use std::{path::Path, process::Command};

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{agent, exec::exec, stderr, stdout};

const FILE: &str = "greeting = hello\n";

/// git in `dir`, which must succeed; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The model replaces `hello` in `config.txt` with `word`, then answers.
fn edit(word: &str) -> Vec<Turn> {
    let args = json!({"path": "config.txt", "old_string": "hello", "new_string": word});
    let read = ScriptedCall::new("call_r", "read_file", json!({"path": "config.txt"}));
    vec![
        Turn::tool_calls([read]),
        Turn::tool_calls([ScriptedCall::new("call_e", "edit_file", args)]),
        Turn::text("edited"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worktree_sessions_edit_one_file_and_the_checkout_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("app");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("config.txt"), FILE).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "config.txt"]);
    git(&repo, &["commit", "-qm", "start"]);
    let args = |name: &'static str| ["--permission-mode", "accept-edits", name, "exec", "edit it"];
    let (one, two) = (args("--worktree=one"), args("--worktree=two"));
    let (first, second) =
        tokio::join!(exec(&repo, edit("one"), &one), exec(&repo, edit("two"), &two));
    let root = dir.path().join("app.worktrees");
    for ((output, _), name) in [(first, "one"), (second, "two")] {
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let edited = std::fs::read_to_string(root.join(name).join("config.txt")).unwrap();
        assert_eq!(edited, format!("greeting = {name}\n"), "{}", stderr(&output));
        assert!(stderr(&output).contains(&format!("agent worktree remove {name}")));
        let branch = git(&root.join(name), &["branch", "--show-current"]);
        assert_eq!(branch.trim(), format!("agent/{name}"));
    }
    // The user's checkout: the same file, the same branch, nothing changed or added.
    assert_eq!(std::fs::read_to_string(repo.join("config.txt")).unwrap(), FILE);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(git(&repo, &["branch", "--show-current"]).trim(), "main");

    let listed = stdout(&agent(&repo, &["worktree", "list"]));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.contains("one  agent/one") && listed.contains("two  agent/two"), "{listed}");
    // Uncommitted work is not removed without --force.
    let refused = agent(&repo, &["worktree", "remove", "one"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(root.join("one/config.txt").exists());
    let removed = agent(&repo, &["worktree", "remove", "one", "--force"]);
    assert_eq!(removed.status.code(), Some(0), "{}", stderr(&removed));
    assert!(!root.join("one").exists());
    assert!(!git(&repo, &["branch", "--list"]).contains("agent/one"));
    assert_eq!(stdout(&agent(&repo, &["worktree", "list"])).lines().count(), 1);
}

#[test]
fn outside_a_repository_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["--worktree", "exec", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("is not in a git repository"), "{}", stderr(&output));
}
