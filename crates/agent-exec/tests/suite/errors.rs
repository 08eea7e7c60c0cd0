//! One test per error code: each failure is an outcome with its code and a readable message.

use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ToolErrorKind};
use agent_exec::{Approval, PermissionMode, Remedy, RuleAction};

use super::support::{Scripted, Setup, call, fixture};

#[track_caller]
fn assert_error(outcome: &agent_exec::Outcome, code: &str, message_part: &str) {
    assert!(!outcome.ok, "{outcome:?}");
    assert_eq!(outcome.error_code, Some(ToolErrorKind::from_code(code)), "{}", outcome.text);
    let observation: serde_json::Value = serde_json::from_str(&outcome.text).unwrap();
    assert_eq!(observation["ok"], false);
    assert_eq!(observation["error"], code);
    let message = observation["message"].as_str().unwrap();
    assert!(message.contains(message_part), "{message:?} lacks {message_part:?}");
    assert_eq!(outcome.call_id, "call_1");
}

#[tokio::test]
async fn unknown_tool_lists_the_tools_and_suggests_a_near_miss() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("nope", "{}").await;
    assert_error(&outcome, "unknown_tool", "uppercase, echo");
    assert_eq!(outcome.tool, "nope");
    let outcome = fx.run("Read-File", "{}").await;
    assert_error(&outcome, "unknown_tool", "did you mean `read_file`?");
}

#[tokio::test]
async fn an_alias_runs_the_tool_under_its_own_name() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("shout", r#"{"text":"hi"}"#).await;
    assert!(outcome.ok, "{outcome:?}");
    assert_eq!(outcome.text, "HI");
    assert_eq!(outcome.tool, "uppercase");
}

#[tokio::test]
async fn invalid_json_in_every_shape() {
    let fx = fixture(Setup::default());
    for arguments in [r#"{"text": "a"#, "", "null", "[1, 2]", "\"text\"", "{} {}"] {
        let outcome = fx.run("uppercase", arguments).await;
        assert_error(&outcome, "invalid_json", "send the arguments as one JSON object");
    }
}

#[tokio::test]
async fn a_ten_megabyte_argument_string_is_refused_without_echoing_it() {
    let fx = fixture(Setup::default());
    let garbage = "x".repeat(10 * 1024 * 1024);
    let started = Instant::now();
    let outcome = fx.run("uppercase", &garbage).await;
    assert_error(
        &outcome,
        "invalid_json",
        "not a valid JSON object: expected value at line 1 column 1;",
    );
    assert!(
        outcome.text.len() < 1000,
        "the observation echoes the input: {} bytes",
        outcome.text.len()
    );
    // Linear work takes well under a second even in a debug build on a loaded machine; the bound
    // only catches work that grows with the square of the input, which would take minutes.
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());

    // A valid 10 MB argument runs, and its output is capped.
    let arguments = format!(r#"{{"text":"{}"}}"#, "y".repeat(10 * 1024 * 1024));
    let outcome = fx.run("uppercase", &arguments).await;
    assert!(outcome.ok && outcome.truncated, "{:?}", &outcome.text[..200]);
    assert!(outcome.text.chars().count() <= 12_000 + 600, "{}", outcome.text.len());
}

#[tokio::test]
async fn schema_mismatch_names_the_path() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("uppercase", r#"{"text": 5}"#).await;
    assert_error(&outcome, "invalid_arguments", "$.text");
    let outcome = fx.run("uppercase", r#"{}"#).await;
    assert_error(&outcome, "invalid_arguments", "text");
}

#[tokio::test]
async fn a_panicking_tool_is_a_tool_error() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("panicker", "{}").await;
    assert_error(&outcome, "tool_error", "index out of bounds");
    // The executor is still usable.
    assert!(fx.run("echo", r#"{"text":"still here"}"#).await.ok);
}

#[tokio::test]
async fn a_tool_that_ignores_cancellation_is_abandoned_after_its_timeout() {
    let fx = fixture(Setup {
        config: |config| config.default_timeout = Duration::from_millis(200),
        ..Setup::default()
    });
    let started = Instant::now();
    let outcome = fx.run("stubborn", "{}").await;
    assert_error(&outcome, "timeout", "timed out after 200ms");
    assert_error(&outcome, "timeout", "did not stop within 100ms and was abandoned");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_cooperative_tool_stops_on_timeout() {
    let fx = fixture(Setup {
        config: |config| config.default_timeout = Duration::from_millis(100),
        ..Setup::default()
    });
    let mut registry = agent_exec::Registry::new();
    let overlap = std::sync::Arc::default();
    let sleeper = super::support::SleeperTool::new(super::support::Sleeper {
        name: "sleep",
        writes: false,
        overlap,
    });
    registry.register(std::sync::Arc::new(sleeper)).unwrap();
    let policy = agent_exec::PermissionPolicy::new(
        fx.exec.policy().workspace().clone(),
        PermissionMode::Default,
    );
    let exec = agent_exec::Executor::new(registry, policy, fx.exec.config().clone());
    let outcome =
        exec.execute(&call("call_1", "sleep", r#"{"ms": 5000}"#), &CancellationToken::new()).await;
    assert_error(&outcome, "timeout", "timed out after 100ms; the tool was stopped");
}

#[tokio::test]
async fn fifty_megabytes_of_output_are_capped_and_saved() {
    let fx = fixture(Setup::default());
    let started = Instant::now();
    // 500,000 lines of 100 characters: 50 MB.
    let outcome = fx.run("big_printer", r#"{"lines": 500000, "width": 99}"#).await;
    assert!(outcome.ok && outcome.truncated);
    assert!(outcome.text.chars().count() <= 12_000, "{}", outcome.text.len());
    assert!(
        outcome.text.starts_with("[output truncated: 500000 lines, 50000000 characters;"),
        "{}",
        &outcome.text[..300]
    );
    assert!(outcome.text.contains("\n1:xx"));
    assert!(outcome.text.ends_with(&format!("\n500000:{}\n", "x".repeat(92))));
    let saved = fx.session.path().join("outputs/call_1.txt");
    assert!(outcome.text.contains(&saved.display().to_string()));
    assert_eq!(std::fs::metadata(&saved).unwrap().len(), 50_000_000);
    // As above: a bound for quadratic work, not a benchmark (that is `cargo xtask bench`).
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_single_huge_line_is_capped() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("big_printer", r#"{"lines": 1, "width": 5000000}"#).await;
    assert!(outcome.ok && outcome.truncated);
    assert!(outcome.text.chars().count() <= 12_000);
    assert!(outcome.text.contains("characters from the middle of a long line"));
}

#[tokio::test]
async fn a_symlink_out_of_the_workspace_is_outside_workspace() {
    let fx = fixture(Setup::default());
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.dir.path().join("link")).unwrap();
    let outcome = fx.run("read_file", r#"{"path": "link/secret.txt"}"#).await;
    assert_error(&outcome, "outside_workspace", "through a symlink");
    assert!(!outcome.text.contains("top secret"));
    let outcome = fx.run("read_file", r#"{"path": "../../etc/passwd"}"#).await;
    assert_error(&outcome, "outside_workspace", "outside the workspace");
    let outcome = fx.run("read_file", r#"{"path": "src/lib.rs"}"#).await;
    assert_eq!(outcome.text, "fn main() {}\n");
}

#[tokio::test]
async fn a_deny_rule_is_permission_denied() {
    let fx = fixture(Setup {
        mode: PermissionMode::Bypass,
        rules: &[(RuleAction::Deny, "Bash(git push *)")],
        ..Setup::default()
    });
    let outcome = fx.run("bash", r#"{"command": "git status && git push origin main"}"#).await;
    assert_error(&outcome, "permission_denied", "blocked by deny rule `Bash(git push *)` (test)");
}

#[tokio::test]
async fn an_ask_answered_no_is_rejected_with_the_reason() {
    let approver = Scripted::new(Approval::Deny { reason: Some("not on main".to_owned()) });
    let fx = fixture(Setup { approver: Some(approver.clone()), ..Setup::default() });
    let outcome = fx.run("write_file", r#"{"path": "src/new.rs", "content": "x"}"#).await;
    assert_error(&outcome, "rejected", "the user rejected this call: not on main");
    assert_eq!(approver.count(), 1);
}

#[tokio::test]
async fn non_interactive_runs_carry_what_would_allow_the_call_without_naming_flags() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("write_file", r#"{"path": "src/new.rs", "content": "x"}"#).await;
    assert_error(
        &outcome,
        "permission_denied",
        "the user can allow it with the rule `Edit(./src/new.rs)`, or by switching to the accept-edits permission mode",
    );
    let remedy = Remedy {
        rules: vec!["Edit(./src/new.rs)".to_owned()],
        mode: Some(PermissionMode::AcceptEdits),
    };
    assert_eq!(outcome.remedy, Some(remedy));
    let outcome = fx.run("bash", r#"{"command": "cargo test -p x"}"#).await;
    assert_error(&outcome, "permission_denied", "with the rule `Bash(cargo test *)`");
    assert_eq!(outcome.remedy.unwrap().rules, ["Bash(cargo test *)"]);
    assert!(!outcome.text.contains("--"), "{}", outcome.text);
    let outcome = fx.run("bash", r#"{"command": "echo $(id)"}"#).await;
    assert_error(&outcome, "permission_denied", "or by switching to the bypass permission mode");
    let outcome = fx.run("write_file", r#"{"path": ".git/config", "content": "x"}"#).await;
    assert_error(&outcome, "permission_denied", "only the user can allow it");
    assert_eq!(outcome.remedy, Some(Remedy::default()));
}

#[tokio::test]
async fn asked_and_answered_calls_carry_no_remedy() {
    let fx =
        fixture(Setup { approver: Some(Scripted::new(Approval::AllowOnce)), ..Setup::default() });
    let outcome = fx.run("bash", r#"{"command": "cargo test -p x"}"#).await;
    assert!(outcome.ok && outcome.remedy.is_none(), "{outcome:?}");
}

#[tokio::test]
async fn cancelling_before_the_call_starts_is_cancelled() {
    let fx = fixture(Setup::default());
    let token = CancellationToken::new();
    token.cancel();
    let outcome = fx.exec.execute(&call("call_1", "echo", r#"{"text":"x"}"#), &token).await;
    assert_error(&outcome, "cancelled", "cancelled before it ran");
}

#[tokio::test]
async fn cancelling_a_running_call_is_cancelled_with_its_duration() {
    let fx = fixture(Setup::default());
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let outcome = fx.exec.execute(&call("call_1", "stubborn", "{}"), &token).await;
    assert_error(&outcome, "cancelled", "the call was cancelled after");
}

#[tokio::test]
async fn tool_specific_codes_pass_through() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("read_file", r#"{"path": "missing.txt"}"#).await;
    assert_error(&outcome, "not_found", "No such file");
}
