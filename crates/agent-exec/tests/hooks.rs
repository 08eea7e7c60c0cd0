//! Hooks at the executor's dispatch point, with the real built-in tools: a deny holds for every
//! kind of tool (checked by its effect, not only its verdict), a replaced input is validated again,
//! a formatter runs after every edit, a hanging hook is cut at its time limit, and a script written
//! for Claude Code's hooks works unchanged apart from its matcher.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use agent_core::{CancellationToken, Effects, ToolCall, ToolErrorKind, ToolOutput};
use agent_exec::{
    AgentBuilder, Executor, Hook, HookEvent, Hooks, Outcome, PermissionMode, SchemaTool,
    hooks::HookProblem,
};
use agent_test_support::skipped;
use serde_json::json;

struct Fixture {
    dir: tempfile::TempDir,
    exec: Executor,
    /// Calls of the stand-in MCP tool that actually ran.
    mcp_runs: Arc<AtomicUsize>,
    problems: Arc<Mutex<Vec<HookProblem>>>,
}

/// An executor over a fresh workspace with the built-in tools, a stand-in MCP tool and `hooks`.
fn fixture(mode: PermissionMode, hooks: Vec<Hook>) -> Fixture {
    fixture_with(mode, hooks, |builder| builder)
}

fn fixture_with(
    mode: PermissionMode,
    hooks: Vec<Hook>,
    more: impl FnOnce(AgentBuilder) -> AgentBuilder,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
    let mcp_runs = Arc::new(AtomicUsize::new(0));
    let runs = Arc::clone(&mcp_runs);
    let schema =
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
    let mcp =
        SchemaTool::new("mcp__x__echo", "Echoes q.", schema, Effects::READ_ONLY, move |args, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok(ToolOutput::text(args["q"].to_string())) }
        })
        .unwrap();
    let problems = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&problems);
    let hooks = Hooks::new(hooks).on_problem(Arc::new(move |problem: &HookProblem| {
        sink.lock().unwrap().push(problem.clone())
    }));
    let builder = AgentBuilder::new(dir.path())
        .tools(agent_tools::builtin(&Default::default()).unwrap())
        .tool(Arc::new(mcp))
        .permission_mode(mode)
        .hooks(hooks);
    let exec = more(builder).build_executor().unwrap();
    Fixture { dir, exec, mcp_runs, problems }
}

impl Fixture {
    async fn call(&self, name: &str, arguments: serde_json::Value) -> Outcome {
        let call = ToolCall {
            call_id: "call_1".to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
            item_id: None,
            shape: agent_core::CallShape::Function,
        };
        self.exec.execute(&call, &CancellationToken::new()).await
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }
}

fn pre(command: &str) -> Hook {
    Hook::new(HookEvent::PreToolUse, command)
}

fn has_jq() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("jq").is_file()));
    if !found {
        skipped("jq is not installed; the Claude Code style hook scripts need it");
    }
    found
}

/// Asserts a call was refused by a hook and the observation carries the hook's reason.
#[track_caller]
fn check_blocked(outcome: &Outcome, reason: &str) {
    assert!(!outcome.ok, "{outcome:?}");
    assert_eq!(outcome.error_code, Some(ToolErrorKind::PermissionDenied), "{}", outcome.text);
    assert!(outcome.text.contains("a PreToolUse hook blocked this call"), "{}", outcome.text);
    assert!(outcome.text.contains(reason), "{}", outcome.text);
}

#[tokio::test]
async fn a_deny_hook_blocks_every_kind_of_tool() {
    let deny = pre("echo 'policy forbids it' >&2; exit 2");
    let fx = fixture(PermissionMode::Bypass, vec![deny]);

    let outcome = fx.call("bash", json!({"command": "touch ran_bash"})).await;
    check_blocked(&outcome, "policy forbids it");
    assert!(!fx.path("ran_bash").exists(), "the command ran");

    let outcome = fx.call("write_file", json!({"path": "new.txt", "content": "x"})).await;
    check_blocked(&outcome, "policy forbids it");
    assert!(!fx.path("new.txt").exists(), "the file was written");

    let edit = json!({"path": "a.txt", "old_string": "old", "new_string": "new"});
    check_blocked(&fx.call("edit_file", edit).await, "policy forbids it");
    assert_eq!(fx.read("a.txt"), "old\n", "the file was edited");

    let code = json!({"language": "javascript", "code": "6 * 7"});
    let outcome = fx.call("execute_code", code).await;
    check_blocked(&outcome, "policy forbids it");
    assert!(!outcome.text.contains("42"), "the code ran: {}", outcome.text);

    check_blocked(&fx.call("mcp__x__echo", json!({"q": "hi"})).await, "policy forbids it");
    assert_eq!(fx.mcp_runs.load(Ordering::SeqCst), 0, "the MCP tool ran");
}

#[tokio::test]
async fn matchers_use_claude_code_names_and_ours() {
    // `Write` is Claude Code's name for write_file (whose rule name is `Edit`); `mcp__x__.*` a
    // regex over MCP names; anything else is not matched and runs.
    let deny = pre("echo nope >&2; exit 2").matcher("Write|mcp__x__.*").unwrap();
    let fx = fixture(PermissionMode::Bypass, vec![deny]);
    check_blocked(&fx.call("write_file", json!({"path": "w.txt", "content": "x"})).await, "nope");
    assert!(!fx.path("w.txt").exists());
    check_blocked(&fx.call("mcp__x__echo", json!({"q": "hi"})).await, "nope");
    let outcome = fx.call("uppercase", json!({"text": "hi"})).await;
    assert!(outcome.ok, "{}", outcome.text);
    // Anchored: `Write` does not match `write_file` by substring, nor `Edit` match `edit_file`.
    let exact = pre("exit 2").matcher("file").unwrap();
    let fx = fixture(PermissionMode::Bypass, vec![exact]);
    assert!(fx.call("write_file", json!({"path": "w.txt", "content": "x"})).await.ok);
}

#[tokio::test]
async fn a_replaced_input_is_validated_again() {
    let replace = pre(
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":"c.txt","content":"from the hook\n"}}}'"#,
    );
    let fx = fixture(PermissionMode::Bypass, vec![replace]);
    let outcome =
        fx.call("write_file", json!({"path": "b.txt", "content": "from the model\n"})).await;
    assert!(outcome.ok, "{}", outcome.text);
    assert_eq!(fx.read("c.txt"), "from the hook\n");
    assert!(!fx.path("b.txt").exists());

    let invalid = pre(r#"echo '{"updatedInput":{"path":5}}'"#);
    let fx = fixture(PermissionMode::Bypass, vec![invalid]);
    let outcome = fx.call("write_file", json!({"path": "b.txt", "content": "x"})).await;
    assert_eq!(outcome.error_code, Some(ToolErrorKind::InvalidArguments), "{}", outcome.text);
    assert!(
        outcome.text.contains("a PreToolUse hook replaced this call's input"),
        "{}",
        outcome.text
    );
    assert!(!fx.path("b.txt").exists());
}

#[tokio::test]
async fn a_hook_allow_answers_an_ask_but_never_a_deny() {
    let allow = pre(
        r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"trusted"}}'"#,
    );
    // dont-ask refuses edits; the hook's allow lets this one run.
    let fx = fixture_with(PermissionMode::DontAsk, vec![allow.clone()], |b| {
        b.deny("Edit(./secret.txt)")
    });
    let outcome = fx.call("write_file", json!({"path": "new.txt", "content": "x"})).await;
    assert!(outcome.ok, "{}", outcome.text);
    assert!(fx.path("new.txt").exists());
    // A deny rule still holds.
    let outcome = fx.call("write_file", json!({"path": "secret.txt", "content": "x"})).await;
    assert_eq!(outcome.error_code, Some(ToolErrorKind::PermissionDenied), "{}", outcome.text);
    assert!(!fx.path("secret.txt").exists());

    // `ask` with nobody to ask refuses a call the policy would have allowed.
    let ask = pre(r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'"#);
    let fx = fixture(PermissionMode::Bypass, vec![ask]);
    let outcome = fx.call("write_file", json!({"path": "new.txt", "content": "x"})).await;
    assert!(!outcome.ok, "{}", outcome.text);
    assert!(!fx.path("new.txt").exists());
}

#[tokio::test]
async fn a_post_tool_use_formatter_rewrites_the_file_after_every_edit() {
    if !has_jq() {
        return;
    }
    // A formatter in the style of Claude Code's docs: it reads the file path from stdin.
    let format = Hook::new(
        HookEvent::PostToolUse,
        r#"f=$(jq -r '.tool_input.file_path'); tr a-z A-Z < "$f" > "$f.tmp" && mv "$f.tmp" "$f""#,
    )
    .matcher("Edit|Write")
    .unwrap();
    let fx = fixture(PermissionMode::Bypass, vec![format]);
    let outcome = fx.call("write_file", json!({"path": "f.txt", "content": "hello\n"})).await;
    assert!(outcome.ok, "{}", outcome.text);
    assert_eq!(fx.read("f.txt"), "HELLO\n");
    // The formatter changed the file after the write, so the model reads it again first.
    assert!(fx.call("read_file", json!({"path": "f.txt"})).await.ok);
    let edit = json!({"path": "f.txt", "old_string": "HELLO", "new_string": "hello world"});
    let outcome = fx.call("edit_file", edit).await;
    assert!(outcome.ok, "{}", outcome.text);
    assert_eq!(fx.read("f.txt"), "HELLO WORLD\n");
    // Not for tools the matcher does not name.
    let outcome = fx.call("uppercase", json!({"text": "x"})).await;
    assert!(outcome.ok);
}

#[tokio::test]
async fn a_hanging_hook_is_cut_at_its_timeout() {
    let hang = pre("sleep 30").timeout(Duration::from_millis(300));
    let fx = fixture(PermissionMode::Bypass, vec![hang]);
    let started = Instant::now();
    let outcome = fx.call("write_file", json!({"path": "n.txt", "content": "x"})).await;
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    // Fail open by default: reported, and the call runs.
    assert!(outcome.ok, "{}", outcome.text);
    assert!(fx.path("n.txt").exists());
    let problems = fx.problems.lock().unwrap().clone();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].problem.contains("timed out after 300ms"), "{}", problems[0]);

    let closed = pre("sleep 30").timeout(Duration::from_millis(300)).fail_closed(true);
    let fx = fixture(PermissionMode::Bypass, vec![closed]);
    let outcome = fx.call("write_file", json!({"path": "n.txt", "content": "x"})).await;
    check_blocked(&outcome, "timed out after 300ms");
    assert!(!fx.path("n.txt").exists());
}

#[tokio::test]
async fn a_broken_hook_is_reported_and_ignored_unless_fail_closed() {
    for command in ["echo '{not json'", "exit 3", "kill -9 $$"] {
        let fx = fixture(PermissionMode::Bypass, vec![pre(command)]);
        let outcome = fx.call("write_file", json!({"path": "n.txt", "content": "x"})).await;
        assert!(outcome.ok, "{command}: {}", outcome.text);
        assert_eq!(fx.problems.lock().unwrap().len(), 1, "{command}");

        let fx = fixture(PermissionMode::Bypass, vec![pre(command).fail_closed(true)]);
        let outcome = fx.call("write_file", json!({"path": "n.txt", "content": "x"})).await;
        assert!(!outcome.ok, "{command}: {}", outcome.text);
        assert!(!fx.path("n.txt").exists(), "{command}");
    }
}

#[tokio::test]
async fn context_and_stop_reach_the_observation_and_the_loop() {
    let context = Hook::new(
        HookEvent::PostToolUse,
        r#"echo '{"continue":false,"stopReason":"enough","hookSpecificOutput":{"additionalContext":"remember the style guide"}}'"#,
    );
    let fx = fixture(PermissionMode::Bypass, vec![context]);
    let outcome = fx.call("uppercase", json!({"text": "hi"})).await;
    assert!(outcome.ok);
    assert!(
        outcome.text.starts_with("HI\n[PostToolUse hook] remember the style guide"),
        "{}",
        outcome.text
    );
    assert_eq!(outcome.stop.as_deref(), Some("enough"));

    let failure = Hook::new(HookEvent::PostToolUseFailure, "cat > failure.json");
    let fx = fixture(PermissionMode::Bypass, vec![failure]);
    let outcome = fx.call("read_file", json!({"path": "missing.txt"})).await;
    assert!(!outcome.ok);
    let input: serde_json::Value = serde_json::from_str(&fx.read("failure.json")).unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUseFailure");
    assert_eq!(input["tool_name"], "Read");
    assert_eq!(input["agent_tool_name"], "read_file");
    assert_eq!(input["error_code"], "not_found");
    assert_eq!(input["tool_input"]["file_path"], fx.path("missing.txt").display().to_string());
}

#[tokio::test]
async fn hooks_get_claude_code_fields_on_stdin() {
    let record = pre("cat > input.json");
    let fx = fixture(PermissionMode::Bypass, vec![record]);
    assert!(
        fx.call("bash", json!({"command": "true"})).await.error_code
            != Some(ToolErrorKind::PermissionDenied)
    );
    let input: serde_json::Value = serde_json::from_str(&fx.read("input.json")).unwrap();
    let root = fx.dir.path().display().to_string();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["session_id"], "session");
    assert_eq!(input["cwd"], root);
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "true"}));
    assert_eq!(input["tool_use_id"], "call_1");
    assert_eq!(input["permission_mode"], "bypass");
    assert!(input.get("transcript_path").is_some());
}

/// The example from Claude Code's hooks documentation, as a file, unchanged.
const CLAUDE_CODE_SCRIPT: &str = r#"#!/bin/bash
command=$(jq -r '.tool_input.command')
if echo "$command" | grep -q 'rm -rf'; then
  echo "Dangerous command blocked: $command" >&2
  exit 2
fi
exit 0
"#;

#[tokio::test]
async fn a_claude_code_style_script_works_with_only_its_matcher() {
    if !has_jq() {
        return;
    }
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("block-rm.sh");
    std::fs::write(&script, CLAUDE_CODE_SCRIPT).unwrap();
    set_executable(&script);
    let hook = pre(&script.display().to_string()).matcher("Bash").unwrap();
    let fx = fixture(PermissionMode::Bypass, vec![hook]);
    std::fs::create_dir(fx.path("victim")).unwrap();
    std::fs::write(fx.path("victim/keep.txt"), "x").unwrap();

    let outcome = fx.call("bash", json!({"command": "rm -rf victim"})).await;
    check_blocked(&outcome, "Dangerous command blocked: rm -rf victim");
    assert!(fx.path("victim/keep.txt").exists(), "the directory was removed");

    // Other commands pass the script and run (where the sandbox can run them).
    let outcome = fx.call("bash", json!({"command": "echo fine > ok.txt"})).await;
    if outcome.error_code == Some(ToolErrorKind::SandboxUnavailable) {
        return skipped(&format!("the OS sandbox cannot run commands here: {}", outcome.text));
    }
    assert!(outcome.ok, "{}", outcome.text);
    assert_eq!(fx.read("ok.txt"), "fine\n");
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// An agent over `recording` (played back as the model) with `hooks`.
fn agent(dir: &Path, hooks: Vec<Hook>, recording: Vec<agent_core::Item>) -> agent_exec::Agent {
    AgentBuilder::new(dir)
        .tools(agent_tools::builtin(&Default::default()).unwrap())
        .hooks(Hooks::new(hooks))
        .build(agent_model::ReplayClient::new("recording", recording))
        .unwrap()
}

fn message(role: &str, text: &str) -> agent_core::Item {
    let message = match role {
        "user" => agent_core::Message::user(text),
        _ => agent_core::Message::assistant(text),
    };
    agent_core::Item::Message(message)
}

#[tokio::test]
async fn a_stop_hook_that_blocks_sends_its_reason_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let stop = Hook::new(
        HookEvent::Stop,
        r#"grep -q '"stop_hook_active":true' && exit 0; echo 'run the tests first' >&2; exit 2"#,
    );
    let recording = vec![
        message("user", "go"),
        message("assistant", "done"),
        message("user", "run the tests first"),
        message("assistant", "tests pass, done"),
    ];
    let mut agent = agent(dir.path(), vec![stop], recording);
    let finish = agent.prompt("go").await;
    assert_eq!(finish, agent_exec::agent::Finish::Answered("tests pass, done".to_owned()));
    let items = &agent.conversation().items;
    assert_eq!(items[2], message("user", "run the tests first"), "{items:?}");
}

#[tokio::test]
async fn a_prompt_hook_adds_context_to_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let context = Hook::new(HookEvent::UserPromptSubmit, "echo 'branch: main'");
    let recording = vec![message("user", "go"), message("assistant", "ok")];
    let mut agent = agent(dir.path(), vec![context], recording);
    agent.prompt("go").await;
    assert_eq!(agent.conversation().items[0], message("user", "go\n\nbranch: main"));
}

/// An approver that takes `wait` to say yes, as a person reading the prompt does.
struct Slow(Duration);

impl agent_exec::Approver for Slow {
    fn approve<'a>(
        &'a self,
        _request: &'a agent_exec::ApprovalRequest,
    ) -> agent_core::BoxFuture<'a, agent_exec::Approval> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            agent_exec::Approval::AllowOnce
        })
    }
}

#[tokio::test]
async fn with_hooks_the_duration_still_leaves_out_the_wait_for_approval() {
    let wait = Duration::from_millis(600);
    let fx = fixture_with(PermissionMode::Default, vec![pre("true")], |builder| {
        builder.approver(Arc::new(Slow(wait)))
    });
    let started = Instant::now();
    let outcome = fx.call("write_file", json!({"path": "n.txt", "content": "x"})).await;
    assert!(outcome.ok, "{}", outcome.text);
    assert!(started.elapsed() >= wait, "the approver was waited for");
    assert!(outcome.duration < wait / 2, "{:?} includes the approval wait", outcome.duration);
    assert_eq!(fx.read("n.txt"), "x");
}

#[tokio::test]
async fn a_notification_hook_reads_its_type_and_message_and_its_matcher_picks_the_type() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("notified.jsonl");
    let append = format!("cat >> '{}'; echo >> '{}'", log.display(), log.display());
    let hooks = vec![
        // A hook that says block: a notification has nothing to block, and the next one runs.
        Hook::new(HookEvent::Notification, "echo no >&2; exit 2"),
        Hook::new(HookEvent::Notification, append.clone()).matcher("permission_prompt").unwrap(),
        Hook::new(HookEvent::Notification, append).matcher("idle_prompt").unwrap(),
    ];
    let hooks =
        Hooks::new(hooks).session("s1", dir.path()).permission_mode(PermissionMode::Default);
    assert!(hooks.wants_notification("idle_prompt"));
    assert!(!Hooks::new(vec![Hook::new(HookEvent::Stop, "true")]).wants_notification("x"));
    let cancel = CancellationToken::new();
    hooks.notification("permission_prompt", "approval waiting: bash", &cancel).await;
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "only the permission_prompt hook ran: {text}");
    assert_eq!(lines[0]["hook_event_name"], "Notification");
    assert_eq!(lines[0]["notification_type"], "permission_prompt");
    assert_eq!(lines[0]["message"], "approval waiting: bash");
    assert_eq!(lines[0]["session_id"], "s1");
    assert_eq!(lines[0]["permission_mode"], "default");
}
