//! The registry, the happy path, schema-only tools, approvals and per-tool limits.

use std::sync::Arc;

use agent_core::{BoxFuture, CancellationToken, Effects, ToolErrorKind, ToolOutput, Typed};
use agent_exec::{
    Approval, ApprovalRequest, Approver, Executor, ExecutorConfig, PermissionMode,
    PermissionPolicy, Registry, SchemaTool, ToolLimits, Workspace,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Echo, Scripted, Setup, Uppercase, call, fixture};

#[test]
fn duplicate_names_and_aliases_are_refused_naming_both_tools() {
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap();
    let err = registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `uppercase` cannot be registered: the name `uppercase` is already used by tool `uppercase`"
    );
    let shout = SchemaTool::new(
        "shout",
        "x",
        json!({"type": "object"}),
        Effects::READ_ONLY,
        |_, _| async { Ok(ToolOutput::text("")) },
    )
    .unwrap();
    let err = registry.register(Arc::new(shout)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `shout` cannot be registered: the name `shout` is already used by tool `uppercase`"
    );
}

#[test]
fn specs_keep_registration_order_and_unregister_works() {
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(Echo).unwrap())).unwrap();
    let names: Vec<&str> = registry.specs().map(|spec| spec.name.as_str()).collect();
    assert_eq!(names, ["uppercase", "echo"]);
    assert!(registry.get("shout").is_some());
    assert!(registry.unregister("shout").is_none(), "aliases are not names");
    assert!(registry.unregister("uppercase").is_some());
    assert!(registry.get("shout").is_none());
    assert_eq!(registry.get("echo").unwrap().spec().name, "echo");
    assert_eq!(registry.len(), 1);
    registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap();
    let names: Vec<&str> = registry.specs().map(|spec| spec.name.as_str()).collect();
    assert_eq!(names, ["echo", "uppercase"]);
}

#[tokio::test]
async fn a_successful_call_gives_the_tools_text_and_a_call_output() {
    let fx = fixture(Setup::default());
    let outcome = fx.run("uppercase", r#"{"text":"straße"}"#).await;
    assert_eq!(outcome.text, "STRASSE");
    assert!(outcome.ok && !outcome.truncated && outcome.error_code.is_none());
    let item = outcome.into_call_output();
    assert_eq!(
        serde_json::to_value(&item).unwrap(),
        json!({"call_id": "call_1", "output": "STRASSE", "ok": true})
    );
}

#[tokio::test]
async fn schema_tools_validate_against_their_schema() {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"days": {"type": "integer", "minimum": 1}},
        "required": ["days"],
    });
    let tool = SchemaTool::new(
        "forecast",
        "Weather.",
        schema,
        Effects::READ_ONLY,
        |args, _ctx| async move { Ok(ToolOutput::text(format!("{} days", args["days"]))) },
    )
    .unwrap()
    .with_aliases(&["weather"]);
    let mut registry = Registry::new();
    registry.register(Arc::new(tool)).unwrap();
    let policy =
        PermissionPolicy::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Default);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("s"));
    let token = CancellationToken::new();
    let outcome = exec.execute(&call("c", "weather", r#"{"days": 3}"#), &token).await;
    assert_eq!(
        (outcome.ok, outcome.text.as_str(), outcome.tool.as_str()),
        (true, "3 days", "forecast")
    );
    let outcome = exec.execute(&call("c", "forecast", r#"{"days": 0}"#), &token).await;
    assert_eq!(outcome.error_code, Some(ToolErrorKind::InvalidArguments), "{}", outcome.text);
    assert!(outcome.text.contains("$.days"), "{}", outcome.text);
    assert!(!exec.registry().get("forecast").unwrap().spec().strict);
}

#[test]
fn a_schema_that_does_not_compile_is_refused() {
    let bad = json!({"type": "object", "properties": {"x": {"type": "no-such-type"}}});
    let err = SchemaTool::new("bad", "x", bad, Effects::READ_ONLY, |_, _| async {
        Ok(ToolOutput::text(""))
    })
    .unwrap_err();
    assert!(err.to_string().starts_with("tool `bad` has an invalid schema"), "{err}");
}

#[tokio::test]
async fn allow_for_session_stops_asking_for_the_same_kind_of_call() {
    let approver = Scripted::new(Approval::AllowForSession);
    let fx = fixture(Setup { approver: Some(approver.clone()), ..Setup::default() });
    let first = fx.run("bash", r#"{"command": "cargo test -p a"}"#).await;
    assert!(first.ok, "{}", first.text);
    assert_eq!(approver.asked.lock().unwrap()[0].suggested_rules, ["Bash(cargo test *)"]);
    let second = fx.run("bash", r#"{"command": "cargo test -p b"}"#).await;
    assert!(second.ok);
    assert_eq!(approver.count(), 1, "the session grant covers the second call");
    let other = fx.run("bash", r#"{"command": "cargo build"}"#).await;
    assert!(other.ok);
    assert_eq!(approver.count(), 2, "a different command asks again");
}

#[tokio::test]
async fn allow_once_asks_every_time() {
    let approver = Scripted::new(Approval::AllowOnce);
    let fx = fixture(Setup { approver: Some(approver.clone()), ..Setup::default() });
    for _ in 0..2 {
        assert!(fx.run("write_file", r#"{"path": "a.txt", "content": ""}"#).await.ok);
    }
    assert_eq!(approver.count(), 2);
}

/// An approver that takes `wait` to answer yes, as a person reading the prompt does.
struct Slow(std::time::Duration);

impl agent_exec::Approver for Slow {
    fn approve<'a>(
        &'a self,
        _request: &'a agent_exec::ApprovalRequest,
    ) -> agent_core::BoxFuture<'a, Approval> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            Approval::AllowOnce
        })
    }
}

#[tokio::test]
async fn the_duration_leaves_out_the_wait_for_approval() {
    let wait = std::time::Duration::from_millis(400);
    let fx = fixture(Setup { approver: Some(Arc::new(Slow(wait))), ..Setup::default() });
    let started = std::time::Instant::now();
    let outcome = fx.run("write_file", r#"{"path": "a.txt", "content": ""}"#).await;
    assert!(outcome.ok, "{}", outcome.text);
    assert!(started.elapsed() >= wait, "the approver was waited for");
    assert!(outcome.duration < wait / 2, "{:?} includes the approval wait", outcome.duration);
}

#[tokio::test]
async fn dont_ask_mode_never_calls_the_approver() {
    let approver = Scripted::new(Approval::AllowOnce);
    let fx = fixture(Setup {
        mode: PermissionMode::DontAsk,
        approver: Some(approver.clone()),
        ..Setup::default()
    });
    let outcome = fx.run("write_file", r#"{"path": "a.txt", "content": ""}"#).await;
    assert_eq!(outcome.error_code, Some(ToolErrorKind::PermissionDenied));
    assert!(outcome.text.contains("the permission mode is dont-ask"), "{}", outcome.text);
    assert_eq!(approver.count(), 0);
}

/// An approver that serves callers who cannot be asked (an MCP client without elicitation).
struct Unaskable(Arc<Scripted>);

impl Approver for Unaskable {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.0.approve(request)
    }
    fn can_answer(&self, _request: &ApprovalRequest) -> bool {
        false
    }
}

#[tokio::test]
async fn a_call_the_approver_cannot_answer_is_refused_as_without_one() {
    let approver = Scripted::new(Approval::AllowOnce);
    let unaskable = Arc::new(Unaskable(approver.clone()));
    let fx = fixture(Setup { approver: Some(unaskable), ..Setup::default() });
    let outcome = fx.run("write_file", r#"{"path": "a.txt", "content": ""}"#).await;
    assert_eq!(outcome.error_code, Some(ToolErrorKind::PermissionDenied));
    assert!(outcome.text.contains("this run is non-interactive"), "{}", outcome.text);
    assert!(outcome.text.contains("Edit(./a.txt)"), "{}", outcome.text);
    assert_eq!(approver.count(), 0);
    assert!(!fx.dir.path().join("a.txt").exists());
}

#[tokio::test]
async fn per_tool_limits_override_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::new();
    let limits = ToolLimits { output_cap: Some(1000), timeout: None };
    registry.register_with_limits(Arc::new(Typed::new(Echo).unwrap()), limits).unwrap();
    let policy =
        PermissionPolicy::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Default);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("s"));
    let text: String = (0..500).map(|i| format!("line {i}\\n")).collect();
    let outcome = exec
        .execute(&call("c", "echo", &format!(r#"{{"text":"{text}"}}"#)), &CancellationToken::new())
        .await;
    assert!(outcome.truncated);
    assert!(outcome.text.chars().count() <= 1000, "{}", outcome.text.len());
    assert!(
        outcome
            .text
            .contains("the full output could not be saved: no session directory is configured")
    );
}

#[test]
fn plan_mode_and_bare_deny_rules_hide_tools() {
    let fx = fixture(Setup {
        mode: PermissionMode::Plan,
        rules: &[(agent_exec::RuleAction::Deny, "WebSearch")],
        ..Setup::default()
    });
    let names: Vec<String> = fx.exec.specs().into_iter().map(|spec| spec.name).collect();
    assert_eq!(names, ["uppercase", "echo", "panicker", "stubborn", "big_printer", "read_file"]);
}
