//! The server side: an executor served over streamable HTTP on 127.0.0.1 by `HttpServer` and
//! `ToolServer`, driven by the Python SDK's client (`tests/peers/py_library_client.py`).

use std::{net::SocketAddr, process::Stdio, time::Duration};

use agent_core::{Effects, ToolContext, ToolError, ToolOutput, Typed, TypedTool};
use agent_exec::{AgentBuilder, PermissionMode};
use agent_mcp::{HttpAccess, HttpServer, ToolServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{peer, python};

/// Input of both test tools.
#[derive(Deserialize, JsonSchema)]
struct TextInput {
    /// Some text.
    text: String,
}

/// A read-only tool: runs unasked.
struct Shout;

impl TypedTool for Shout {
    type Input = TextInput;
    const NAME: &'static str = "shout";
    fn description(&self) -> String {
        "Returns the text in upper case.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: TextInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text.to_uppercase()))
    }
}

/// A tool with side effects: in the default mode its calls are put to the client.
struct Note;

impl TypedTool for Note {
    type Input = TextInput;
    const NAME: &'static str = "note";
    fn description(&self) -> String {
        "Writes a note.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects { read_only: false, writes_files: true, runs_processes: false, network: false }
    }
    async fn run(&self, input: TextInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("noted {}", input.text)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_lists_calls_and_is_asked_in_the_librarys_words() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let executor = AgentBuilder::new(dir.path())
        .tool(std::sync::Arc::new(Typed::new(Shout).unwrap()))
        .tool(std::sync::Arc::new(Typed::new(Note).unwrap()))
        .permission_mode(PermissionMode::Default)
        .build_executor()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let http = HttpServer::bind(addr, HttpAccess::default()).await.unwrap();
    let url = http.url();
    let served = tokio::spawn(http.serve(ToolServer::new(executor)));

    let client = tokio::process::Command::new(&python)
        .arg(peer("py_library_client.py"))
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), client).await.unwrap().unwrap();
    served.abort();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(report["server"], "agent");
    // Annotations come from each tool's effects.
    assert_eq!(report["tools"]["shout"], json!({"read_only": true, "destructive": false}));
    assert_eq!(report["tools"]["note"], json!({"read_only": false, "destructive": true}));
    assert_eq!(report["shout"], json!(["HI", false]));
    // Declined by the client's user: refused, and the tool never ran.
    let note = &report["note"];
    assert_eq!(note[1], true, "{note}");
    assert!(!note[0].as_str().unwrap_or_default().contains("noted"), "{note}");
    // The question names the rule, and no program's flag: the library serves any program.
    let questions = report["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 1, "{questions:?}");
    let question = questions[0].as_str().unwrap();
    assert!(question.contains("Allow `note` to run?"), "{question}");
    assert!(question.contains("give the server the allow rule 'Note'"), "{question}");
    assert!(!question.contains("--allow"), "{question}");
}
