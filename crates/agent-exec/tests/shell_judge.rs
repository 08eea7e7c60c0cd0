//! The shell judge against real processes: the commands of issue 17 go through the real executor
//! and the real `bash` tool in a temporary git workspace, and each test checks the effect (the
//! marker file a smuggled command would create), not only the verdict.
//!
//! Every refusal has a control: the same command approved by a person, which does create the
//! marker, so a test cannot pass because the attack never worked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod skip;

use std::{path::Path, process::Command, sync::Arc};

use agent_core::{BoxFuture, CancellationToken, ToolCall, Typed};
use agent_exec::{
    Approval, ApprovalRequest, Approver, Executor, ExecutorConfig, Outcome, PermissionMode,
    PolicyBuilder, Registry, RuleAction, Workspace,
};
use agent_tools::{Bash, BashConfig};
use serde_json::json;

/// The rules of the report.
const RULES: &[&str] = &["Bash(git status)", "Bash(echo *)", "Bash(ls *)"];

/// Says yes to everything: a person who approved the call.
struct Yes;

impl Approver for Yes {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async { Approval::AllowOnce })
    }
}

/// A git workspace with a planted `bin/ls`, `.github/workflows/` and `.agent/`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = Command::new("git").args(["init", "-q"]).current_dir(root).status().unwrap();
        assert!(git.success());
        for sub in ["src", "bin", ".github/workflows", ".agent"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("src/lib.rs"), "fn main() {}\n").unwrap();
        let planted = root.join("bin/ls");
        std::fs::write(&planted, "#!/bin/sh\ntouch PLANTED_RAN\n").unwrap();
        let mut perms = std::fs::metadata(&planted).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&planted, perms).unwrap();
        Self { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn exists(&self, rel: &str) -> bool {
        self.root().join(rel).exists()
    }

    /// An executor over the real bash tool in `mode` with the rules, and an approver
    /// that says yes when `approved`.
    fn executor(&self, mode: PermissionMode, approved: bool) -> Executor {
        let mut builder = PolicyBuilder::new(Workspace::new(self.root()).unwrap(), mode);
        for rule in RULES {
            builder.rule(RuleAction::Allow, rule, "--allow").unwrap();
        }
        let mut registry = Registry::new();
        registry.register(Arc::new(Typed::new(Bash::new(BashConfig::default())).unwrap())).unwrap();
        let exec = Executor::new(registry, builder.build(), ExecutorConfig::new("effects"));
        if approved { exec.with_approver(Arc::new(Yes)) } else { exec }
    }

    async fn run(
        &self,
        mode: PermissionMode,
        approved: bool,
        arguments: serde_json::Value,
    ) -> Outcome {
        let call = ToolCall {
            call_id: "call_1".to_owned(),
            name: "bash".to_owned(),
            arguments: arguments.to_string(),
            item_id: None,
        };
        self.executor(mode, approved).execute(&call, &CancellationToken::new()).await
    }
}

/// Whether the sandbox cannot run commands here (said on stderr, never silent).
fn sandbox_missing(outcome: &Outcome) -> bool {
    let missing = outcome.error_code == Some("sandbox_unavailable");
    if missing {
        skip::skipped(&format!("the OS sandbox cannot run commands here: {}", outcome.text));
    }
    missing
}

/// Refused because nobody could approve it, with `named` in the message.
#[track_caller]
fn refused(outcome: &Outcome, named: &str) {
    assert_eq!(outcome.error_code, Some("permission_denied"), "{}", outcome.text);
    assert!(outcome.text.contains(named), "{} lacks {named}", outcome.text);
}

#[tokio::test]
async fn variables_that_change_what_runs_are_refused_and_leave_no_trace() {
    let fx = Fixture::new();
    let cases = [
        (
            "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\" git status",
            "GIT_CONFIG_PARAMETERS",
            "PWNED",
        ),
        (
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch PWNED' git status",
            "GIT_CONFIG_COUNT",
            "PWNED",
        ),
        (
            "env GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\" git status",
            "GIT_CONFIG_PARAMETERS",
            "PWNED",
        ),
        ("PATH=./bin:$PATH ls", "`PATH`", "PLANTED_RAN"),
        ("export PATH=./bin:$PATH; ls", "`PATH`", "PLANTED_RAN"),
        ("PATH=./bin:$PATH; ls -la", "`PATH`", "PLANTED_RAN"),
        ("./bin/ls", "`./bin/ls` is not a known read-only command", "PLANTED_RAN"),
        ("bin/ls -la", "`bin/ls -la` is not a known read-only command", "PLANTED_RAN"),
    ];
    for (command, named, marker) in cases {
        let outcome = fx.run(PermissionMode::DontAsk, false, json!({ "command": command })).await;
        refused(&outcome, named);
        assert!(!fx.exists(marker), "{command} left {marker}");
        // The control: a person approves the same command, and the attack works.
        let outcome = fx.run(PermissionMode::Default, true, json!({ "command": command })).await;
        if sandbox_missing(&outcome) {
            return;
        }
        assert!(fx.exists(marker), "{command} did not create {marker}: {}", outcome.text);
        std::fs::remove_file(fx.root().join(marker)).unwrap();
    }
    // No library at hand, so only the verdict: the preloaded object would run inside `ls`.
    let outcome = fx
        .run(PermissionMode::DontAsk, false, json!({ "command": "LD_PRELOAD=./x.so ls -la" }))
        .await;
    refused(&outcome, "`LD_PRELOAD`");
}

#[tokio::test]
async fn inert_variables_still_run_under_the_rules() {
    let fx = Fixture::new();
    for (command, expect) in [("LANG=C ls", "src"), ("NO_COLOR=1 git status", "branch")] {
        let outcome = fx.run(PermissionMode::DontAsk, false, json!({ "command": command })).await;
        if sandbox_missing(&outcome) {
            return;
        }
        assert!(outcome.ok, "{command}: {}", outcome.text);
        assert!(outcome.text.contains(expect), "{command}: {}", outcome.text);
    }
}

#[tokio::test]
async fn protected_paths_reached_through_a_directory_change_are_refused_and_not_created() {
    let fx = Fixture::new();
    let cases = [
        (json!({ "command": "cd .github/workflows && touch x.yml" }), ".github/workflows/x.yml"),
        (json!({ "command": "pushd .agent && touch x" }), ".agent/x"),
        (
            json!({ "command": "touch evil2.yml", "workdir": ".github/workflows" }),
            ".github/workflows/evil2.yml",
        ),
        (
            json!({ "command": "cd src; cd ../.github/workflows; touch y.yml" }),
            ".github/workflows/y.yml",
        ),
    ];
    for (arguments, created) in cases {
        for mode in [PermissionMode::AcceptEdits, PermissionMode::Bypass] {
            let outcome = fx.run(mode, false, arguments.clone()).await;
            refused(&outcome, "protected path");
            assert!(!fx.exists(created), "{arguments} created {created} in {mode}");
        }
        let outcome = fx.run(PermissionMode::Bypass, true, arguments.clone()).await;
        if sandbox_missing(&outcome) {
            return;
        }
        assert!(fx.exists(created), "{arguments} did not create {created}: {}", outcome.text);
        std::fs::remove_file(fx.root().join(created)).unwrap();
    }
    let outcome = fx
        .run(PermissionMode::AcceptEdits, false, json!({ "command": "cd \"$HOME\" && touch x" }))
        .await;
    refused(&outcome, "known only at run time");
}

#[tokio::test]
async fn edits_inside_the_workspace_after_cd_still_run_in_accept_edits() {
    let fx = Fixture::new();
    let outcome = fx
        .run(PermissionMode::AcceptEdits, false, json!({ "command": "cd src && touch new.rs" }))
        .await;
    if sandbox_missing(&outcome) {
        return;
    }
    assert!(outcome.ok, "{}", outcome.text);
    assert!(fx.exists("src/new.rs"));
}
