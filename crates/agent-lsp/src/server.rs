//! One running language server: started under the OS sandbox, spoken to over stdio with the
//! framing of [`crate::codec`], answering the few requests a server makes of its client, and
//! keeping the diagnostics it publishes per document and version.

use std::{
    collections::HashMap,
    path::Path,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
    time::Duration,
};

use agent_sandbox::{
    process::{ProcessSpec, SandboxedService, spawn_sandboxed_service},
    sandbox::SandboxConfig,
};
use futures_util::{SinkExt as _, StreamExt as _};
use ls_types::Uri;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::{
    LspError,
    codec::LspCodec,
    config::ServerConfig,
    diff::{Diag, Severity},
};

/// The diagnostics last published for one document.
#[derive(Debug, Clone)]
struct Published {
    version: Option<i32>,
    diagnostics: Vec<Diag>,
    /// The value of the publish counter when this arrived.
    seq: u64,
    /// When it arrived.
    at: std::time::Instant,
}

/// A started, initialised server.
pub(crate) struct Server {
    outgoing: mpsc::UnboundedSender<Value>,
    next_id: AtomicI64,
    replies: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    published: Mutex<HashMap<String, Published>>,
    /// Ticks on every publish and when the server goes away.
    tick: watch::Sender<u64>,
    alive: Arc<AtomicBool>,
    service: Mutex<SandboxedService>,
    /// Which start of this language this is (1 for the first).
    pub(crate) generation: u64,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("generation", &self.generation).finish_non_exhaustive()
    }
}

/// What waiting for a version's diagnostics ended with.
#[derive(Debug)]
pub(crate) enum Waited {
    /// They arrived, at this instant.
    Arrived(Vec<Diag>, std::time::Instant),
    /// The server exited first.
    Gone,
    /// The time ran out.
    TimedOut,
}

/// How to start one server.
pub(crate) struct Launch {
    /// Its sandbox (writable: its cache only).
    pub(crate) sandbox: SandboxConfig,
    /// Its environment before the sandbox scrubs it.
    pub(crate) env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Where its stderr goes.
    pub(crate) log: std::fs::File,
    /// The largest message accepted from it.
    pub(crate) max_message_bytes: usize,
    /// How long `initialize` may take.
    pub(crate) timeout: Duration,
    /// Which start of its language this is.
    pub(crate) generation: u64,
}

impl Server {
    /// Starts `config`'s server for the project at `root` as `launch` says, and completes the
    /// `initialize` handshake within its timeout.
    pub(crate) async fn start(
        config: &ServerConfig,
        root: &Path,
        launch: Launch,
    ) -> Result<Arc<Server>, LspError> {
        let Launch { sandbox, env, log, max_message_bytes, timeout, generation } = launch;
        let Some((program, args)) = config.command.split_first() else {
            return Err(LspError::Start("the command is empty".into()));
        };
        let mut spec = ProcessSpec::new(program).cwd(root);
        spec.args = args.iter().map(Into::into).collect();
        spec.base_env = Some(env);
        let mut service = spawn_sandboxed_service(&spec, &sandbox, log)
            .map_err(|err| LspError::Start(err.to_string()))?;
        let (stdout, stdin) =
            service.take_stdio().ok_or_else(|| LspError::Start("no stdio pipes".into()))?;
        let codec = LspCodec { max_body: max_message_bytes };
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Value>();
        let alive = Arc::new(AtomicBool::new(true));
        let server = Arc::new(Server {
            outgoing,
            next_id: AtomicI64::new(1),
            replies: Mutex::default(),
            published: Mutex::default(),
            tick: watch::channel(0).0,
            alive: alive.clone(),
            service: Mutex::new(service),
            generation,
        });
        let mut sink = FramedWrite::new(stdin, codec);
        tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
        });
        // The reader holds only a weak reference, so dropping the session's last handle ends it.
        let weak = Arc::downgrade(&server);
        let mut stream = FramedRead::new(stdout, codec);
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                let message = match message {
                    Ok(message) => message,
                    Err(err) => {
                        tracing::warn!(error = %err, "language server output unreadable");
                        break;
                    }
                };
                let Some(server) = weak.upgrade() else { return };
                server.receive(message);
            }

            alive.store(false, Ordering::SeqCst);
            if let Some(server) = weak.upgrade() {
                server.tick.send_modify(|n| *n += 1);
                // Whoever waits for an answer hears that none will come.
                server.replies.lock().unwrap_or_else(PoisonError::into_inner).clear();
            }
        });
        let root_uri = Uri::from_file_path(root).ok_or_else(|| {
            LspError::Start(format!("{} is not an absolute path", root.display()))
        })?;
        let params = json!({
            // No process id: servers poll it with `kill(pid, 0)` and exit when that fails, and
            // the sandbox does not let them signal us. The supervisor ends them when we go.
            "processId": null,
            "clientInfo": {"name": "agent", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri.as_str(),
            "rootPath": root.display().to_string(),
            "workspaceFolders": [{"uri": root_uri.as_str(), "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
            "initializationOptions": config.initialization_options,
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": false, "dynamicRegistration": false},
                    "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
                },
                "workspace": {"configuration": true, "workspaceFolders": true},
                "window": {"workDoneProgress": false},
                "general": {"positionEncodings": ["utf-16"]},
            },
        });
        match tokio::time::timeout(timeout, server.request("initialize", params)).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => return Err(err),
            Err(_) => {
                return Err(LspError::Start(format!(
                    "no answer to initialize within {} s",
                    timeout.as_secs()
                )));
            }
        }
        server.notify("initialized", json!({}));
        Ok(server)
    }

    /// Whether the server still runs.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
            && !self.service.lock().unwrap_or_else(PoisonError::into_inner).has_exited()
    }

    /// The process group of the server (its supervisor's pid).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.service.lock().unwrap_or_else(PoisonError::into_inner).pid()
    }

    /// Kills the server's whole process group.
    pub(crate) fn kill(&self) {
        self.service.lock().unwrap_or_else(PoisonError::into_inner).kill();
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        let _ = self.outgoing.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its result.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.replies.lock().unwrap_or_else(PoisonError::into_inner).insert(id, tx);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.outgoing.send(message).is_err() {
            return Err(LspError::Gone);
        }
        let reply = rx.await.map_err(|_| LspError::Gone)?;
        match reply.get("error") {
            Some(error) => Err(LspError::Answer(
                error.get("message").and_then(Value::as_str).unwrap_or("an error").to_owned(),
            )),
            None => Ok(reply.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// The publish counter now: a document's diagnostics without a version count only when they
    /// arrive after this.
    pub(crate) fn seq(&self) -> u64 {
        *self.tick.borrow()
    }

    /// Waits until the diagnostics of `uri` at `version` arrive (or, from a server that sends no
    /// versions, any published after `since`), up to `timeout`.
    pub(crate) async fn wait_for(
        &self,
        uri: &Uri,
        version: i32,
        since: u64,
        timeout: Duration,
        settle: Duration,
    ) -> Waited {
        let mut ticks = self.tick.subscribe();
        let wait = async {
            loop {
                if let Some((mut found, mut at)) = self.published_for(uri, version, since) {
                    // Some servers publish one version in parts (syntax, then types): take the
                    // last part that arrives within `settle` of the one before.
                    let mut seen = self.seq();
                    while !settle.is_zero()
                        && tokio::time::timeout(settle, ticks.changed())
                            .await
                            .is_ok_and(|r| r.is_ok())
                    {
                        if let Some((later, later_at)) = self.published_for(uri, version, seen) {
                            (found, at) = (later, later_at);
                        }
                        seen = self.seq();
                    }
                    return Waited::Arrived(found, at);
                }
                if !self.alive.load(Ordering::SeqCst) {
                    return Waited::Gone;
                }
                if ticks.changed().await.is_err() {
                    return Waited::Gone;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(Waited::TimedOut)
    }

    fn published_for(
        &self,
        uri: &Uri,
        version: i32,
        since: u64,
    ) -> Option<(Vec<Diag>, std::time::Instant)> {
        let published = self.published.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = published.get(uri.as_str())?;
        let current = match entry.version {
            Some(v) => v == version,
            None => entry.seq > since,
        };
        current.then(|| (entry.diagnostics.clone(), entry.at))
    }

    /// Everything published so far, by document.
    pub(crate) fn all_published(&self) -> Vec<(String, Vec<Diag>)> {
        let published = self.published.lock().unwrap_or_else(PoisonError::into_inner);
        published.iter().map(|(uri, p)| (uri.clone(), p.diagnostics.clone())).collect()
    }

    /// Handles one message from the server.
    fn receive(&self, message: Value) {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                let waiter =
                    self.replies.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(message);
                }
            }
            (Some(method), Some(id)) => {
                let params = message.get("params").unwrap_or(&Value::Null);
                let reply = match method {
                    // One null per item asked: "no settings", so each server uses its defaults.
                    "workspace/configuration" => {
                        let items =
                            params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
                        json!({"result": vec![Value::Null; items]})
                    }
                    "window/workDoneProgress/create"
                    | "client/registerCapability"
                    | "client/unregisterCapability"
                    | "window/showMessageRequest" => json!({"result": null}),
                    "workspace/workspaceFolders" => json!({"result": null}),
                    _ => {
                        json!({"error": {"code": -32601, "message": "not supported by this client"}})
                    }
                };
                let mut reply = reply;
                reply["jsonrpc"] = json!("2.0");
                reply["id"] = id;
                let _ = self.outgoing.send(reply);
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = message.get("params") else { return };
                let Some(uri) = params.get("uri").and_then(Value::as_str) else { return };
                let version = params.get("version").and_then(Value::as_i64).map(|v| v as i32);
                let diagnostics = params
                    .get("diagnostics")
                    .and_then(Value::as_array)
                    .map(|list| list.iter().filter_map(diag).collect())
                    .unwrap_or_default();
                let seq = self.seq() + 1;
                self.published.lock().unwrap_or_else(PoisonError::into_inner).insert(
                    uri.to_owned(),
                    Published { version, diagnostics, seq, at: std::time::Instant::now() },
                );
                self.tick.send_modify(|n| *n = seq);
            }
            _ => {}
        }
    }
}

/// A diagnostic from its LSP JSON, parsed with the protocol's own type.
fn diag(value: &Value) -> Option<Diag> {
    let parsed: ls_types::Diagnostic = serde_json::from_value(value.clone()).ok()?;
    let severity = match parsed.severity {
        Some(ls_types::DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(ls_types::DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(ls_types::DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    let code = parsed.code.map(|code| match code {
        ls_types::NumberOrString::Number(n) => n.to_string(),
        ls_types::NumberOrString::String(s) => s,
    });
    Some(Diag {
        line: parsed.range.start.line,
        character: parsed.range.start.character,
        severity,
        message: parsed.message,
        code,
    })
}
