//! OpenTelemetry export end to end: `agent exec` against the scripted model, exporting to a real
//! OTLP/HTTP receiver (the official protobuf classes, pinned in `scripts/peers/otel/`), which
//! decodes every request; the tests read what it received.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use agent_model::scripted::{Fault, Quirks, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{Running, command, stderr, stdout};

const MARKER: &str = "zebra-marker-4417";
const SECRET: &str = "sk-test-secret-9Qx7";
/// The model the scripted server says answered, unlike the `test-model` requested, as OpenAI
/// answers `gpt-4o` with a dated version.
const SERVED: &str = "test-model-2026-12-01";

/// The receiver, killed when dropped; `out` is the JSON-lines file it appends to.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(dir: &Path) -> Option<Self> {
        let python = agent_test_support::peer_python("otel")?;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/peers/otel/receiver.py");
        let out = dir.join("otlp.jsonl");
        let mut child =
            Command::new(python).arg(script).arg(&out).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap();
        Some(Self { child, port, out })
    }

    /// Every export received, decoded.
    fn exports(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// Every span received, flattened, with its attributes as a map.
    fn spans(&self) -> Vec<Value> {
        let mut spans = Vec::new();
        for export in self.exports().iter().filter(|e| e["path"] == "/v1/traces") {
            for resource in export["body"]["resourceSpans"].as_array().into_iter().flatten() {
                for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                    for span in scope["spans"].as_array().into_iter().flatten() {
                        let mut span = span.clone();
                        span["attrs"] = attributes(&span["attributes"]);
                        spans.push(span);
                    }
                }
            }
        }
        spans
    }

    /// Every metric received, by name, with its data points' attributes as maps.
    fn metrics(&self) -> Vec<Value> {
        let mut metrics = Vec::new();
        for export in self.exports().iter().filter(|e| e["path"] == "/v1/metrics") {
            for resource in export["body"]["resourceMetrics"].as_array().into_iter().flatten() {
                for scope in resource["scopeMetrics"].as_array().into_iter().flatten() {
                    metrics.extend(scope["metrics"].as_array().into_iter().flatten().cloned());
                }
            }
        }
        metrics
    }
}

/// OTLP's attribute list as a map of plain values.
fn attributes(list: &Value) -> Value {
    let mut map = serde_json::Map::new();
    for kv in list.as_array().into_iter().flatten() {
        let value = &kv["value"];
        let plain = value
            .get("stringValue")
            .cloned()
            .or_else(|| {
                value.get("intValue").and_then(|v| v.as_str()?.parse::<i64>().ok()).map(Value::from)
            })
            .or_else(|| value.get("boolValue").cloned())
            .unwrap_or_else(|| value.clone());
        map.insert(kv["key"].as_str().unwrap_or_default().to_owned(), plain);
    }
    Value::Object(map)
}

/// The scripted conversation: one turn with an allowed read and a write that exec's dont-ask
/// mode denies, then the answer; the marker is in the prompt, the arguments, the file read and
/// the answer. The server names [`SERVED`] as the model that answered.
fn two_turns() -> Vec<Turn> {
    let served = Quirks { served_model: Some(SERVED.to_owned()), ..Quirks::default() };
    vec![
        Turn::tool_calls([
            ScriptedCall::new("call_read", "read_file", json!({"path": "notes.txt"})),
            ScriptedCall::new(
                "call_write",
                "write_file",
                json!({"path": "out.txt", "content": format!("{MARKER} written")}),
            ),
        ])
        .with_quirks(served.clone()),
        Turn::text(format!("Done: {MARKER}.")).with_quirks(served),
    ]
}

/// Runs `agent exec` with `env` against a scripted server playing `turns`.
async fn exec(
    dir: &Path,
    turns: Vec<Turn>,
    env: &[(&str, String)],
) -> (std::process::Output, Duration) {
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let url = server.url();
    let prompt = format!("read notes.txt and save {MARKER}");
    let args = ["--base-url", &url, "--model", "test-model", "exec", &prompt];
    let mut command = command(dir, &args);
    command.stdin(Stdio::null()).env("OPENAI_API_KEY", SECRET);
    for (key, value) in env {
        command.env(key, value);
    }
    let started = Instant::now();
    let output =
        tokio::task::spawn_blocking(move || Running::spawn(&mut command).finish("agent exec"))
            .await
            .unwrap();
    (output, started.elapsed())
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/notes.txt"), format!("{MARKER}\nkey {SECRET}\n")).unwrap();
    dir
}

/// The variables that point the export at `port`, with a time limit generous enough for a
/// loaded machine (the bound itself is checked with a closed port).
fn endpoint(port: u16) -> [(&'static str, String); 2] {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{port}")),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "20000".to_owned()),
    ]
}

fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"].as_str().unwrap_or_default().starts_with(prefix)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_turn_exec_is_one_parented_trace_with_chat_and_tool_spans_and_metrics() {
    let dir = workspace();
    let Some(receiver) = Receiver::start(dir.path()) else { return };
    let (output, _) = exec(&dir.path().join("ws"), two_turns(), &endpoint(receiver.port)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("telemetry"), "{}", stderr(&output));
    let spans = receiver.spans();

    let traces: std::collections::BTreeSet<&str> =
        spans.iter().filter_map(|s| s["traceId"].as_str()).collect();
    assert_eq!(traces.len(), 1, "{spans:#?}");
    let roots: Vec<&Value> = spans.iter().filter(|s| s.get("parentSpanId").is_none()).collect();
    assert_eq!(roots.len(), 1, "{spans:#?}");
    assert_eq!(roots[0]["name"], "invoke_agent agent");
    assert_eq!(roots[0]["attrs"]["gen_ai.operation.name"], "invoke_agent");
    let ids: std::collections::BTreeSet<&str> =
        spans.iter().filter_map(|s| s["spanId"].as_str()).collect();
    for span in &spans {
        if let Some(parent) = span["parentSpanId"].as_str() {
            assert!(ids.contains(parent), "orphan: {span:#?}");
        }
    }
    let prompt = named(&spans, "prompt");
    assert_eq!(prompt.len(), 1);
    assert_eq!(prompt[0]["parentSpanId"], roots[0]["spanId"]);
    assert_eq!(prompt[0]["attrs"]["agent.finish_reason"], "answered");

    let chats = named(&spans, "chat ");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in &chats {
        assert_eq!(chat["name"], "chat test-model");
        assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(chat["parentSpanId"], prompt[0]["spanId"]);
        assert_eq!(chat["attrs"]["gen_ai.request.model"], "test-model");
        // The model the server says answered, not the one asked for.
        assert_eq!(chat["attrs"]["gen_ai.response.model"], SERVED, "{chat:#?}");
        assert_eq!(chat["attrs"]["server.address"], "127.0.0.1");
        assert!(chat["attrs"]["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0, "{chat:#?}");
        assert!(chat["attrs"]["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0, "{chat:#?}");
        assert!(chat["attrs"].get("gen_ai.usage.cache_read.input_tokens").is_some());
    }

    let tools = named(&spans, "execute_tool ");
    assert_eq!(tools.len(), 2, "{spans:#?}");
    let read = tools.iter().find(|s| s["attrs"]["gen_ai.tool.name"] == "read_file").unwrap();
    assert_eq!(read["attrs"]["gen_ai.tool.call.id"], "call_read");
    assert_eq!(read["attrs"]["agent.tool.decision"], "accept");
    assert_eq!(read["attrs"]["agent.tool.decision.source"], "config");
    assert!(read.get("status").and_then(|s| s.get("code")).is_none(), "{read:#?}");
    let write = tools.iter().find(|s| s["attrs"]["gen_ai.tool.name"] == "write_file").unwrap();
    assert_eq!(write["attrs"]["agent.tool.decision"], "reject");
    assert_eq!(write["attrs"]["agent.tool.decision.source"], "config");
    assert_eq!(write["attrs"]["error.type"], "permission_denied");
    assert_eq!(write["status"]["code"], "STATUS_CODE_ERROR");
    for tool in &tools {
        assert_eq!(tool["parentSpanId"], prompt[0]["spanId"]);
    }

    let metrics = receiver.metrics();
    let names: Vec<&str> = metrics.iter().filter_map(|m| m["name"].as_str()).collect();
    for name in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "gen_ai.execute_tool.duration",
        "agent.tool.calls",
        "agent.tool.decisions",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let calls = metrics.iter().find(|m| m["name"] == "agent.tool.calls").unwrap();
    let outcomes: Vec<Value> = calls["sum"]["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| attributes(&p["attributes"])["agent.tool.outcome"].clone())
        .collect();
    assert!(outcomes.contains(&json!("ok")) && outcomes.contains(&json!("permission_denied")));
    let decisions = metrics.iter().find(|m| m["name"] == "agent.tool.decisions").unwrap();
    let decided: Vec<Value> = decisions["sum"]["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| attributes(&p["attributes"])["agent.tool.decision"].clone())
        .collect();
    assert!(decided.contains(&json!("accept")) && decided.contains(&json!("reject")));
    let tokens = metrics.iter().find(|m| m["name"] == "gen_ai.client.token.usage").unwrap();
    let kinds: Vec<Value> = tokens["histogram"]["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| attributes(&p["attributes"])["gen_ai.token.type"].clone())
        .collect();
    assert!(kinds.contains(&json!("input")) && kinds.contains(&json!("output")), "{tokens:#?}");

    // Nothing the user or a tool wrote is exported without an opt-in, in any form.
    let everything = std::fs::read_to_string(&receiver.out).unwrap();
    let marker_hex: String = MARKER.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!everything.contains(MARKER) && !everything.contains(&marker_hex));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opted_in_content_is_exported_with_the_secret_redacted() {
    let dir = workspace();
    let Some(receiver) = Receiver::start(dir.path()) else { return };
    let capture = ("AGENT_OTEL_CAPTURE", "prompts,answers,tool_arguments,tool_outputs".to_owned());
    let mut env = endpoint(receiver.port).to_vec();
    env.push(capture);
    let (output, _) = exec(&dir.path().join("ws"), two_turns(), &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let spans = receiver.spans();
    // The control: the opt-ins export the content (the marker is in each field)…
    let prompt = named(&spans, "prompt")[0];
    assert!(prompt["attrs"]["gen_ai.input.messages"].as_str().unwrap().contains(MARKER));
    assert!(prompt["attrs"]["gen_ai.output.messages"].as_str().unwrap().contains(MARKER));
    let tools = named(&spans, "execute_tool ");
    let read = tools.iter().find(|s| s["attrs"]["gen_ai.tool.name"] == "read_file").unwrap();
    let result = read["attrs"]["gen_ai.tool.call.result"].as_str().unwrap();
    assert!(result.contains(MARKER) && result.contains("[redacted]"), "{result}");
    let write = tools.iter().find(|s| s["attrs"]["gen_ai.tool.name"] == "write_file").unwrap();
    assert!(write["attrs"]["gen_ai.tool.call.arguments"].as_str().unwrap().contains(MARKER));
    // …and the secret the tool read is in none of it.
    let everything = std::fs::read_to_string(&receiver.out).unwrap();
    let secret_hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!everything.contains(SECRET) && !everything.contains(&secret_hex));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_model_request_is_an_error_span() {
    let dir = workspace();
    let Some(receiver) = Receiver::start(dir.path()) else { return };
    let fault = Fault::Status {
        status: 400,
        body: r#"{"error":{"message":"bad request","type":"invalid_request_error"}}"#.to_owned(),
        content_type: None,
        headers: Default::default(),
    };
    let (output, _) =
        exec(&dir.path().join("ws"), vec![Turn::fault(fault)], &endpoint(receiver.port)).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let spans = receiver.spans();
    let chats = named(&spans, "chat ");
    assert_eq!(chats.len(), 1, "{spans:#?}");
    assert_eq!(chats[0]["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(chats[0]["attrs"]["error.type"], "invalid_request");
    let prompt = named(&spans, "prompt")[0];
    assert_eq!(prompt["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(named(&spans, "invoke_agent").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_collector_costs_one_warning_and_no_more_than_the_bound() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    // A port that was just free: nothing listens there, so every export is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (plain, plain_took) = exec(&ws, two_turns(), &[]).await;
    let [url, _] = endpoint(port);
    let timeout = ("OTEL_EXPORTER_OTLP_TIMEOUT", "1000".to_owned());
    let (exported, took) = exec(&ws, two_turns(), &[url, timeout]).await;
    assert_eq!(exported.status.code(), plain.status.code(), "{}", stderr(&exported));
    assert_eq!(stdout(&exported), stdout(&plain));
    assert_eq!(stderr(&exported).matches("telemetry").count(), 1, "{}", stderr(&exported));
    // The bound is the export timeout (1 s here); the margin is for a loaded machine.
    assert!(took < plain_took + Duration::from_secs(1) + Duration::from_secs(5), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_delays_the_exit_by_at_most_the_bound() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    // It accepts every connection and reads nothing back: each export waits for its time limit.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let (plain, plain_took) = exec(&ws, two_turns(), &[]).await;
    let [url, _] = endpoint(port);
    let timeout = ("OTEL_EXPORTER_OTLP_TIMEOUT", "1000".to_owned());
    let (exported, took) = exec(&ws, two_turns(), &[url, timeout]).await;
    assert_eq!(exported.status.code(), plain.status.code(), "{}", stderr(&exported));
    assert_eq!(stdout(&exported), stdout(&plain));
    // The export was attempted (the control), and cost one warning.
    assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert_eq!(stderr(&exported).matches("telemetry").count(), 1, "{}", stderr(&exported));
    assert!(took < plain_took + Duration::from_secs(1) + Duration::from_secs(5), "{took:?}");
}
