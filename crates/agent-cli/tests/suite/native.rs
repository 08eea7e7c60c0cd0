//! OpenAI's native tool shapes through the binary, against the scripted Responses server: the
//! `shell` built-in (each command a `bash` call under the session's rules), the `apply_patch`
//! built-in and freeform shapes, what a profile offers (`tools list`), and the new items through
//! `--resume` and `--replay`.

use std::path::Path;

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, data_dir, exec::exec, session_id, stderr, stdout, transcript};

/// A config file whose default profile turns the native shapes on, with `rules` added.
fn config(dir: &Path, profile: &str, rules: &str) -> String {
    let path = dir.join("config.toml");
    let text = format!("default_profile = \"native\"\n{rules}\n[profiles.native]\n{profile}\n");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn shell_turns(commands: &[&str]) -> Vec<Turn> {
    vec![
        Turn::tool_calls([ScriptedCall::shell(
            "call_shell",
            json!({"commands": commands, "timeout_ms": 20000, "max_output_length": 2000}),
        )]),
        Turn::text("Ran them."),
    ]
}

/// The `shell_call_output` the second request carried.
fn shell_output(bodies: &[Value]) -> &Value {
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(input.len(), 1, "{input:?}");
    assert_eq!(input[0]["type"], "shell_call_output", "{input:?}");
    assert_eq!(input[0]["call_id"], "call_shell", "{input:?}");
    &input[0]["output"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_call_runs_each_command_and_answers_one_entry_per_command() {
    for stream in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), "shell_tool = true", "");
        let mut args =
            vec!["--config", &config, "--api", "responses", "--permission-mode", "bypass"];
        if !stream {
            args.push("--no-stream");
        }
        args.extend(["exec", "run them"]);
        let turns = shell_turns(&["touch first", "echo hi; exit 3"]);
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "Ran them.");
        assert!(bodies[0]["tools"].as_array().unwrap().contains(&json!({"type": "shell"})));
        assert!(dir.path().join("first").exists(), "the first command did not run");
        let entries = shell_output(&bodies);
        assert_eq!(entries[0]["outcome"], json!({"type": "exit", "exit_code": 0}), "{entries}");
        assert_eq!(entries[1]["stdout"], "hi", "{entries}");
        assert_eq!(entries[1]["outcome"], json!({"type": "exit", "exit_code": 3}), "{entries}");
    }
}

/// A command a deny rule refuses never runs, and neither does any after it; the control run
/// without the rule shows the same commands leave their traces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_shell_command_never_runs_and_ends_the_list() {
    for deny in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let rules = if deny { "[permissions]\ndeny = [\"Bash(touch denied*)\"]" } else { "" };
        let config = config(dir.path(), "shell_tool = true", rules);
        // Bypass would run any command: only the rule can stop one.
        let args = [
            "--config",
            &config,
            "--api",
            "responses",
            "--permission-mode",
            "bypass",
            "exec",
            "go",
        ];
        let turns = shell_turns(&["touch first", "touch denied", "touch after"]);
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let exists = |name: &str| dir.path().join(name).exists();
        assert!(exists("first"));
        assert_eq!((exists("denied"), exists("after")), (!deny, !deny), "deny={deny}");
        let entries = shell_output(&bodies).as_array().unwrap();
        if deny {
            assert_eq!(entries.len(), 2, "{entries:?}");
            assert_eq!(entries[1]["outcome"], json!({"type": "exit", "exit_code": 126}));
            let stderr = entries[1]["stderr"].as_str().unwrap();
            assert!(stderr.contains("denied") && stderr.contains("did not run"), "{stderr}");
        } else {
            assert_eq!(entries.len(), 3, "{entries:?}");
        }
    }
}

/// The shell call and its output are saved in the transcript: `--resume` sends them again in
/// their own item types, and `--replay` runs the commands again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_calls_survive_resume_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "shell_tool = true", "");
    let base = ["--config", config.as_str(), "--api", "responses", "--permission-mode", "bypass"];
    let args: Vec<&str> = base.iter().copied().chain(["exec", "make it"]).collect();
    let (first, _) = exec(dir.path(), shell_turns(&["touch made"]), &args).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let id = session_id(&first);
    let saved = transcript(dir.path(), &id);
    let call = saved.iter().find(|line| line["item"]["type"] == "tool_call").unwrap();
    assert_eq!(call["item"]["shape"], "shell", "{call}");

    let args: Vec<&str> = base.iter().copied().chain(["exec", "--resume", &id, "again"]).collect();
    let (resumed, bodies) = exec(dir.path(), vec![Turn::text("two")], &args).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    // A resumed session starts without a stored response, so the whole transcript is sent.
    assert!(bodies[0].get("previous_response_id").is_none(), "{}", bodies[0]);
    let input = bodies[0]["input"].as_array().unwrap();
    let call = input.iter().find(|item| item["type"] == "shell_call").unwrap();
    assert_eq!(call["action"]["commands"], json!(["touch made"]), "{call}");
    let answer = input.iter().find(|item| item["type"] == "shell_call_output").unwrap();
    assert_eq!(
        (&call["call_id"], &answer["call_id"]),
        (&json!("call_shell"), &json!("call_shell"))
    );

    std::fs::remove_file(dir.path().join("made")).unwrap();
    let recording = data_dir(dir.path()).join("sessions").join(&id).join("transcript.jsonl");
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["exec", "--replay", recording.to_str().unwrap(), "make it"])
        .collect();
    let replayed = agent(dir.path(), &args);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    assert!(dir.path().join("made").exists(), "the replayed shell call did not run again");
}

/// What a profile sends, by shape.
#[test]
fn tools_list_shows_each_tools_shape() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "shell_tool = true\nmodel = \"gpt-5\"", "");
    let list = |api: &str| -> Vec<(String, String)> {
        let output =
            agent(dir.path(), &["--config", &config, "--api", api, "tools", "list", "--json"]);
        assert!(output.status.success(), "{}", stderr(&output));
        let list: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
        list.iter()
            .map(|tool| {
                (
                    tool["name"].as_str().unwrap().to_owned(),
                    tool["shape"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let responses = list("responses");
    assert!(responses.contains(&("shell".to_owned(), "builtin:shell".to_owned())), "{responses:?}");
    assert!(responses.contains(&("bash".to_owned(), "function".to_owned())), "{responses:?}");
    // gpt-5 edits with apply_patch, so edit_file is not offered.
    assert!(!responses.iter().any(|(name, _)| name == "edit_file"), "{responses:?}");
    // Chat Completions has no built-ins: the profile's shell built-in is off there.
    let chat = list("chat");
    assert!(!chat.iter().any(|(name, _)| name == "shell"), "{chat:?}");
}

/// The patch tool through its two native shapes: the Responses built-in and the freeform text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_patch_calls_in_both_native_shapes_change_the_files() {
    for (shape, call) in [
        (
            "builtin",
            ScriptedCall::apply_patch(
                "call_patch",
                json!({"type": "update_file", "path": "a.txt", "diff": "@@\n-old\n+new\n"}),
            ),
        ),
        (
            "freeform",
            ScriptedCall::custom(
                "call_patch",
                "apply_patch",
                "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n",
            ),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let profile = format!("edit_tool = \"apply_patch\"\napply_patch_shape = \"{shape}\"");
        let config = config(dir.path(), &profile, "");
        let args = [
            "--config",
            &config,
            "--api",
            "responses",
            "--permission-mode",
            "bypass",
            "exec",
            "edit",
        ];
        let turns = vec![Turn::tool_calls([call]), Turn::text("Edited.")];
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "new\n", "{shape}");
        let answer = &bodies[1]["input"][0];
        assert_eq!(answer["call_id"], "call_patch", "{answer}");
        let expected =
            if shape == "builtin" { "apply_patch_call_output" } else { "custom_tool_call_output" };
        assert_eq!(answer["type"], expected, "{answer}");
        if shape == "builtin" {
            assert_eq!(answer["status"], "completed", "{answer}");
            assert!(
                bodies[0]["tools"].as_array().unwrap().contains(&json!({"type": "apply_patch"}))
            );
        } else {
            let tool = bodies[0]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "apply_patch")
                .unwrap()
                .clone();
            assert_eq!(
                (tool["type"].as_str(), tool["format"]["syntax"].as_str()),
                (Some("custom"), Some("lark")),
                "{tool}"
            );
        }
    }
}

/// A bare deny rule on `Shell` hides the built-in, and a call the model makes anyway runs
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_deny_rule_refuses_the_whole_shell_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "shell_tool = true", "[permissions]\ndeny = [\"Shell\"]");
    let args =
        ["--config", &config, "--api", "responses", "--permission-mode", "bypass", "exec", "go"];
    let (output, bodies) = exec(dir.path(), shell_turns(&["touch first"]), &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!dir.path().join("first").exists(), "a command of a denied shell call ran");
    assert!(!bodies[0]["tools"].as_array().unwrap().contains(&json!({"type": "shell"})));
    let entries = shell_output(&bodies).as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0]["stderr"].as_str().unwrap().contains("permission_denied"), "{entries:?}");
}
