//! Hooks from the config file and the project: a direct `agent tools call` passes them like a
//! model's call, `exec` runs them around the model's calls, and untrusted project hooks stay out.

use std::path::Path;

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{agent, data_dir, exec::exec, stderr, stdout};

const DENY_ALL: &str = r#"
[[hooks.PreToolUse]]
command = "echo 'hooks say no' >&2; exit 2"
"#;

/// Writes `toml` as the config file of `workspace` and returns the `--config` arguments.
fn config(workspace: &Path, toml: &str) -> String {
    let path = workspace.join("config.toml");
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

#[test]
fn a_direct_tool_call_passes_the_deny_hook() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), DENY_ALL);
    let args =
        ["--config", &config, "tools", "call", "write_file", r#"{"path":"x.txt","content":"x"}"#];
    let output = agent(dir.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stdout(&output).contains("hooks say no"), "{}", stdout(&output));
    assert!(!dir.path().join("x.txt").exists(), "the file was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_hooks_around_the_models_calls() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        r#"
[[hooks.PreToolUse]]
matcher = "Write"
command = "echo 'no writes today' >&2; exit 2"

[[hooks.Stop]]
command = "echo stopped > stop.txt"
"#,
    );
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new(
            "call_w",
            "write_file",
            json!({"path": "w.txt", "content": "x"}),
        )]),
        Turn::text("I could not write."),
    ];
    let args =
        ["--api", "chat", "--config", &config, "--permission-mode", "bypass", "exec", "write"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!dir.path().join("w.txt").exists());
    let tool = &bodies[1]["messages"][3];
    assert!(tool["content"].as_str().unwrap().contains("no writes today"), "{tool}");
    assert_eq!(std::fs::read_to_string(dir.path().join("stop.txt")).unwrap(), "stopped\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_leaves_untrusted_project_hooks_out_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".agent")).unwrap();
    let project = "[[hooks.UserPromptSubmit]]\ncommand = \"touch project-hook-ran\"\n";
    std::fs::write(dir.path().join(".agent/hooks.toml"), project).unwrap();
    let turns = vec![Turn::text("hi")];
    let (output, _) = exec(dir.path(), turns, &["--api", "chat", "exec", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(".agent/hooks.toml has 1 hook(s) that are not trusted"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("project-hook-ran").exists(), "an untrusted project hook ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_prompt_hook_can_block_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'no secrets in prompts' >&2; exit 2\"\n",
    );
    let turns = vec![Turn::text("should not be asked")];
    let (output, bodies) =
        exec(dir.path(), turns, &["--api", "chat", "--config", &config, "exec", "x"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(bodies.is_empty(), "the model was asked");
    assert!(stderr(&output).contains("no secrets in prompts"), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_project_file_runs_and_a_changed_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".agent")).unwrap();
    let project = "[[hooks.UserPromptSubmit]]\ncommand = \"touch project-hook-ran\"\n";
    std::fs::write(dir.path().join(".agent/hooks.toml"), project).unwrap();
    // What the REPL writes when the user says yes: the workspace and the exact text trusted.
    let workspace = dir.path().canonicalize().unwrap().display().to_string();
    let data = data_dir(dir.path());
    std::fs::create_dir_all(&data).unwrap();
    let trusted = json!({ workspace: project }).to_string();
    std::fs::write(data.join("trusted-hooks.json"), trusted).unwrap();
    let (output, _) =
        exec(dir.path(), vec![Turn::text("hi")], &["--api", "chat", "exec", "x"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.path().join("project-hook-ran").exists(), "the trusted hook did not run");

    // One changed byte and the file is untrusted again.
    std::fs::remove_file(dir.path().join("project-hook-ran")).unwrap();
    std::fs::write(dir.path().join(".agent/hooks.toml"), project.replace("touch", "touch "))
        .unwrap();
    let (output, _) =
        exec(dir.path(), vec![Turn::text("hi")], &["--api", "chat", "exec", "x"]).await;
    assert!(stderr(&output).contains("not trusted yet"), "{}", stderr(&output));
    assert!(!dir.path().join("project-hook-ran").exists(), "a changed project hook ran");
}
