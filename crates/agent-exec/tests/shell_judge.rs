//! The shell judge against real processes: commands built to get past its rules go through the real
//! executor and the real `bash` tool in a temporary git workspace, and each test checks the effect
//! (the marker file a smuggled command would create), not only the verdict. Commands approved only
//! as read-only run under the sandbox's execute allow-list (read-only approvals the kernel enforces).
//!
//! Every refusal has a control: the same command approved by a person, which does create the
//! marker, so a test cannot pass because the attack never worked.

// The fixtures run `git` as a plain process to set up the workspace, outside any sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::{path::Path, process::Command, sync::Arc};

use agent_core::{BoxFuture, CancellationToken, ToolCall, ToolErrorKind, Typed};
use agent_exec::{
    Approval, ApprovalRequest, Approver, Executor, ExecutorConfig, Outcome, PermissionMode,
    PolicyBuilder, Registry, RuleAction, Workspace,
    process::{self, ProcessSpec},
    sandbox::SandboxConfig,
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
    /// The allow rules of its policies.
    rules: &'static [&'static str],
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
        Self { dir, rules: RULES }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn exists(&self, rel: &str) -> bool {
        self.root().join(rel).exists()
    }

    /// An executor over the real bash tool in `mode` with the fixture's rules, and an approver
    /// that says yes when `approved`.
    fn executor(&self, mode: PermissionMode, approved: bool) -> Executor {
        let mut builder = PolicyBuilder::new(Workspace::new(self.root()).unwrap(), mode);
        for rule in self.rules {
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
            shape: agent_core::CallShape::Function,
        };
        self.executor(mode, approved).execute(&call, &CancellationToken::new()).await
    }
}

/// Whether the sandbox cannot run commands here (said on stderr, never silent).
fn sandbox_missing(outcome: &Outcome) -> bool {
    let missing = outcome.error_code == Some(ToolErrorKind::SandboxUnavailable);
    if missing {
        agent_test_support::skipped(&format!(
            "the OS sandbox cannot run commands here: {}",
            outcome.text
        ));
    }
    missing
}

/// Refused because nobody could approve it, with `named` in the message.
#[track_caller]
fn refused(outcome: &Outcome, named: &str) {
    assert_eq!(outcome.error_code, Some(ToolErrorKind::PermissionDenied), "{}", outcome.text);
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

/// Runs `git` with `args` in `root`, asserting success.
fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository with one commit and a change, whose own config (as a cloned repository can
/// carry) makes git run `touch PWNED` for `status` and `diff`.
fn hostile_repository() -> Fixture {
    // No rules: the commands run unasked only because they are known read-only commands.
    let fx = Fixture { rules: &[], ..Fixture::new() };
    let root = fx.root();
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    std::fs::write(root.join(".gitattributes"), "*.txt diff=evil\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "init"]);
    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    git(root, &["config", "core.fsmonitor", "touch PWNED_FSMONITOR; false"]);
    git(root, &["config", "diff.evil.textconv", "touch PWNED_TEXTCONV; cat"]);
    fx
}

#[tokio::test]
async fn commands_approved_as_read_only_cannot_start_programs_they_do_not_name() {
    let fx = hostile_repository();
    for command in ["git status", "git status --short", "git diff", "git log -p -1"] {
        let outcome = fx.run(PermissionMode::DontAsk, false, json!({ "command": command })).await;
        if sandbox_missing(&outcome) {
            return;
        }
        assert!(outcome.error_code.is_none(), "{command}: {}", outcome.text);
        for marker in ["PWNED_FSMONITOR", "PWNED_TEXTCONV", "PWNED_EXTERNAL"] {
            assert!(!fx.exists(marker), "{command} ran {marker}: {}", outcome.text);
        }
    }
    git(fx.root(), &["config", "diff.external", "touch PWNED_EXTERNAL; true"]);
    let outcome = fx.run(PermissionMode::DontAsk, false, json!({ "command": "git diff" })).await;
    assert!(!fx.exists("PWNED_EXTERNAL"), "{}", outcome.text);
    assert!(
        outcome.text.contains("cannot exec 'touch PWNED_EXTERNAL; true': Permission denied"),
        "{}",
        outcome.text
    );
    // The control: where the user allowed everything (bypass) or a rule names the command, the
    // same commands do run the repository's programs: the list is what stopped them.
    let outcome = fx.run(PermissionMode::Bypass, false, json!({ "command": "git status" })).await;
    assert!(fx.exists("PWNED_FSMONITOR"), "{}", outcome.text);
    let ruled = Fixture { rules: &["Bash(git diff)"], dir: fx.dir };
    let outcome = ruled.run(PermissionMode::DontAsk, false, json!({ "command": "git diff" })).await;
    assert!(ruled.exists("PWNED_EXTERNAL"), "{}", outcome.text);
}

#[tokio::test]
async fn read_only_commands_still_work_under_the_allow_list() {
    let fx = Fixture { rules: &[], ..Fixture::new() };
    std::fs::write(fx.root().join("src/lib.rs"), "fn needle() {}\n").unwrap();
    git(fx.root(), &["add", "src"]);
    git(fx.root(), &["commit", "-qm", "first commit"]);
    std::fs::write(fx.root().join("src/lib.rs"), "fn needle() { 1 }\n").unwrap();
    let cases = [
        ("ls src", "lib.rs"),
        ("cat src/lib.rs", "needle"),
        ("grep -r needle src", "src/lib.rs:fn needle"),
        ("git log --oneline", "first commit"),
        ("git diff", "+fn needle() { 1 }"),
        ("git status", "modified:   src/lib.rs"),
        ("cd src && ls -la | wc -l && pwd", "/src"),
    ];
    for (command, expect) in cases {
        let outcome = fx.run(PermissionMode::DontAsk, false, json!({ "command": command })).await;
        if sandbox_missing(&outcome) {
            return;
        }
        assert!(outcome.text.starts_with("exit 0"), "{command}: {}", outcome.text);
        assert!(outcome.text.contains(expect), "{command}: {}", outcome.text);
        assert!(!outcome.text.contains("Permission denied"), "{command}: {}", outcome.text);
    }
}

#[tokio::test]
async fn a_program_found_through_a_path_changed_in_the_shell_is_not_the_one_allowed() {
    let fx = Fixture::new();
    let mut config = SandboxConfig::new(fx.root());
    config.exec_allowlist = Some(vec!["ls".to_owned()]);
    // The judge refuses this line (a PATH set in the line); the kernel stops it as well: the list holds the
    // `ls` found on the tool's PATH before the line ran, not the one the line puts first.
    let spec = ProcessSpec::bash("PATH=./bin:$PATH; ls").cwd(fx.root());
    let out = process::run(spec, &config, CancellationToken::new(), None).await;
    let out = match out {
        Ok(out) => out,
        Err(err) => {
            return agent_test_support::skipped(&format!(
                "the OS sandbox cannot run commands here: {err}"
            ));
        }
    };
    assert!(out.output.contains("Permission denied"), "{}", out.output);
    assert!(!fx.exists("PLANTED_RAN"));
    config.exec_allowlist = None;
    let spec = ProcessSpec::bash("PATH=./bin:$PATH; ls").cwd(fx.root());
    process::run(spec, &config, CancellationToken::new(), None).await.unwrap();
    assert!(fx.exists("PLANTED_RAN"), "the control did not run the planted ls");
}
