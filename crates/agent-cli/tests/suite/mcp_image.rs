//! An MCP image result end to end: server-everything's `get-tiny-image` through `agent exec`. A
//! model that sees gets the image as input on both APIs (on Chat Completions in a user message
//! after the tool messages); a model that does not gets only the text naming the saved file.

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{
    exec::exec,
    mcp::{config, everything, everything_table},
    stderr,
};

/// Runs one `get-tiny-image` call with `api`, for a model that sees images or not; returns the
/// request that carried its output.
async fn image_call(api: &str, vision: bool) -> Option<Value> {
    let bin = everything()?;
    let dir = tempfile::tempdir().unwrap();
    let tables = format!(
        "default_profile = \"p\"\n{}required = true\n[profiles.p]\nvision = {vision}\n",
        everything_table(&bin)
    );
    let config = config(dir.path(), &tables);
    let call = ScriptedCall::new("c1", "mcp__everything__get-tiny-image", json!({}));
    let turns = vec![Turn::tool_calls([call]), Turn::text("a tiny image")];
    let args = ["--api", api, "--config", &config, "--allow", "mcp__everything", "exec", "go"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    Some(bodies[1].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_reaches_a_responses_model_as_image_input() {
    let Some(body) = image_call("responses", true).await else { return };
    let input = body["input"].as_array().unwrap();
    let output = input.iter().find(|item| item["type"] == "function_call_output").unwrap();
    assert_eq!(output["call_id"], "c1");
    let parts = output["output"].as_array().unwrap_or_else(|| panic!("not a list: {output}"));
    assert_eq!(parts[0]["type"], "input_text");
    assert!(parts[0]["text"].as_str().unwrap().contains("[image saved: "), "{output}");
    let images: Vec<&Value> = parts.iter().filter(|part| part["type"] == "input_image").collect();
    assert_eq!(images.len(), 1, "{output}");
    let url = images[0]["image_url"].as_str().unwrap();
    // server-everything's tiny image is a PNG.
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_follows_the_tool_message_on_chat_completions() {
    let Some(body) = image_call("chat", true).await else { return };
    let messages = body["messages"].as_array().unwrap();
    let at = messages.iter().position(|message| message["role"] == "tool").unwrap();
    let text = messages[at]["content"].as_str().unwrap_or_else(|| panic!("not text: {body}"));
    assert!(text.contains("[image saved: "), "{text}");
    let user = &messages[at + 1];
    assert_eq!(user["role"], "user", "{body}");
    let url = user["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_stays_text_for_a_model_that_cannot_see() {
    for api in ["responses", "chat"] {
        let Some(body) = image_call(api, false).await else { return };
        assert!(body.to_string().contains("[image saved: "), "{api}: {body}");
        assert!(!body.to_string().contains("data:image/png"), "{api}: {body}");
    }
}
