//! `ask_user` where the person is remote (docs/ask-user.md): an editor over ACP answers through
//! the official Python SDK's client, with a form where it declares form elicitation and with
//! the permission request otherwise; an `agent serve` client answers over HTTP. In each the
//! structured answer is what the next model request carries.

use agent_model::scripted::{RecordedRequest, Script, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{
    acp::server,
    acp_methods::play,
    ask_user::{ask, offered, output_of},
    serve_client::{check_events, start},
};

/// Plays one ACP prompt whose model asks `q1` (free text allowed when `free_text`) with the
/// client answering as `plan` says; the summary and the model requests.
async fn acp(plan: Value, free_text: bool) -> Option<(Value, Vec<Value>)> {
    let python = agent_test_support::peer_python("acp")?;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let (server, args) = server(vec![ask("q1", free_text), Turn::text("Noted.")]).await;
    let steps = json!([{"initialize": {}}, {"new": {}}, {"prompt": "set up the service"}]);
    let mut plan = plan;
    plan["steps"] = steps;
    let summary = play(python, &workspace, plan, args).await;
    assert_eq!(summary["results"][2]["stopReason"], "end_turn", "{summary}");
    let posts = server.requests().into_iter().filter(|r| r.method == "POST");
    Some((summary, posts.map(|r| r.json()).collect()))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_with_forms_answers_in_a_form_and_the_answer_reaches_the_model() {
    let answer = json!({"action": "accept", "content": {"choice": "Postgres", "answer": ""}});
    let Some((summary, bodies)) = acp(json!({"elicitation": answer}), true).await else { return };
    assert!(offered(&bodies[0]).contains(&"ask_user".to_owned()));
    let asked = &summary["elicitations"][0];
    assert_eq!(asked["message"], "Which database should the service use?", "{summary}");
    let schema = &asked["mode"]["requestedSchema"];
    let titles: Vec<&Value> = schema["properties"]["choice"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["title"])
        .collect();
    assert_eq!(titles, ["Postgres", "SQLite", "None"], "{asked}");
    assert_eq!(schema["properties"]["answer"]["maxLength"], 2000, "{asked}");
    assert_eq!(asked["mode"]["toolCallId"], "q1", "{asked}");
    assert!(summary["permissions"].as_array().unwrap().is_empty(), "{summary}");
    assert_eq!(output_of(&bodies[1], "q1"), json!({"status": "answered", "choices": ["Postgres"]}));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_that_declines_the_form_sends_declined() {
    let Some((_, bodies)) = acp(json!({"elicitation": {"action": "decline"}}), false).await else {
        return;
    };
    assert_eq!(output_of(&bodies[1], "q1")["status"], "declined");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_without_forms_picks_a_permission_option_per_choice() {
    let Some((summary, bodies)) = acp(json!({"answer": "choice-2"}), false).await else { return };
    let asked = &summary["permissions"][0];
    assert_eq!(asked["title"], "Which database should the service use?", "{summary}");
    assert_eq!(
        asked["options"],
        json!(["allow_once", "allow_once", "allow_once", "reject_once"]),
        "{asked}"
    );
    assert_eq!(asked["names"]["choice-1"], "SQLite — one file, no server", "{asked}");
    assert_eq!(output_of(&bodies[1], "q1"), json!({"status": "answered", "choices": ["None"]}));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_serve_client_sees_the_question_on_the_stream_and_answers_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let model =
        ScriptedServer::start(Script::new([ask("q1", true), Turn::text("Noted.")])).await.unwrap();
    let url = model.url();
    let serve = start(dir.path(), &["--base-url", &url, "--model", "m"], &[]);
    let (status, info) =
        serve.call("POST", "/v1/sessions", Some(json!({"workspace": workspace}))).await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap();
    let mut stream = serve.events(id, 0).await;
    let (status, _) =
        serve.call("POST", &format!("/v1/sessions/{id}/prompt"), Some(json!({"text": "go"}))).await;
    assert_eq!(status, 202);
    let mut events = stream.until("question.asked").await;
    let asked = &events.last().unwrap().1;
    assert_eq!(asked["question"], "Which database should the service use?", "{asked}");
    assert_eq!(asked["choices"][1]["label"], "SQLite", "{asked}");
    assert_eq!(asked["free_text"], true, "{asked}");

    let (status, pending) = serve.call("GET", &format!("/v1/sessions/{id}/questions"), None).await;
    assert_eq!(status, 200);
    let number = pending[0]["id"].as_u64().unwrap();
    let path = format!("/v1/sessions/{id}/questions/{number}");
    // An answer that does not fit is refused, and the question keeps waiting.
    for unfit in [json!({"choices": ["MySQL"]}), json!({"choices": ["SQLite", "None"]}), json!({})]
    {
        let (status, problem) = serve.call("POST", &path, Some(unfit.clone())).await;
        assert_eq!(status, 400, "{unfit}: {problem}");
    }
    let (status, _) = serve.call("POST", &path, Some(json!({"text": "MySQL 8"}))).await;
    assert_eq!(status, 204);
    let (status, _) = serve.call("POST", &path, Some(json!({"decline": true}))).await;
    assert_eq!(status, 404, "an answered question is gone");
    events.extend(stream.until("run.completed").await);
    check_events(&events);
    let posts: Vec<RecordedRequest> =
        model.requests().into_iter().filter(|r| r.method == "POST").collect();
    let answer = output_of(&posts[1].json(), "q1");
    assert_eq!(answer, json!({"status": "answered", "text": "MySQL 8"}));
}
