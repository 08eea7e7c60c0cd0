//! The connection: the client's requests, answered in order, each session run by its own task.

use std::{
    collections::HashMap,
    path::PathBuf,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_client_protocol::{
    Agent, Client, JsonRpcMessage, UntypedMessage,
    schema::ProtocolVersion,
    v1::{
        ConnectionTo, Responder,
        schema::{
            AgentCapabilities, AuthenticateResponse, ClientNotification, ClientRequest,
            CloseSessionResponse, Implementation, ListSessionsResponse, LoadSessionResponse,
            McpCapabilities, McpServer, NewSessionResponse, PromptCapabilities,
            ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionInfo,
            SessionListCapabilities, SessionNotification, SessionResumeCapabilities,
        },
    },
};
use futures_util::{Sink, Stream};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::{
    AcpApprover, AcpAsker, ClientFiles, ClientMcpServer, Error, Host, Open, Opening,
    frames::{TOO_LARGE_METHOD, TooLarge},
    replay,
    session::{self, Command, Handle},
};

/// The lines a connection reads and writes: one JSON-RPC message each.
pub struct Frames {
    /// What the client sent, a line at a time.
    pub input: Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>>,
    /// Where the agent's lines go (only protocol frames are ever written here).
    pub output: Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>>,
}

/// The sessions open on this connection, by id.
type Sessions = Arc<Mutex<HashMap<String, Handle>>>;

/// Serves one client until it closes the connection. Must run inside a Tokio runtime: each
/// session and each session being opened is a task of its own, so a long prompt never holds up
/// a cancel or another session.
pub async fn serve(host: Arc<dyn Host>, frames: Frames) -> Result<(), Error> {
    let sessions: Sessions = Arc::default();
    let client_fs = Arc::new(AtomicBool::new(false));
    let client_forms = Arc::new(AtomicBool::new(false));
    let on_request = {
        let (host, sessions) = (host.clone(), sessions.clone());
        // Requests are parsed here rather than by the SDK, so one it cannot parse (an unknown
        // method, bad parameters) is answered with its error by us: the SDK would drop the
        // responder and log a spurious internal error for it.
        async move |message: UntypedMessage,
                    responder: Responder<serde_json::Value>,
                    connection: ConnectionTo<Client>| {
            match ClientRequest::parse_message(&message.method, &message.params) {
                Ok(request) => {
                    let state = State {
                        host: &host,
                        sessions: &sessions,
                        client_fs: &client_fs,
                        client_forms: &client_forms,
                    };
                    dispatch(&state, request, responder, connection);
                }
                Err(err) => {
                    let err = if err.code == agent_client_protocol::ErrorCode::METHOD_NOT_FOUND {
                        unsupported(&message.method)
                    } else {
                        err
                    };
                    let _ = responder.respond_with_error(err);
                }
            }
            Ok(())
        }
    };
    let on_notification = {
        let sessions = sessions.clone();
        async move |notification: ClientNotification, _connection: ConnectionTo<Client>| {
            if let ClientNotification::CancelNotification(cancel) = notification
                && let Some(handle) = lock(&sessions).get(&*cancel.session_id.0)
            {
                handle.cancel_all();
            }
            Ok(())
        }
    };
    let served = Agent
        .v1()
        .name("agent")
        .on_receive_request(on_request, agent_client_protocol::on_receive_request!())
        .on_receive_notification(on_notification, agent_client_protocol::on_receive_notification!())
        .connect_to(agent_client_protocol::Lines::new(frames.output, frames.input))
        .await;
    // The client is gone: every running prompt stops, and with it every process it started;
    // each session closes (its background jobs are killed) before the agent exits.
    let open: Vec<Handle> = lock(&sessions).drain().map(|(_, handle)| handle).collect();
    for handle in open {
        let _ = handle.close().await;
    }
    served.map_err(|err| Error::Connection(err.to_string()))
}

fn lock(sessions: &Sessions) -> std::sync::MutexGuard<'_, HashMap<String, Handle>> {
    sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the connection's requests share.
struct State<'a> {
    host: &'a Arc<dyn Host>,
    sessions: &'a Sessions,
    /// Whether the client offered both `fs/read_text_file` and `fs/write_text_file`.
    client_fs: &'a Arc<AtomicBool>,
    /// Whether the client declared form elicitation (`elicitation.form`).
    client_forms: &'a Arc<AtomicBool>,
}

/// Answers one request; what takes long (opening a session, a prompt) is handed to a task, so
/// the connection goes on reading.
fn dispatch(
    state: &State<'_>,
    request: ClientRequest,
    responder: Responder<serde_json::Value>,
    connection: ConnectionTo<Client>,
) {
    let State { host, sessions, .. } = *state;
    match request {
        ClientRequest::InitializeRequest(request) => {
            // Reads and writes go through the client only when it offers both: the staleness
            // check and the diff compare what was read with what is written, so they must see
            // the same files (docs/acp.md).
            let fs = &request.client_capabilities.fs;
            state.client_fs.store(fs.read_text_file && fs.write_text_file, Ordering::SeqCst);
            let forms =
                request.client_capabilities.elicitation.as_ref().and_then(|e| e.form.as_ref());
            state.client_forms.store(forms.is_some(), Ordering::SeqCst);
            respond(responder, Ok(initialize()))
        }
        // No authentication methods are advertised: the model's key comes from our own
        // configuration, so there is nothing for the client to do.
        ClientRequest::AuthenticateRequest(_) => {
            respond(responder, Ok(AuthenticateResponse::new()))
        }
        ClientRequest::NewSessionRequest(request) => {
            let servers = request.mcp_servers.iter().filter_map(mcp_server).collect();
            open(state, Opening::New, request.cwd, servers, responder, connection)
        }
        ClientRequest::LoadSessionRequest(request) => {
            let servers = request.mcp_servers.iter().filter_map(mcp_server).collect();
            let opening = Opening::Load(request.session_id.0.to_string());
            open(state, opening, request.cwd, servers, responder, connection)
        }
        ClientRequest::ResumeSessionRequest(request) => {
            let servers = request.mcp_servers.iter().filter_map(mcp_server).collect();
            let opening = Opening::Resume(request.session_id.0.to_string());
            open(state, opening, request.cwd, servers, responder, connection)
        }
        ClientRequest::ListSessionsRequest(request) => {
            let listed = host.list(request.cwd).map(|listed| {
                let sessions = listed
                    .into_iter()
                    .map(|session| {
                        SessionInfo::new(session.id, session.cwd)
                            .title(session.title)
                            .updated_at(session.updated_at)
                    })
                    .collect();
                ListSessionsResponse::new(sessions)
            });
            respond(responder, listed)
        }
        ClientRequest::CloseSessionRequest(request) => {
            let Some(handle) = lock(sessions).remove(&*request.session_id.0) else {
                let error = Error::UnknownSession(request.session_id.0.to_string());
                return respond::<()>(responder, Err(error));
            };
            // The session closes in its task, after its prompt has stopped; the answer waits
            // for it, so a client that has it knows that nothing the session started still
            // runs (its commands and background jobs are gone).
            let closing = handle.close();
            tokio::spawn(async move {
                let _ = closing.await;
                respond(responder, Ok(CloseSessionResponse::new()));
            });
        }
        ClientRequest::PromptRequest(request) => {
            let id = request.session_id.0.to_string();
            with_session(sessions, &id, responder, |handle, responder| {
                let cancel = handle.new_prompt();
                Command::Prompt { request, responder, cancel }
            })
        }
        ClientRequest::SetSessionModeRequest(request) => {
            let id = request.session_id.0.to_string();
            with_session(sessions, &id, responder, |_, responder| Command::SetMode {
                mode: request.mode_id.0.to_string(),
                responder,
            })
        }
        ClientRequest::SetSessionConfigOptionRequest(request) => {
            let id = request.session_id.0.to_string();
            with_session(sessions, &id, responder, |_, responder| Command::SetOption {
                option: request.config_id.0.to_string(),
                value: request.value,
                responder,
            })
        }
        // The stand-in for a request too long to read (`frames`).
        ClientRequest::ExtMethodRequest(request) if request.method.as_ref() == TOO_LARGE_METHOD => {
            let TooLarge { bytes, limit } =
                serde_json::from_str(request.params.get()).unwrap_or_default();
            respond::<()>(responder, Err(Error::FrameTooLarge { bytes, limit }));
        }
        other => {
            // Parsed, but nothing we advertise: `session/delete`, `logout`, extension methods.
            let _ = responder.respond_with_error(unsupported(other.method()));
        }
    }
}

/// The error for a method this agent does not serve.
fn unsupported(method: &str) -> agent_client_protocol::Error {
    agent_client_protocol::Error::method_not_found()
        .data(serde_json::Value::String(format!("{method} is not supported")))
}

/// What this agent can do, and nothing it cannot.
fn initialize() -> agent_client_protocol::v1::schema::InitializeResponse {
    let sessions = SessionCapabilities::new()
        .list(SessionListCapabilities::new())
        .resume(SessionResumeCapabilities::new())
        .close(SessionCloseCapabilities::new());
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        // Messages to the model are text: an embedded resource's text is sent in the prompt,
        // while an image or audio block would be dropped, so neither is advertised.
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true))
        .session_capabilities(sessions);
    agent_client_protocol::v1::schema::InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(
            Implementation::new("agent", env!("CARGO_PKG_VERSION")).title("agent".to_owned()),
        )
}

/// Hands a request to its session's task, or answers that there is no such session.
fn with_session(
    sessions: &Sessions,
    id: &str,
    responder: Responder<serde_json::Value>,
    command: impl FnOnce(&Handle, Responder<serde_json::Value>) -> Command,
) {
    let sessions = lock(sessions);
    match sessions.get(id) {
        Some(handle) => handle.send(command(handle, responder)),
        None => respond::<()>(responder, Err(Error::UnknownSession(id.to_owned()))),
    }
}

/// Opens a session in a task of its own (starting MCP servers and reading a transcript take a
/// while); for `session/load` the history is replayed before the answer, as the protocol asks.
fn open(
    state: &State<'_>,
    opening: Opening,
    cwd: PathBuf,
    mcp_servers: Vec<ClientMcpServer>,
    responder: Responder<serde_json::Value>,
    connection: ConnectionTo<Client>,
) {
    let (host, sessions) = (state.host.clone(), state.sessions.clone());
    let files =
        state.client_fs.load(Ordering::SeqCst).then(|| ClientFiles::new(connection.clone()));
    let forms = state.client_forms.load(Ordering::SeqCst);
    tokio::spawn(async move {
        let approver = AcpApprover::new(connection.clone());
        let asker = AcpAsker::new(connection.clone(), forms);
        let open = Open {
            opening: opening.clone(),
            cwd,
            mcp_servers,
            approver: approver.clone(),
            asker: asker.clone(),
            files: files.clone().map(|files| files as Arc<dyn agent_core::FileSystem>),
        };
        let opened = match host.open(open).await {
            Ok(opened) => opened,
            Err(err) => return respond::<()>(responder, Err(err)),
        };
        let id = opened.id();
        approver.bind(&id);
        asker.bind(&id);
        if let Some(files) = &files {
            files.bind(&id);
        }
        if let Opening::Load(_) = opening {
            let mut updates = replay::updates(&opened.workspace(), &opened.history());
            // The plan as it stands, after the history that made it.
            updates.extend(opened.plan().and_then(|plan| crate::updates::plan_of(&plan)));
            for update in updates {
                let _ = connection.send_notification(SessionNotification::new(id.clone(), update));
            }
        }
        let modes = crate::modes::state(opened.mode());
        let options = session::config_options(&host.models(), &opened.model());
        let (commands, receiver) = mpsc::unbounded_channel();
        let task = tokio::spawn(session::run(opened, connection, receiver, files));
        lock(&sessions).insert(id.clone(), Handle::new(commands, task));
        match opening {
            Opening::New => respond(
                responder,
                Ok(NewSessionResponse::new(id).modes(modes).config_options(options)),
            ),
            Opening::Load(_) => respond(
                responder,
                Ok(LoadSessionResponse::new().modes(modes).config_options(options)),
            ),
            Opening::Resume(_) => respond(
                responder,
                Ok(ResumeSessionResponse::new().modes(modes).config_options(options)),
            ),
        }
    });
}

/// The client's description of an MCP server in our words; SSE servers (deprecated by MCP)
/// are not taken, and `mcpCapabilities.sse` says so.
fn mcp_server(server: &McpServer) -> Option<ClientMcpServer> {
    match server {
        McpServer::Stdio(stdio) => Some(ClientMcpServer::Stdio {
            name: stdio.name.clone(),
            command: stdio.command.clone(),
            args: stdio.args.clone(),
            env: stdio.env.iter().map(|var| (var.name.clone(), var.value.clone())).collect(),
        }),
        McpServer::Http(http) => Some(ClientMcpServer::Http {
            name: http.name.clone(),
            url: http.url.clone(),
            headers: http.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
        }),
        _ => None,
    }
}

/// Sends a response or the error for it.
pub(crate) fn respond<T: Serialize>(
    responder: Responder<serde_json::Value>,
    result: Result<T, Error>,
) {
    let sent = match result.and_then(|value| {
        serde_json::to_value(value).map_err(|err| Error::Connection(err.to_string()))
    }) {
        Ok(value) => responder.respond(value),
        Err(err) => responder.respond_with_error(err.to_rpc()),
    };
    if let Err(err) = sent {
        tracing::warn!("acp: a response could not be sent: {err}");
    }
}
