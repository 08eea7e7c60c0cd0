//! A scripted OpenAI-compatible HTTP server on 127.0.0.1, for the tests and demos of every crate.
//!
//! It answers `POST …/chat/completions` and `POST …/responses`, streamed (when the body says
//! `"stream": true`) or whole, playing one [`Turn`] of its [`Script`] per request, and records every
//! request for assertions. Turns can inject [`Fault`]s and [`Quirks`] of compatible servers.
//!
//! ```no_run
//! use agent_model::scripted::{Script, ScriptedServer, Turn};
//!
//! # async fn run() -> std::io::Result<()> {
//! let server = ScriptedServer::start(Script::new([Turn::text("Hello.")])).await?;
//! let base_url = server.url(); // http://127.0.0.1:PORT/v1
//! // … point a client at `base_url` …
//! assert_eq!(server.requests().len(), 0);
//! # Ok(())
//! # }
//! ```

mod bench;
mod http;
mod render;
mod script;

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::BufReader,
    net::{TcpListener, TcpStream},
    task::JoinHandle,
};

use self::render::Ids;
pub use self::{
    bench::{Throughput, one_large_event, serde_only_throughput, sse_parse_throughput},
    http::RecordedRequest,
    script::{CallKind, Fault, Quirks, Script, ScriptedCall, Standing, Turn},
};

#[derive(Default)]
struct State {
    turns: VecDeque<Turn>,
    standing: Vec<Standing>,
    context_window: Option<u64>,
    requests: Vec<RecordedRequest>,
}

/// A running scripted server. Dropping it stops the server.
pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Binds an ephemeral port on 127.0.0.1 and starts serving `script` on the current Tokio
    /// runtime.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            turns: script.turns.into(),
            standing: script.standing,
            context_window: script.context_window,
            requests: Vec::new(),
        }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Ok(Self { addr, state, task })
    }

    /// The base URL to configure a client with: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every model request (to either API) received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// How many turns have not been played yet.
    pub fn remaining_turns(&self) -> usize {
        lock(&self.state).turns.len()
    }

    /// Appends turns to the script.
    pub fn push_turns(&self, turns: impl IntoIterator<Item = Turn>) {
        lock(&self.state).turns.extend(turns);
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock cannot leave the plain data inconsistent.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which API a path addresses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    Chat,
    Responses,
}

async fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut reader = BufReader::new(stream);
    let Ok(request) = http::read_request(&mut reader).await else {
        return;
    };
    let path = request.path.split('?').next().unwrap_or_default().to_owned();
    let api = match (request.method.as_str(), path.as_str()) {
        ("POST", path) if path.ends_with("/chat/completions") => Some(Api::Chat),
        ("POST", path) if path.ends_with("/responses") => Some(Api::Responses),
        _ => None,
    };
    let Some(api) = api else {
        // Other paths are not model requests: they are neither recorded nor given a turn. A
        // client asking for the model list (the context window probe) gets the scripted window.
        let window = lock(&state).context_window;
        let stream = reader.into_inner();
        let _ = match window.filter(|_| request.method == "GET" && path.ends_with("/models")) {
            Some(window) => {
                let list = json!({"object": "list", "data": [{"id": "scripted", "object": "model", "max_model_len": window}]});
                answer(stream, 200, "application/json", &[], &list.to_string()).await
            }
            None => {
                answer(stream, 404, "text/plain; charset=utf-8", &[], "404 page not found").await
            }
        };
        return;
    };
    let body = request.json();
    let (n, turn) = {
        let mut state = lock(&state);
        state.requests.push(request);
        let n = state.requests.len();
        let raw = state.requests.last().map(|request| request.body.as_str()).unwrap_or_default();
        let standing = state.standing.iter().find(|s| raw.contains(&s.when_body_contains));
        let turn = match standing {
            Some(standing) => Some(standing.turn.clone()),
            None => state.turns.pop_front(),
        };
        (n, turn)
    };
    let stream = reader.into_inner();
    let Some(turn) = turn else {
        let error = json!({"error": {"message": format!("scripted server: no turn left for request {n}"), "type": "invalid_request_error", "code": "script_exhausted"}});
        let _ = answer(stream, 400, "application/json", &[], &error.to_string()).await;
        return;
    };
    if turn.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
    }
    let requested = body["model"].as_str().unwrap_or("scripted");
    let model = turn.quirks.served_model.as_deref().unwrap_or(requested).to_owned();
    let ids = Ids { n, model };
    let streaming = body["stream"] == Value::Bool(true);
    let _ = play(stream, api, streaming, &turn, &ids).await;
}

async fn answer(
    mut stream: TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
    headers.push(("x-request-id".to_owned(), "req_scripted".to_owned()));
    headers.extend(extra.iter().cloned());
    http::write_whole(&mut stream, status, headers, body).await
}

async fn play(
    mut stream: TcpStream,
    api: Api,
    streaming: bool,
    turn: &Turn,
    ids: &Ids,
) -> std::io::Result<()> {
    let request_id = vec![("x-request-id".to_owned(), format!("req_scripted_{}", ids.n))];
    match &turn.fault {
        Some(Fault::Status { status, body, content_type, headers }) => {
            let extra: Vec<_> = headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let content_type = content_type.as_deref().unwrap_or("application/json");
            let mut all = request_id;
            all.extend(extra);
            let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
            headers.extend(all);
            return http::write_whole(&mut stream, *status, headers, body).await;
        }
        Some(Fault::Reset) => {
            http::reset(stream);
            return Ok(());
        }
        _ => {}
    }
    let whole = || match api {
        Api::Chat => render::chat_whole(turn, ids),
        Api::Responses => render::responses_whole(turn, ids),
    };
    let json_headers = |mut headers: Vec<(String, String)>| {
        headers.insert(0, ("content-type".to_owned(), "application/json".to_owned()));
        headers
    };
    if !streaming || turn.fault == Some(Fault::NotSse) {
        let body = match turn.fault {
            Some(Fault::MalformedJson) => r#"{"id": "chatcmpl-broken", "choices": [{"#.to_owned(),
            _ => whole().to_string(),
        };
        return http::write_whole(&mut stream, 200, json_headers(request_id), &body).await;
    }
    let events = match api {
        Api::Chat => render::chat_stream(turn, ids),
        Api::Responses => render::responses_stream(turn, ids),
    };
    http::write_stream_head(&mut stream, request_id).await?;
    let cut = match &turn.fault {
        Some(
            Fault::ResetAfter { events } | Fault::Truncate { events } | Fault::Chunk { events, .. },
        ) => Some(*events),
        Some(Fault::MalformedJson) => Some(1),
        _ => None,
    };
    for (sent, event) in events.iter().enumerate() {
        if cut == Some(sent) {
            break;
        }
        if turn.event_delay_ms > 0 && sent > 0 {
            tokio::time::sleep(Duration::from_millis(turn.event_delay_ms)).await;
        }
        http::write_chunk(&mut stream, event).await?;
    }
    match &turn.fault {
        Some(Fault::ResetAfter { .. }) => {
            http::reset(stream);
            return Ok(());
        }
        Some(Fault::Chunk { chunk, .. }) => {
            http::write_chunk(&mut stream, &render::sse(None, chunk)).await?;
        }
        Some(Fault::MalformedJson) => {
            http::write_chunk(&mut stream, "data: {\"choices\": [{\"delta\": \n\n").await?;
        }
        _ => {}
    }
    http::write_end(&mut stream).await
}
