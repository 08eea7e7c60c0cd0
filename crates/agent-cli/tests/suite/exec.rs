//! `agent exec` against the scripted model server over loopback HTTP, for both APIs.

use std::path::Path;

use agent_model::scripted::{RecordedRequest, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, json_events, stderr, stdout};

/// Runs `agent exec` against a scripted server playing `turns`; returns the process output and
/// the request bodies the server received.
pub(crate) async fn exec(
    workspace: &Path,
    turns: Vec<Turn>,
    args: &[&str],
) -> (std::process::Output, Vec<Value>) {
    let (output, requests) = exec_recorded(workspace, turns, args).await;
    (output, requests.iter().map(|request| request.json()).collect())
}

/// [`exec`], with the requests as the server recorded them (method, raw body).
pub(crate) async fn exec_recorded(
    workspace: &Path,
    turns: Vec<Turn>,
    args: &[&str],
) -> (std::process::Output, Vec<RecordedRequest>) {
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let url = server.url();
    let mut full: Vec<String> =
        vec!["--base-url".into(), url, "--model".into(), "test-model".into()];
    full.extend(args.iter().map(|arg| (*arg).to_owned()));
    let dir = workspace.to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = full.iter().map(String::as_str).collect();
        agent(&dir, &args)
    })
    .await
    .unwrap();
    (output, server.requests())
}

pub(crate) fn uppercase_then_answer() -> Vec<Turn> {
    vec![
        Turn::tool_calls([ScriptedCall::new("call_1", "uppercase", json!({"text": "hello"}))]),
        Turn::text("HELLO it is."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_pairs_the_call_id_and_prints_the_answer() {
    for stream in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--api", "chat", "exec", "make hello upper case"];
        if !stream {
            args.insert(0, "--no-stream");
        }
        let (output, bodies) = exec(dir.path(), uppercase_then_answer(), &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "HELLO it is.");
        assert!(stderr(&output).contains("uppercase: ok"), "{}", stderr(&output));
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0]["stream"], stream);
        assert_eq!(bodies[0]["tools"][0]["function"]["strict"], true);
        let messages = bodies[1]["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool"]);
        assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
        assert_eq!(messages[3]["tool_call_id"], "call_1");
        assert_eq!(messages[3]["content"], "HELLO");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_continues_with_previous_response_id_and_resends_instructions() {
    for stream in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--api", "responses", "exec", "make hello upper case"];
        if !stream {
            args.insert(0, "--no-stream");
        }
        let (output, bodies) = exec(dir.path(), uppercase_then_answer(), &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "HELLO it is.");
        assert_eq!(bodies.len(), 2);
        assert!(bodies[0].get("previous_response_id").is_none());
        let previous = bodies[1]["previous_response_id"].as_str().unwrap_or_default();
        assert!(previous.starts_with("resp"), "{}", bodies[1]);
        assert_eq!(bodies[0]["instructions"], bodies[1]["instructions"]);
        assert_eq!(bodies[1]["tools"][0]["strict"], true);
        // Only the new output is sent: the server already holds the prompt and the call.
        let input = bodies[1]["input"].as_array().unwrap();
        assert_eq!(input.len(), 1, "{input:?}");
        assert_eq!(input[0]["type"], "function_call_output");
        assert_eq!(input[0]["call_id"], "call_1");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_prints_one_event_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--api", "chat", "exec", "--json", "go"];
    let (output, _) = exec(dir.path(), uppercase_then_answer(), &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_events(&output);
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    // The user's prompt is the first item of the conversation, then the first turn starts.
    assert_eq!(types[..3], ["run.started", "item.added", "turn.started"]);
    assert_eq!(events[1]["item"]["role"], "user");
    assert_eq!(events[1]["item"]["content"], "go");
    assert!(types.contains(&"tool.started"));
    let finished = events.iter().find(|e| e["type"] == "tool.completed").unwrap();
    assert_eq!(finished["ok"], true);
    assert_eq!(finished["call_id"], "call_1");
    assert_eq!(events.last().unwrap()["type"], "run.completed");
    assert_eq!(events.last().unwrap()["answer"], "HELLO it is.");
    // Each request is announced with the loop's own count of its input tokens and the window
    // (the default for a model the table does not know).
    let requests: Vec<&Value> = events.iter().filter(|e| e["type"] == "request.started").collect();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|e| e["estimated_input_tokens"].as_u64().unwrap() > 100));
    assert!(requests.iter().all(|e| e["window"] == 32_768));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_approval_is_denied_and_the_person_told_the_flag_that_would_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new(
            "call_w",
            "write_file",
            json!({"path": "new.txt", "content": "x\n"}),
        )]),
        Turn::text("I was not allowed to write."),
    ];
    let (output, bodies) = exec(dir.path(), turns, &["--api", "chat", "exec", "write it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!dir.path().join("new.txt").exists());
    let observation = bodies[1]["messages"][3]["content"].as_str().unwrap();
    assert!(observation.contains(r#""error":"permission_denied""#), "{observation}");
    // The model reads the policy's terms; the person reads this program's flags.
    assert!(observation.contains("the accept-edits permission mode"), "{observation}");
    assert!(!observation.contains("--"), "{observation}");
    let advice =
        "to allow it, rerun with --permission-mode accept-edits or with --allow 'Edit(./new.txt)'";
    assert!(stderr(&output).contains(advice), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_limit_is_an_agent_failure() {
    let dir = tempfile::tempdir().unwrap();
    let turns = (0..3)
        .map(|i| {
            Turn::tool_calls([ScriptedCall::new(
                format!("c{i}"),
                "uppercase",
                json!({"text": "a"}),
            )])
        })
        .collect();
    let args = ["--api", "chat", "--max-turns", "2", "exec", "loop"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("stopped after 2 turns"), "{}", stderr(&output));
    assert_eq!(bodies.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_sends_the_earlier_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) =
        exec(dir.path(), uppercase_then_answer(), &["--api", "chat", "exec", "one"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let id = stderr(&first)
        .lines()
        .find_map(|line| line.split("--resume ").nth(1))
        .map(|rest| rest.trim_end_matches(')').to_owned())
        .unwrap();
    let (second, bodies) = exec(
        dir.path(),
        vec![Turn::text("two")],
        &["--api", "chat", "exec", "--resume", &id, "again"],
    )
    .await;
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let contents: Vec<&str> = bodies[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    // The assistant turn that only called `uppercase` carries `content: ""` (see docs/models.md).
    assert_eq!(contents[1..], ["one", "", "HELLO", "HELLO it is.", "again"]);
}

#[test]
fn no_provider_says_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["exec", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("OPENAI_API_KEY") && text.contains("cargo xtask demo"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_in_the_config_file_stops_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[permissions]\ndeny = [\"Bash(touch *)\"]\n").unwrap();
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("c1", "bash", json!({"command": "touch made"}))]),
        Turn::text("Denied."),
    ];
    let config = config.to_str().unwrap();
    // Bypass would run any command: only the config file's rule can stop it.
    let args = ["--config", config, "--permission-mode", "bypass", "exec", "touch it"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!dir.path().join("made").exists(), "the denied command ran");
    let tool_message = &bodies[1]["messages"][3]["content"];
    assert!(tool_message.as_str().unwrap().contains("permission_denied"), "{tool_message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_logs_show_a_span_per_turn_and_per_call_without_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Script::new(uppercase_then_answer())).await.unwrap();
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args = ["--base-url", &url, "--model", "m", "--api", "chat", "exec", "shout"];
        let mut command = crate::suite::command(&workspace, &args);
        command.env("AGENT_LOG", "debug").stdin(std::process::Stdio::null());
        crate::suite::Running::spawn(&mut command).finish("agent exec with debug logs")
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = stderr(&output);
    // stderr is a pipe here, as when a user writes `2>file`: no colour codes.
    assert!(!log.contains('\u{1b}'), "escape codes in a piped log: {log:?}");
    // A closing line names the span's path, then the target: `turn{…}: agent_exec::agent: close`
    // for a turn itself, `turn{…}:model_request: …` and `turn{…}:tool_call{…}: …` inside it.
    let closes: Vec<&str> = log
        .lines()
        .filter(|line| line.contains(": close time.busy="))
        .filter_map(|line| line.split(" DEBUG ").nth(1).or_else(|| line.split(" INFO ").nth(1)))
        .filter_map(|rest| rest.split(": ").next())
        .collect();
    let count = |suffix: &str| closes.iter().filter(|path| path.ends_with(suffix)).count();
    assert_eq!(closes.iter().filter(|path| !path.contains("}:")).count(), 2, "{closes:?}");
    assert_eq!(count(":model_request"), 2, "{closes:?}");
    assert_eq!(count(":tool_call{tool=uppercase call_id=call_1}"), 1, "{closes:?}");
    assert!(log.contains("tool call finished"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_md_files_go_with_the_instructions_unless_switched_off() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "PROJECT: run the tests with make check.")
        .unwrap();
    let user = dir.path().join(".no-config/agent");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("AGENTS.md"), "USER: answer briefly.").unwrap();
    let system =
        |bodies: &[Value]| bodies[0]["messages"][0]["content"].as_str().unwrap().to_owned();

    let (output, bodies) =
        exec(dir.path(), vec![Turn::text("ok")], &["--api", "chat", "exec", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = system(&bodies);
    let (user_at, project_at) =
        (text.find("USER: answer").unwrap(), text.find("PROJECT: run").unwrap());
    assert!(user_at < project_at, "the user's own file comes first: {text}");
    assert!(text.contains("AGENTS.md"), "each file is introduced by its path: {text}");

    let args = ["--api", "chat", "--no-project-doc", "exec", "go"];
    let (output, bodies) = exec(dir.path(), vec![Turn::text("ok")], &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = system(&bodies);
    assert!(!text.contains("USER: answer") && !text.contains("PROJECT: run"), "{text}");
}

/// A model that starts `command` as a background job, then answers.
fn start_in_background(command: &str) -> Vec<Turn> {
    vec![
        Turn::tool_calls([ScriptedCall::new(
            "call_1",
            "bash",
            json!({"command": command, "background": true}),
        )]),
        Turn::text("Started."),
    ]
}

/// The last `--json` line of a run.
fn jobs_ended(output: &std::process::Output) -> Value {
    let out = stdout(output);
    serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_still_running_at_the_answer_are_killed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo $$ > job.pid; sleep 1000";
    let mut turns = start_in_background(command);
    // The answer would end the run (and kill the job) at once, possibly before the job wrote its
    // pid: the model first waits for the marker, so the check below always has a pid to look for.
    // (Bounded by the call's time limit.)
    let wait = "until [ -s job.pid ]; do sleep 0.01; done; cat job.pid";
    turns.insert(
        1,
        Turn::tool_calls([ScriptedCall::new("call_2", "bash", json!({"command": wait}))]),
    );
    let args = ["exec", "--json", "--allow", "Bash", "start it"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let event = jobs_ended(&output);
    assert_eq!(event["type"], "run.completed", "{event}");
    assert_eq!(
        event["background_jobs"],
        json!({"policy": "kill", "jobs": [{"id": 1, "command": command, "status": "signal SIGTERM"}]})
    );
    let pid = std::fs::read_to_string(dir.path().join("job.pid")).unwrap();
    // The wait really ran: the model was shown the pid before it answered.
    assert!(bodies[2].to_string().contains(pid.trim()), "{}", bodies[2]);
    assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists(), "the job outlived the run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_wait_lets_them_finish() {
    let dir = tempfile::tempdir().unwrap();
    let command = "sleep 0.3; exit 4";
    let turns = start_in_background(command);
    let args = ["exec", "--json", "--jobs", "wait", "--allow", "Bash", "start it"];
    let (output, _) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let event = jobs_ended(&output);
    assert_eq!(event["background_jobs"]["policy"], "wait", "{event}");
    assert_eq!(event["background_jobs"]["jobs"][0]["status"], "exit 4");
}
