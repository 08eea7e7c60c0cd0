//! `ask_user` end to end against the scripted model (docs/ask-user.md): in the REPL, driven in
//! tmux, a person picks a choice and types an answer of their own; in `exec` no one can reply;
//! in each the structured answer is what the next model request carries.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::Instant,
};

use agent_model::scripted::{RecordedRequest, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{DEADLINE, data_dir, exec::exec, stderr};

/// A call of `ask_user` with three choices.
pub(crate) fn ask(id: &str, free_text: bool) -> Turn {
    Turn::tool_calls([ScriptedCall::new(
        id,
        "ask_user",
        json!({
            "question": "Which database should the service use?",
            "options": [
                {"label": "Postgres", "description": "the team runs it already"},
                {"label": "SQLite", "description": "one file, no server"},
                {"label": "None", "description": "keep the data in memory"},
            ],
            "multi_select": false,
            "allow_free_text": free_text,
        }),
    )])
}

/// What the model read for `call` in a Chat Completions request body.
pub(crate) fn output_of(body: &Value, call: &str) -> Value {
    let messages = body["messages"].as_array().unwrap();
    let message = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call)
        .unwrap_or_else(|| panic!("no output of {call} in {body}"));
    serde_json::from_str(message["content"].as_str().unwrap()).unwrap()
}

/// The names of the tools a request offered.
pub(crate) fn offered(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().unwrap();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_exec_the_tool_is_not_offered_and_a_call_hears_that_no_one_can_reply() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![ask("q1", false), Turn::text("I chose Postgres.")];
    let (output, bodies) = exec(dir.path(), turns, &["--api", "chat", "exec", "set it up"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!offered(&bodies[0]).contains(&"ask_user".to_owned()), "{:?}", offered(&bodies[0]));
    let answer = output_of(&bodies[1], "q1");
    assert_eq!(answer["status"], "unavailable", "{answer}");
    assert!(answer["message"].as_str().unwrap().starts_with("no one can reply"), "{answer}");
}

/// A tmux server of the test's own (its socket in the test's folder), killed when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// Starts `agent ARGS` in a detached 120×40 pane, with the environment the suite gives
    /// every run (`suite::command`).
    fn start(workspace: &Path, args: &[&str]) -> Tmux {
        let socket = workspace.parent().unwrap().join("tmux.sock");
        let tmux = Tmux { socket };
        let agent = env!("CARGO_BIN_EXE_agent");
        let home = workspace.display().to_string();
        let env = [
            format!("HOME={home}"),
            format!("AGENT_DATA_DIR={}", data_dir(workspace).display()),
            format!("XDG_CONFIG_HOME={home}/.no-config"),
            "AGENT_LSP_PATH=".to_owned(),
            "TERM=xterm-256color".to_owned(),
        ];
        let mut command = tmux.command(&["new-session", "-d", "-x", "120", "-y", "40", "-s", "t"]);
        command.arg("-c").arg(workspace);
        for pair in &env {
            command.arg("-e").arg(pair);
        }
        let started = command.arg(agent).args(args).output().unwrap();
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        tmux
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).args(args);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = self.command(args).output().unwrap();
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// The pane's text, with its scroll-back.
    fn pane(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-S", "-200", "-t", "t"]).stdout)
            .into_owned()
    }

    /// Waits until the pane shows `text`, polling its content until the suite's deadline.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if pane.contains(text) {
                return pane;
            }
            assert!(start.elapsed() < DEADLINE, "{text:?} never shown:\n{pane}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Types `keys` (tmux key names, `Enter` among them).
    fn keys(&self, keys: &[&str]) {
        self.run(&[&["send-keys", "-t", "t"][..], keys].concat());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
    }
}

/// Waits until `server` recorded `count` model requests; their bodies.
fn requests(server: &ScriptedServer, count: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let posts: Vec<RecordedRequest> =
            server.requests().into_iter().filter(|r| r.method == "POST").collect();
        if posts.len() >= count {
            return posts.iter().map(RecordedRequest::json).collect();
        }
        assert!(start.elapsed() < DEADLINE, "{} of {count} requests", posts.len());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_repl_a_pick_and_an_own_answer_reach_the_next_requests() {
    if Command::new("tmux").arg("-V").output().is_err() {
        // Fails instead under AGENT_NO_SKIP; .ci/run installs tmux.
        agent_test_support::skipped("tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let turns = [ask("q1", false), ask("q2", true), Turn::text("Going with it.")];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let url = server.url();
    let (pane, bodies) = tokio::task::spawn_blocking(move || {
        let args = ["--base-url", &url, "--model", "m", "--api", "chat", "chat"];
        let tmux = Tmux::start(&workspace, &args);
        tmux.wait_for("›");
        tmux.keys(&["set up the service", "Enter"]);
        let pane = tmux.wait_for("answer with a number 1-3; Enter declines:");
        // A number out of range is asked again, not taken.
        tmux.keys(&["7", "Enter"]);
        tmux.keys(&["2", "Enter"]);
        tmux.wait_for("answer with a number 1-3, or type your own answer; Enter declines:");
        tmux.keys(&["MySQL 8, it is what ops knows", "Enter"]);
        tmux.wait_for("Going with it.");
        let bodies = requests(&server, 3);
        tmux.keys(&["/exit", "Enter"]);
        (pane, bodies)
    })
    .await
    .unwrap();
    assert!(pane.contains("? ask_user: Which database should the service use?"), "{pane}");
    assert!(pane.contains("  2. SQLite — one file, no server"), "{pane}");
    let tools = bodies[0]["tools"].as_array().unwrap();
    let schema = tools.iter().find(|t| t["function"]["name"] == "ask_user").expect("offered");
    // What offering it costs every request (docs/tools.md's token table).
    let tokens = agent_model::estimate_tokens(&json!([schema]).to_string());
    assert!(tokens <= 190, "ask_user costs {tokens} tokens a request");
    assert_eq!(output_of(&bodies[1], "q1"), json!({"status": "answered", "choices": ["SQLite"]}));
    let own = json!({"status": "answered", "text": "MySQL 8, it is what ops knows"});
    assert_eq!(output_of(&bodies[2], "q2"), own);
}
