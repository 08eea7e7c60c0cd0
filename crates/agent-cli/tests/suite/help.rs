//! `--help`, `--version` and shell completions: what a user reads before anything else.

use crate::suite::{agent, stdout};

#[test]
fn help_documents_every_option_and_command() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["--help"]);
    assert_eq!(output.status.code(), Some(0));
    insta::assert_snapshot!("help", stdout(&output));
    let output = agent(dir.path(), &["exec", "--help"]);
    insta::assert_snapshot!("exec_help", stdout(&output));
}

#[test]
fn version_and_completions() {
    let dir = tempfile::tempdir().unwrap();
    let version = agent(dir.path(), &["--version"]);
    assert_eq!(stdout(&version).trim(), format!("agent {}", env!("CARGO_PKG_VERSION")));
    for shell in ["bash", "zsh", "fish"] {
        let output = agent(dir.path(), &["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = stdout(&output);
        assert!(script.contains("replay") && script.contains("permission-mode"), "{shell}");
    }
}
