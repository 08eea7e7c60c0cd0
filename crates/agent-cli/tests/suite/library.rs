//! The library's doors give the agent the binary runs: agent-session's session sends the
//! binary's first request byte for byte and whole; the tools' door (`builtin_tools`) gives the
//! same tools, job-finished notices, and the secret list the policy's `Read(…)` allow rules
//! shape, each checked over loopback HTTP against the scripted model server.

use std::{path::Path, sync::Arc};

use agent_core::{Item, ModelClient, Typed};
use agent_exec::{Agent, AgentBuilder, DEFAULT_INSTRUCTIONS, PermissionMode, agent::Finish};
use agent_model::{
    ChatClient, ClientConfig, ResponsesClient,
    scripted::{RecordedRequest, Script, ScriptedCall, ScriptedServer, Turn},
};
use agent_tools::{BuiltinConfig, BuiltinTools, Uppercase};
use serde_json::json;

use crate::suite::{DEADLINE, exec::exec_recorded, stderr};

const PROMPT: &str = "say hi";

/// The model requests (POSTs) `server` received, in order; a GET (the window question) is not one.
fn posts(server: &ScriptedServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(|request| request.method == "POST").collect()
}

fn client(api: &str, url: String) -> Box<dyn ModelClient> {
    let config = ClientConfig::new(url, "test-model");
    match api {
        "chat" => Box::new(ChatClient::new(&config).unwrap()),
        _ => Box::new(ResponsesClient::new(&config).unwrap()),
    }
}

/// The first request body `agent exec` sends in `workspace` with `args`.
async fn binary_first_request(workspace: &Path, api: &str, args: &[&str]) -> String {
    let mut full = vec!["--api", api, "--no-project-doc"];
    full.extend(args);
    full.extend(["exec", PROMPT]);
    let (output, requests) = exec_recorded(workspace, vec![Turn::text("hi")], &full).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let first = requests.into_iter().find(|request| request.method == "POST");
    first.expect("the binary sent a request").body
}

/// The first request body of a library agent that `configure` built on `builder` in `workspace`.
async fn library_first_request(
    workspace: &Path,
    api: &str,
    configure: impl FnOnce(AgentBuilder) -> AgentBuilder,
) -> String {
    let server = ScriptedServer::start(Script::new([Turn::text("hi")])).await.unwrap();
    let mut agent =
        configure(Agent::builder(workspace)).build_boxed(client(api, server.url())).unwrap();
    assert_eq!(agent.prompt(PROMPT).await, Finish::Answered("hi".into()));
    posts(&server).first().expect("the library sent a request").body.clone()
}

/// Where `cargo test` put agent-session's example program (docs/library.md): beside this test
/// binary's folder, in `examples/`.
fn library_program() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().and_then(Path::parent).unwrap();
    let program = target.join("examples").join("session");
    assert!(
        program.exists(),
        "{} is missing: `cargo test --workspace` builds it (or `cargo build -p agent-session \
         --examples`)",
        program.display()
    );
    program
}

/// The first request the library program sends in `workspace` with `config`, run with the clean
/// environment the binary's tests use (no key, no user config, sessions under the workspace).
async fn program_first_request(workspace: &Path, api: &str, config: &str) -> String {
    let server = ScriptedServer::start(Script::new([Turn::text("hi")])).await.unwrap();
    // The binary's environment exactly: the tests' command clears it and sets what it needs.
    let binary = crate::suite::command(workspace, &[]);
    let mut command = std::process::Command::new(library_program());
    command.current_dir(workspace).env_clear();
    for (key, value) in binary.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    command.args([server.url().as_str(), "test-model", api, config, PROMPT]);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "hi");
    posts(&server).first().expect("the library sent a request").body.clone()
}

/// The binary and the library's session (agent-session, the program of docs/library.md) send the
/// same first request, byte for byte and whole: every built-in, `web_search` with a provider,
/// the plan and child agents, in both APIs; then with `--tools` keeping two. Nothing is switched
/// off and nothing redacted: the body holds no session id, path or time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_session_sends_the_first_request_the_binary_sends() {
    for api in ["chat", "responses"] {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(
            &config,
            "[web_search]\nprovider = \"searxng\"\nbase_url = \"http://127.0.0.1:9\"\n",
        )
        .unwrap();
        let config = config.display().to_string();
        let binary = binary_first_request(dir.path(), api, &["--config", &config]).await;
        let library = program_first_request(dir.path(), api, &config).await;
        assert_eq!(binary, library, "{api}");
        for tool in ["web_search", "update_plan", "task"] {
            assert!(binary.contains(&format!("\"{tool}\"")), "{api}: {tool} is offered");
        }
        // Every built-in tool, and a guidance line for each of the seven that have one.
        if api == "chat" {
            let body: serde_json::Value = serde_json::from_str(&binary).unwrap();
            let instructions = body["messages"][0]["content"].as_str().unwrap_or_default();
            insta::assert_snapshot!("builtin_instructions", instructions);
        }
    }
}

/// A library agent built through the tools' door (`builtin_tools`, `only_tools`) sends what the
/// binary sends with `--tools`: the door's instructions name only the offered tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_tools_door_offers_what_tools_keeps() {
    for api in ["chat", "responses"] {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("agents-off.toml");
        std::fs::write(&config, "[agents]\nenabled = false\n").unwrap();
        let config = config.display().to_string();
        let tools = ["--config", &config, "--tools", "read_file,glob"];
        let binary = binary_first_request(dir.path(), api, &tools).await;
        let library = library_first_request(dir.path(), api, |builder| {
            builder
                .builtin_tools(&BuiltinConfig::default())
                .unwrap()
                .only_tools(["read_file", "glob"])
        })
        .await;
        assert_eq!(binary, library, "{api} --tools");
        // Only the offered tools are named: no line about bash, grep or edit_file.
        assert!(binary.contains("Read files with read_file."), "{binary}");
        assert!(!binary.contains("bash") && !binary.contains("edit_file"), "{binary}");
    }
}

/// An agent with only its own tool is told about no built-in one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_its_own_tool_only_gets_instructions_naming_no_built_in() {
    let dir = tempfile::tempdir().unwrap();
    let body = library_first_request(dir.path(), "chat", |builder| {
        builder.tool(Arc::new(Typed::new(Uppercase).unwrap()))
    })
    .await;
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["messages"][0]["content"], DEFAULT_INSTRUCTIONS);
    for (tool, _) in agent_tools::GUIDANCE {
        assert!(!DEFAULT_INSTRUCTIONS.contains(tool), "{tool}");
    }
}

/// A job started by `bash` in one prompt finishes; the next request tells the model, through the
/// door. The control, the tools registered without it, shows the notice is the door's doing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_agent_is_told_when_its_job_finishes() {
    for through_door in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let server = ScriptedServer::start(Script::new([
            Turn::tool_calls([ScriptedCall::new(
                "c1",
                "bash",
                // The job waits for the test's `go` file: ending on its own, it could finish
                // before `bash` answers, and the call would report its end instead of its id.
                json!({
                    "command": "echo built; until [ -e go ]; do sleep 0.01; done; exit 7",
                    "background": true
                }),
            )]),
            Turn::text("started"),
            Turn::text("it failed"),
        ]))
        .await
        .unwrap();
        let config = BuiltinConfig::default();
        let jobs = config.bash.jobs.clone();
        let builder = Agent::builder(dir.path()).permission_mode(PermissionMode::Bypass);
        let builder = if through_door {
            builder.builtin_tools(&config).unwrap()
        } else {
            builder.tools(agent_tools::builtin(&config).unwrap())
        };
        let mut agent = builder.build_boxed(client("chat", server.url())).unwrap();
        assert_eq!(
            agent.prompt("build it in the background").await,
            Finish::Answered("started".into())
        );
        let output = agent.conversation().items.iter().find_map(|item| match item {
            Item::ToolOutput(output) => Some(output.output.clone()),
            _ => None,
        });
        let output = output.unwrap_or_default();
        if output.contains("sandbox") && !output.starts_with("job_id") {
            agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {output}"));
            return;
        }
        assert!(output.starts_with("job_id: 1"), "{output}");
        std::fs::write(dir.path().join("go"), "").unwrap();
        // The job's end is the event waited for: its process group is gone.
        let ended = jobs.wait(1, DEADLINE).await.expect("job 1 exists");
        assert!(!matches!(ended.state, agent_exec::jobs::JobState::Running), "{ended:?}");
        assert_eq!(agent.prompt("how did it go?").await, Finish::Answered("it failed".into()));
        let requests = posts(&server);
        let last = &requests[2].body;
        let told = last.contains("[job 1 finished: exit 7");
        assert_eq!(told, through_door, "door {through_door}: {last}");
        if through_door {
            assert!(last.contains("built"), "the notice carries the last lines: {last}");
        }
    }
}

/// `bash` hides `.env` from a library agent as `read_file` does, and a `Read(./.env)` allow rule
/// exposes it to both: the attack (reading it without the rule) gets nothing, the control (with
/// the rule) gets the bytes. The secret list comes from the policy alone; nothing else is wired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_agent_s_bash_follows_the_read_allow_rules() {
    const SECRET: &str = "TOKEN=door-secret-4711";
    for allowed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), format!("{SECRET}\n")).unwrap();
        let server = ScriptedServer::start(Script::new([
            Turn::tool_calls([ScriptedCall::new("c1", "bash", json!({"command": "cat .env"}))]),
            Turn::tool_calls([ScriptedCall::new("c2", "read_file", json!({"path": ".env"}))]),
            Turn::text("done"),
        ]))
        .await
        .unwrap();
        let config = BuiltinConfig::default();
        let mut builder = Agent::builder(dir.path())
            .builtin_tools(&config)
            .unwrap()
            .permission_mode(PermissionMode::DontAsk)
            .allow("Bash(cat .env)");
        if allowed {
            builder = builder.allow("Read(./.env)");
        }
        let mut agent = builder.build_boxed(client("chat", server.url())).unwrap();
        assert_eq!(agent.prompt("show me .env").await, Finish::Answered("done".into()));
        let outputs: Vec<String> = agent
            .conversation()
            .items
            .iter()
            .filter_map(|item| match item {
                Item::ToolOutput(output) => Some(output.output.clone()),
                _ => None,
            })
            .collect();
        let (bash, read_file) = (&outputs[0], &outputs[1]);
        if bash.contains("sandbox") && !bash.starts_with("exit") {
            agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {bash}"));
            return;
        }
        assert!(bash.starts_with("exit 0"), "{bash}");
        assert_eq!(bash.contains(SECRET), allowed, "bash, allowed {allowed}: {bash}");
        assert_eq!(
            read_file.contains(SECRET),
            allowed,
            "read_file, allowed {allowed}: {read_file}"
        );
    }
}
