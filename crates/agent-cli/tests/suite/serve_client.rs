//! Driving `agent serve` from a test: starting it on 127.0.0.1 with a port of its choosing,
//! reading its token from the file it printed, calling its API and reading its event streams.

use std::{path::Path, process::Stdio};

use serde_json::Value;

use crate::suite::{DEADLINE, Running, command};

/// A running `agent serve`.
pub(crate) struct Serve {
    pub(crate) running: Running,
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    pub(crate) port: u16,
    pub(crate) token: String,
    /// Where the server wrote the token.
    pub(crate) token_file: std::path::PathBuf,
}

/// Starts `agent ARGS serve --listen 127.0.0.1:0 SERVE_ARGS` in `dir/server` (its data in
/// `dir/agent-data`) and waits until it listens.
pub(crate) fn start(dir: &Path, args: &[&str], serve_args: &[&str]) -> Serve {
    let dir = dir.join("server");
    std::fs::create_dir_all(&dir).unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["serve", "--listen", "127.0.0.1:0"]);
    all.extend(serve_args);
    let mut command = command(&dir, &all);
    command.stdin(Stdio::null());
    let mut running = Running::spawn(&mut command);
    running.wait_for_stderr(" (mode 0600)", 1);
    let line = running
        .stderr_so_far()
        .lines()
        .find(|line| line.contains("listening on"))
        .unwrap()
        .to_owned();
    let address = line.split("http://").nth(1).unwrap().split('/').next().unwrap().to_owned();
    let token_file = std::path::PathBuf::from(
        line.split("token in ").nth(1).unwrap().trim_end_matches(" (mode 0600)"),
    );
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    let port = address.rsplit(':').next().unwrap().parse().unwrap();
    Serve { running, base: format!("http://{address}"), port, token, token_file }
}

/// A client with no proxy (loopback only) and no TLS provider needed.
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

impl Serve {
    /// A request to `path` with the token.
    pub(crate) fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        client()
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .timeout(DEADLINE)
    }

    /// `method path` with the token and a JSON body; the status and the JSON answer (`null`
    /// when there is none).
    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.request(method.parse().unwrap(), path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request).await
    }

    /// The event stream of `session` after event `after` (`Last-Event-ID`).
    pub(crate) async fn events(&self, session: &str, after: u64) -> Events {
        let path = format!("/v1/sessions/{session}/events");
        let response = client()
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .header("Last-Event-ID", after.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let kind = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert_eq!(kind, "text/event-stream");
        Events { response, buffer: String::new() }
    }
}

/// Sends a request; the status and the JSON answer (`null` when empty or not JSON).
pub(crate) async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// An open SSE stream.
pub(crate) struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The next event: its id and its data as JSON. Fails after [`DEADLINE`].
    pub(crate) async fn next(&mut self) -> (u64, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut id = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(rest) = line.strip_prefix("id:") {
                        id = Some(rest.trim().parse().unwrap());
                    } else if let Some(rest) = line.strip_prefix("data:") {
                        data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
                    }
                }
                let Some(id) = id else { continue };
                return (id, serde_json::from_str(&data).unwrap());
            }
            let chunk = tokio::time::timeout(DEADLINE, self.response.chunk()).await;
            let chunk = chunk.expect("an event within the deadline").unwrap();
            let chunk = chunk.expect("the stream goes on");
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Events up to and including the first whose `type` is `until`.
    pub(crate) async fn until(&mut self, until: &str) -> Vec<(u64, Value)> {
        let mut events = Vec::new();
        loop {
            let event = self.next().await;
            let done = event.1["type"] == until;
            events.push(event);
            if done {
                return events;
            }
        }
    }
}

/// Checks every event against `docs/exec-events.schema.json`, and each run's frame: it begins
/// with `run.started` and ends with exactly one `run.completed` or `run.failed`; ids count up
/// by one.
pub(crate) fn check_events(events: &[(u64, Value)]) {
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/exec-events.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for pair in events.windows(2) {
        assert_eq!(pair[1].0, pair[0].0 + 1, "ids count up by one: {events:?}");
    }
    let mut open = false;
    for (id, event) in events {
        if let Err(err) = validator.validate(event) {
            panic!("event {id} does not fit the schema: {err}\n{event}");
        }
        match event["type"].as_str().unwrap() {
            "run.started" => {
                assert!(!open, "a run began inside a run: {events:?}");
                assert_eq!(event["schema_version"], 1);
                open = true;
            }
            "run.completed" | "run.failed" => {
                assert!(open, "a run ended that had not begun: {events:?}");
                open = false;
            }
            _ => assert!(open, "an event outside a run: {event}"),
        }
    }
}
