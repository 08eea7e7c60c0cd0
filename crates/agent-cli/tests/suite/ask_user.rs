//! `ask_user` end to end against the scripted model (docs/ask-user.md): in the REPL, driven in
//! tmux, a person picks a choice and types an answer of their own; in `exec` no one can reply;
//! in each the structured answer is what the next model request carries.

use std::time::Instant;

use agent_model::scripted::{RecordedRequest, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{DEADLINE, exec::exec, stderr, tmux::Pane};

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
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let turns = [ask("q1", false), ask("q2", true), Turn::text("Going with it.")];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let Some((pane, bodies)) = tokio::task::spawn_blocking(move || {
        // Without tmux the test is skipped (a failure under AGENT_NO_SKIP; .ci/run installs it).
        let tmux = Pane::repl(&workspace, &server, &[])?;
        tmux.enter("set up the service");
        let asked = "answer with a number 1-3; Enter declines:";
        let pane = tmux.wait_until(asked, |screen| screen.contains(asked));
        // A number out of range is asked again, not taken.
        tmux.enter("7");
        tmux.enter("2");
        tmux.wait_for("answer with a number 1-3, or type your own answer; Enter declines:");
        tmux.enter("MySQL 8, it is what ops knows");
        tmux.wait_for("Going with it.");
        let bodies = requests(&server, 3);
        assert_eq!(tmux.exit(), 0);
        Some((pane, bodies))
    })
    .await
    .unwrap() else {
        return;
    };
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
