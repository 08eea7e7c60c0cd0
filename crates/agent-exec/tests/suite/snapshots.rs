//! Snapshots of the texts a model reads: error observations and the truncation notice.

use std::time::Duration;

use agent_exec::{Approval, PermissionMode, RuleAction};

use super::support::{Scripted, Setup, fixture};

#[tokio::test]
async fn error_observations() {
    let fx = fixture(Setup {
        rules: &[(RuleAction::Deny, "Bash(git push *)")],
        config: |config| config.default_timeout = Duration::from_millis(200),
        ..Setup::default()
    });
    std::os::unix::fs::symlink("/etc", fx.dir.path().join("etc-link")).unwrap();
    let cases = [
        ("nope", "{}"),
        ("Uppercase", r#"{"text":"a"}"#),
        ("uppercase", r#"{"text": "a"#),
        ("uppercase", ""),
        ("uppercase", "null"),
        ("uppercase", "[1]"),
        ("uppercase", r#"{"text": 5}"#),
        ("uppercase", r#"{"text": "a", "extra": 1}"#),
        ("panicker", "{}"),
        ("stubborn", "{}"),
        ("read_file", r#"{"path": "etc-link/hostname"}"#),
        ("read_file", r#"{"path": "../../../../../../../../outside"}"#),
        ("bash", r#"{"command": "git status && git push"}"#),
        ("bash", r#"{"command": "cargo test -p agent-exec"}"#),
        ("bash", r#"{"command": "echo $(cat /etc/passwd)"}"#),
        ("bash", r#"{"command": "PATH=./bin:$PATH ls"}"#),
        ("bash", r#"{"command": "RUST_LOG=debug cargo test"}"#),
        ("bash", r#"{"command": "cd .github/workflows && touch x.yml"}"#),
        ("bash", r#"{"command": "cd \"$X\" && ls"}"#),
        ("write_file", r#"{"path": "src/main.rs", "content": "x"}"#),
        ("write_file", r#"{"path": ".git/config", "content": "x"}"#),
        ("web_search", r#"{"domain": "docs.rs"}"#),
    ];
    let mut report = String::new();
    for (tool, arguments) in cases {
        let outcome = fx.run(tool, arguments).await;
        report.push_str(&format!("{tool} {arguments}\n{}\n\n", fx.redact(&outcome.text)));
    }
    insta::assert_snapshot!(report);
}

#[tokio::test]
async fn plan_mode_and_rejection_observations() {
    let plan = fixture(Setup { mode: PermissionMode::Plan, ..Setup::default() });
    let outcome = plan.run("write_file", r#"{"path": "src/main.rs", "content": "x"}"#).await;
    let mut report = format!("plan write\n{}\n\n", plan.redact(&outcome.text));
    let outcome = plan.run("bash", r#"{"command": "cargo build"}"#).await;
    report.push_str(&format!("plan bash\n{}\n\n", plan.redact(&outcome.text)));

    let approver = Scripted::new(Approval::Deny { reason: Some("use a branch".to_owned()) });
    let fx = fixture(Setup { approver: Some(approver), ..Setup::default() });
    let outcome = fx.run("bash", r#"{"command": "git commit -am wip"}"#).await;
    report.push_str(&format!("rejected\n{}\n\n", fx.redact(&outcome.text)));

    let fx = fixture(Setup { mode: PermissionMode::DontAsk, ..Setup::default() });
    let outcome = fx.run("web_search", r#"{"domain": "docs.rs"}"#).await;
    report.push_str(&format!("dont-ask\n{}\n", fx.redact(&outcome.text)));
    insta::assert_snapshot!(report);
}

#[tokio::test]
async fn truncation_notice() {
    let fx = fixture(Setup { config: |config| config.output_cap = 1000, ..Setup::default() });
    let outcome = fx.run("big_printer", r#"{"lines": 300, "width": 20}"#).await;
    assert!(outcome.truncated);
    insta::assert_snapshot!(fx.redact(&outcome.text));
}

#[tokio::test]
async fn truncation_notice_for_one_long_line() {
    let fx = fixture(Setup { config: |config| config.output_cap = 1000, ..Setup::default() });
    let outcome = fx.run("big_printer", r#"{"lines": 1, "width": 3000}"#).await;
    insta::assert_snapshot!(fx.redact(&outcome.text));
}
