//! `exec --output-schema` and `-o`: a final answer checked against a JSON Schema, asked for again
//! once when it does not fit, printed alone, and written to a file, for both APIs.

use agent_model::scripted::Turn;
use serde_json::{Value, json};

use crate::suite::{exec::exec, json_events, stderr, stdout};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
  "required": ["city", "population"]
}"#;

/// The `response_format` (Chat) or `text.format` (Responses) a request carried.
fn format(api: &str, body: &Value) -> Value {
    match api {
        "chat" => body["response_format"].clone(),
        _ => body["text"]["format"].clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_first_answer_is_corrected_and_printed_alone() {
    for api in ["chat", "responses"] {
        let dir = tempfile::tempdir().unwrap();
        let schema = dir.path().join("schema.json");
        std::fs::write(&schema, SCHEMA).unwrap();
        let last = dir.path().join("last.json");
        let turns = vec![
            Turn::text("Oslo, about 709,000 people."),
            Turn::text(r#"{"city":"Oslo","population":709000}"#),
        ];
        let (schema, last_arg) = (schema.display().to_string(), last.display().to_string());
        let args = ["--api", api, "exec", "--output-schema", &schema, "-o", &last_arg, "Oslo?"];
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{api}: {}", stderr(&output));
        assert_eq!(stdout(&output), "{\"city\":\"Oslo\",\"population\":709000}\n", "{api}");
        assert_eq!(
            std::fs::read_to_string(&last).unwrap(),
            r#"{"city":"Oslo","population":709000}"#
        );
        assert_eq!(bodies.len(), 2, "{api}");
        // The schema goes out in strict form, on every request.
        for body in &bodies {
            let format = format(api, body);
            let format = if api == "chat" {
                assert_eq!(format["type"], "json_schema");
                format["json_schema"].clone()
            } else {
                assert_eq!(format["type"], "json_schema");
                format
            };
            assert_eq!(format["name"], "final_answer", "{api}");
            assert_eq!(format["strict"], true, "{api}");
            assert_eq!(format["schema"]["additionalProperties"], false, "{api}");
        }
        // The second request tells the model what was wrong.
        let text = bodies[1].to_string();
        assert!(text.contains("does not match the required JSON Schema"), "{api}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_never_fits_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let schema = schema.display().to_string();
    let turns = vec![Turn::text("Oslo."), Turn::text(r#"{"city":"Oslo"}"#), Turn::text("unused")];
    let args = ["--api", "chat", "exec", "--json", "--output-schema", &schema, "Oslo?"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(bodies.len(), 2, "asked again more than once");
    let events = json_events(&output);
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "invalid_output", "{last}");
    assert!(last["message"].as_str().unwrap().contains("population"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_with_no_strict_form_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        json!({"type": "object", "additionalProperties": {"type": "string"}}).to_string(),
    )
    .unwrap();
    let schema = schema.display().to_string();
    let (output, bodies) = exec(
        dir.path(),
        vec![Turn::text("x")],
        &["--api", "chat", "exec", "--output-schema", &schema, "x"],
    )
    .await;
    assert_ne!(output.status.code(), Some(0));
    assert!(bodies.is_empty());
    assert!(stderr(&output).contains("cannot be sent in strict form"), "{}", stderr(&output));
}
