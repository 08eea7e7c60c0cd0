//! ask_user: the question reaches the front end checked, and every reply comes back to the model
//! as one structured result (docs/ask-user.md); bad questions are argument errors.

use std::sync::{Arc, Mutex};

use agent_core::{BoxFuture, Typed};
use agent_exec::ask::{Asker, Question, Reply};
use insta::assert_snapshot;
use serde_json::{Value, json};

use super::Fixture;

/// A front end that answers `reply` and keeps the questions it was asked.
struct Scripted {
    reply: Reply,
    asked: Mutex<Vec<Question>>,
}

impl Asker for Scripted {
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Reply> {
        self.asked.lock().unwrap().push(question.clone());
        Box::pin(async move { self.reply.clone() })
    }
}

/// Three choices, free text allowed when `free` says so.
fn args(free: bool, multi: bool) -> Value {
    json!({
        "question": "  Which database should the service use?  ",
        "options": [
            {"label": "Postgres", "description": "the team runs it already"},
            {"label": "SQLite ", "description": "one file, no server"},
            {"label": "None", "description": "keep the data in memory"},
        ],
        "multi_select": multi,
        "allow_free_text": free,
    })
}

/// Calls ask_user with `args`, answered by `reply` (no one at hand when `None`); returns what
/// the model reads and the questions the front end saw.
async fn check(reply: Option<Reply>, args: Value) -> (String, Vec<Question>) {
    let mut fx = Fixture::new();
    let asker = reply.map(|reply| Arc::new(Scripted { reply, asked: Mutex::new(Vec::new()) }));
    let dynamic = asker.clone().map(|asker| asker as Arc<dyn Asker>);
    fx.tools.push(Arc::new(Typed::new(agent_tools::AskUser::new(dynamic)).unwrap()));
    let out = fx.call("ask_user", args).await;
    let asked = asker.map(|asker| asker.asked.lock().unwrap().clone()).unwrap_or_default();
    (out, asked)
}

#[tokio::test]
async fn a_choice_comes_back_as_its_label_and_the_front_end_sees_the_checked_question() {
    let (out, asked) = check(Some(Reply::Chosen { choices: vec![1] }), args(false, false)).await;
    assert_snapshot!(out, @r#"{"status":"answered","choices":["SQLite"]}"#);
    let [question] = asked.as_slice() else { panic!("{asked:?}") };
    assert_eq!(question.call_id, "call_1");
    assert_eq!(question.question, "Which database should the service use?");
    let labels: Vec<&str> = question.choices.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["Postgres", "SQLite", "None"]);
    assert!(!question.multiple && !question.free_text);
}

#[tokio::test]
async fn several_choices_only_when_the_question_allows_them() {
    let two = Reply::Chosen { choices: vec![2, 0] };
    let (out, _) = check(Some(two.clone()), args(false, true)).await;
    assert_snapshot!(out, @r#"{"status":"answered","choices":["None","Postgres"]}"#);
    // The same reply to a single-choice question is a front end's mistake: declined.
    let (out, _) = check(Some(two), args(false, false)).await;
    assert!(out.contains(r#""status":"declined""#), "{out}");
}

#[tokio::test]
async fn free_text_comes_back_cut_at_the_bound_and_only_when_allowed() {
    let (out, _) = check(Some(Reply::Text { text: "MySQL, 8.0".into() }), args(true, false)).await;
    assert_snapshot!(out, @r#"{"status":"answered","text":"MySQL, 8.0"}"#);
    let long = "é".repeat(agent_exec::ask::MAX_ANSWER_CHARS + 5);
    let (out, _) = check(Some(Reply::Text { text: long }), args(true, false)).await;
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["text"].as_str().unwrap().chars().count(), 2_000);
    assert_eq!(value["cut_from_chars"], 2_005);
    let (out, _) = check(Some(Reply::Text { text: "MySQL".into() }), args(false, false)).await;
    assert!(out.contains(r#""status":"declined""#), "{out}");
}

#[tokio::test]
async fn declined_and_no_one_at_hand_are_results_the_model_reads() {
    let (declined, _) = check(Some(Reply::Declined), args(false, false)).await;
    assert_snapshot!("declined", declined);
    let (unavailable, asked) = check(None, args(false, false)).await;
    assert!(asked.is_empty());
    assert_snapshot!("unavailable", unavailable);
    let (out, _) = check(Some(Reply::Unavailable), args(false, false)).await;
    assert_eq!(out, unavailable);
    // An index past the choices never reaches the model as an answer.
    let (out, _) = check(Some(Reply::Chosen { choices: vec![3] }), args(false, false)).await;
    assert_eq!(out, declined);
}

#[tokio::test]
async fn questions_out_of_bounds_are_refused_before_anyone_is_asked() {
    let option = |label: &str| json!({"label": label, "description": ""});
    let with = |options: Vec<Value>, question: &str| json!({"question": question, "options": options, "multi_select": null, "allow_free_text": null});
    let cases = [
        ("one_option", with(vec![option("a")], "q?")),
        ("seven_options", with(["a", "b", "c", "d", "e", "f", "g"].map(option).to_vec(), "q?")),
        ("long_label", with(vec![option(&"x".repeat(61)), option("b")], "q?")),
        ("long_question", with(vec![option("a"), option("b")], &"q".repeat(501))),
        ("same_labels", with(vec![option("Yes"), option(" yes")], "q?")),
        ("blank_question", with(vec![option("a"), option("b")], "   ")),
    ];
    for (name, args) in cases {
        let (out, asked) = check(Some(Reply::Declined), args).await;
        assert!(asked.is_empty(), "{name}: {asked:?}");
        assert_snapshot!(name, out);
    }
}
