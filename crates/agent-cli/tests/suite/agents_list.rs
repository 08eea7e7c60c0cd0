//! `agent agents list`: every definition in force with where it came from, Claude Code's files
//! read with their fields mapped, what a file replaced, and every refused file with why.

use crate::suite::{agent, stderr, stdout};

#[test]
fn agents_list_maps_claude_code_files_and_says_why_a_file_was_refused() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join(".claude/agents");
    let ours = dir.path().join(".agent/agents");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::create_dir_all(&ours).unwrap();
    // Claude Code's own field names and values, and keys that mean nothing here.
    std::fs::write(
        claude.join("critic.md"),
        "---\nname: critic\ndescription: Reviews diffs.\ntools: Read, Grep, Glob\n\
         permissionMode: acceptEdits\nmaxTurns: 5\nmodel: sonnet\ncolor: blue\n---\nReview.\n",
    )
    .unwrap();
    std::fs::write(claude.join("reviewer.md"), "---\nname: reviewer\ndescription: Theirs.\n---\n")
        .unwrap();
    // A project file of the same name wins over Claude Code's.
    std::fs::write(
        ours.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews, our way.\ntools: [read_file, grep]\n\
         permission_mode: plan\nmodel: small-model\n---\nReview.\n",
    )
    .unwrap();
    std::fs::write(ours.join("broken.md"), "name: broken\n").unwrap();
    std::fs::write(
        ours.join("mode.md"),
        "---\nname: m\ndescription: d\npermission_mode: god\n---\n",
    )
    .unwrap();
    std::fs::write(
        claude.join("helper.md"),
        "---\nname: helper\ndescription: Helps.\nmodel: inherit\nhooks: x\nmcpServers: y\n---\n",
    )
    .unwrap();
    let output = agent(dir.path(), &["agents", "list"]);
    assert_eq!(output.status.code(), Some(1), "a refused file is exit 1: {}", stderr(&output));
    let root = dir.path().display().to_string();
    insta::assert_snapshot!(stdout(&output).replace(&root, "<workspace>"));
}
