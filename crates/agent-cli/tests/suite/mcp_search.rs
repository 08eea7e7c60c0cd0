//! The MCP tool budget end to end: when the MCP tools' schemas pass `mcp_tool_budget_tokens`, the
//! model is offered `tool_search` instead of them, loads the one it needs, and calls it against a
//! real server-everything.

use serde_json::{Value, json};

use crate::suite::{
    exec::exec,
    mcp::{assert_valid_next_request, call, code, config, everything, everything_table, outputs},
    session_id, stderr,
};

/// The tool names a request offered.
fn names(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

fn mcp_names(body: &Value) -> Vec<String> {
    names(body).into_iter().filter(|name| name.starts_with("mcp__")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_budget_the_model_searches_loads_and_then_calls_an_mcp_tool() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Waited for (`required`), so the first request already knows its tools; a budget far under
    // what server-everything's schemas take.
    let table =
        format!("mcp_tool_budget_tokens = 100\n{}required = true\n", everything_table(&bin));
    let config = config(dir.path(), &table);
    let echo = "mcp__everything__echo";
    let turns = vec![
        // Called before it is loaded: the model is told how to load it, and nothing runs.
        call("c1", echo, json!({"message": "too early"})),
        call("c2", "tool_search", json!({"query": "echo", "load": null})),
        call("c3", "tool_search", json!({"query": null, "load": [echo]})),
        call("c4", echo, json!({"message": "hi"})),
        agent_model::scripted::Turn::text("done"),
    ];
    let args = ["--api", "chat", "--config", &config, "--allow", "mcp__everything", "exec", "go"];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("mcp_tool_budget_tokens"), "{}", stderr(&output));
    assert_eq!(bodies.len(), 5);

    // Until the load, the requests carry tool_search beside the built-ins, and no MCP tool.
    for body in &bodies[..3] {
        assert!(names(body).contains(&"tool_search".to_owned()), "{:?}", names(body));
        assert!(names(body).contains(&"read_file".to_owned()), "{:?}", names(body));
        assert_eq!(mcp_names(body), Vec::<String>::new());
    }
    // From the request after the load on: that tool's schema, and no other MCP tool.
    for body in &bodies[3..] {
        assert_eq!(mcp_names(body), [echo]);
        assert!(names(body).contains(&"tool_search".to_owned()));
    }
    let tools = bodies[3]["tools"].as_array().unwrap();
    let schema = tools.iter().find(|t| t["function"]["name"] == echo).unwrap();
    assert_eq!(schema["function"]["parameters"]["properties"]["message"]["type"], "string");

    let outputs = outputs(dir.path(), &session_id(&output));
    assert_eq!(code(&outputs[0]), "tool_not_loaded", "{outputs:?}");
    let early = outputs[0]["output"].as_str().unwrap();
    assert!(early.contains(r#"tool_search {\"load\": [\"mcp__everything__echo\"]}"#), "{early}");
    let found = outputs[1]["output"].as_str().unwrap();
    assert!(found.contains("- mcp__everything__echo: "), "{found}");
    assert!(outputs[2]["output"].as_str().unwrap().starts_with("Loaded mcp__everything__echo"));
    // The loaded tool ran through the ordinary path against the real server.
    assert_eq!(outputs[3]["output"], "Echo: hi", "{outputs:?}");
    assert_valid_next_request(&bodies, &["c1", "c2", "c3", "c4"]);

    // What the model reads: the tool as the first request sent it, and the search's answer.
    let search = bodies[0]["tools"].as_array().unwrap();
    let search = search.iter().find(|t| t["function"]["name"] == "tool_search").unwrap();
    insta::assert_json_snapshot!("tool_search_chat_schema", search);
    insta::assert_snapshot!("tool_search_echo", found);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_the_budget_every_mcp_tool_is_sent_and_no_tool_search() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let table =
        format!("mcp_tool_budget_tokens = 100000\n{}required = true\n", everything_table(&bin));
    let config = config(dir.path(), &table);
    let turns = vec![agent_model::scripted::Turn::text("done")];
    let (output, bodies) =
        exec(dir.path(), turns, &["--api", "chat", "--config", &config, "exec", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!names(&bodies[0]).contains(&"tool_search".to_owned()));
    assert!(mcp_names(&bodies[0]).contains(&"mcp__everything__echo".to_owned()));
    assert!(mcp_names(&bodies[0]).len() > 5, "{:?}", mcp_names(&bodies[0]));
}
