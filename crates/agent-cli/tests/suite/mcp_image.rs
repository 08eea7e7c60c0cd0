//! An MCP image result end to end: server-everything's `get-tiny-image` through `agent exec`. On
//! the Responses API the image reaches the model as image input; on Chat Completions only the
//! text naming the saved file does.

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{
    exec::exec,
    mcp::{config, everything, everything_table},
    stderr,
};

/// Runs one `get-tiny-image` call with `api`; returns the request that carried its output.
async fn image_call(api: &str) -> Option<Value> {
    let bin = everything()?;
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &format!("{}required = true\n", everything_table(&bin)));
    let call = ScriptedCall::new("c1", "mcp__everything__get-tiny-image", json!({}));
    let turns = vec![Turn::tool_calls([call]), Turn::text("a tiny image")];
    let args = ["--api", api, "--config", &config, "--allow", "mcp__everything", "exec", "go"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    Some(bodies[1].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_result_reaches_a_responses_model_as_image_input() {
    let Some(body) = image_call("responses").await else { return };
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
async fn an_image_result_stays_text_on_chat_completions() {
    let Some(body) = image_call("chat").await else { return };
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().find(|message| message["role"] == "tool").unwrap();
    let text = tool["content"].as_str().unwrap_or_else(|| panic!("not text: {tool}"));
    assert!(text.contains("[image saved: "), "{text}");
    assert!(!body.to_string().contains("data:image/png"), "{body}");
}
