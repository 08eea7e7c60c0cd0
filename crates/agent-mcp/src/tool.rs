//! `McpTool`: one tool of an MCP server, as an ordinary registry tool.
//!
//! Every call takes the built-ins' path: the executor validates the arguments against the
//! server's `inputSchema` here in `prepare` (an invalid call never reaches the server), applies the
//! permission policy to the tool's `Effects`, runs it under the executor's time limit (the
//! absolute cap) and caps the output. Inside `run`, the call has an idle timeout that progress
//! notifications reset, and a cancelled call sends `notifications/cancelled`.

use std::{path::PathBuf, sync::Arc};

use agent_core::{
    BoxFuture, Effects, PreparedCall, Tool, ToolContext, ToolError, ToolErrorKind, ToolOutput,
    ToolSpec,
    schema::{ArgsError, ArgsValidator, make_strict},
};
use rmcp::{
    ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
        ClientNotification, ClientRequest, ServerResult,
    },
    service::PeerRequestOptions,
};
use serde_json::Value;

use crate::{content, server::Server};

/// How many `input_required` rounds one call may take (the official SDKs' default).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// What one request of a call came back with.
enum Round {
    Done(ToolOutput),
    Asked(rmcp::model::InputRequiredResult),
}

/// One tool of one server.
pub struct McpTool {
    spec: ToolSpec,
    validator: ArgsValidator,
    server: Arc<Server>,
    /// The tool's name on the server.
    remote: String,
    /// Where images and other binary results are saved.
    files_dir: Option<PathBuf>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("name", &self.spec.name).finish_non_exhaustive()
    }
}

/// A server's tool that cannot be offered.
#[derive(Debug, thiserror::Error)]
#[error("mcp tool `{tool}` of `{server}` is left out: {reason}")]
pub struct BadTool {
    /// The server.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// Why.
    pub reason: String,
}

/// What a server's annotations let a call do without asking.
///
/// A `readOnlyHint` is believed only on a server marked `trust = true`; a `destructiveHint` is
/// never treated as read-only. Everything else is a tool with side effects, which the default
/// mode asks about and `dont-ask` refuses unless a rule allows it.
///
/// Annotations are hints a server may get wrong or lie about, so the only thing they can do is
/// spare a question, and only when the user said the server is trusted.
pub fn effects(annotations: Option<&rmcp::model::ToolAnnotations>, trust: bool) -> Effects {
    let hint = |get: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| {
        annotations.and_then(get).unwrap_or(false)
    };
    let read_only = hint(|a| a.read_only_hint);
    let destructive = hint(|a| a.destructive_hint);
    if trust && read_only && !destructive {
        Effects::READ_ONLY
    } else {
        // The server runs outside our sandbox and may reach anything, which the policy treats
        // like the network: asked in default and accept-edits mode, refused in plan mode.
        // (All-false effects would mean a pure function that never asks.)
        Effects { read_only: false, writes_files: false, runs_processes: false, network: true }
    }
}

impl McpTool {
    /// The registry tool for `tool` of `server`, called `name` by the model.
    pub fn new(
        name: String,
        server: Arc<Server>,
        tool: &rmcp::model::Tool,
        files_dir: Option<PathBuf>,
    ) -> Result<Self, BadTool> {
        let schema = Value::Object((*tool.input_schema).clone());
        let validator = ArgsValidator::from_schema(&schema).map_err(|err| BadTool {
            server: server.name().to_owned(),
            tool: tool.name.to_string(),
            reason: format!("its input schema does not compile ({})", err.message),
        })?;
        // Sent strict when the schema converts: the model then cannot produce arguments of the
        // wrong shape. The validator keeps checking the server's own schema either way (strict
        // `null`s for optional fields are removed before that check).
        let (parameters, strict) = match make_strict(schema.clone()) {
            Ok(strict) => (strict, true),
            Err(_) => (schema, false),
        };
        let mut description = tool.description.as_deref().unwrap_or_default().to_owned();
        if description.is_empty() {
            description = tool.title.clone().unwrap_or_default();
        }
        let spec = ToolSpec {
            rule_name: name.clone(),
            text_input: None,
            shape: agent_core::ToolShape::Function,
            name,
            description,
            parameters,
            strict,
            aliases: Vec::new(),
            effects: effects(tool.annotations.as_ref(), server.config().trust),
        };
        Ok(Self { spec, validator, server, remote: tool.name.to_string(), files_dir })
    }

    /// The server this tool belongs to.
    pub fn server(&self) -> &Arc<Server> {
        &self.server
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let peer = self.server.peer().await?;
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        // A 2026-07-28 server asks its questions as `input_required` results: each round is
        // answered and the call made again with the answers (and the server's opaque state),
        // at most MAX_ROUNDS times, so a server cannot keep a call going round for ever.
        for _ in 0..MAX_ROUNDS {
            match self.round(&peer, params.clone(), &ctx).await? {
                Round::Done(output) => return Ok(output),
                Round::Asked(asked) => {
                    let requests = asked.input_requests.unwrap_or_default();
                    let questions = self.server.questions();
                    let call_id = Some(&*ctx.call_id);
                    let answers = tokio::select! {
                        answers = questions.fulfil(self.server.name(), call_id, requests) => answers,
                        () = ctx.cancel.cancelled() => {
                            return Err(ToolError::new(ToolErrorKind::Cancelled, "the call was cancelled"));
                        }
                    };
                    params.input_responses = (!answers.is_empty()).then_some(answers);
                    params.request_state = asked.request_state;
                }
            }
        }
        Err(ToolError::new(
            ToolErrorKind::ToolError,
            format!(
                "the server asked for input {MAX_ROUNDS} times without finishing the call; it \
                 was given up"
            ),
        ))
    }

    /// One `tools/call` request: its result, or the server's questions.
    async fn round(
        &self,
        peer: &rmcp::Peer<rmcp::RoleClient>,
        params: CallToolRequestParams,
        ctx: &ToolContext,
    ) -> Result<Round, ToolError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // rmcp sends a progressToken with every request; progress on it resets the idle timeout.
        let idle = self.server.config().tool_timeout();
        let options = PeerRequestOptions::with_timeout(idle).reset_timeout_on_progress();
        let handle = match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(err) => return Err(self.lost(&err).await),
        };
        let id = handle.id.clone();
        let response = tokio::select! {
            biased;
            response = handle.await_response() => response,
            () = ctx.cancel.cancelled() => {
                // The executor cancels on Ctrl-C and at the absolute cap; tell the server to stop.
                let reason = Some("cancelled by the client".to_owned());
                let notice =
                    CancelledNotification::new(CancelledNotificationParam::new(Some(id), reason));
                let _ = peer.send_notification(ClientNotification::CancelledNotification(notice)).await;
                return Err(ToolError::new(ToolErrorKind::Cancelled, "the call was cancelled"));
            }
        };
        match response {
            Ok(ServerResult::CallToolResult(result)) => {
                content::to_output(&result, self.files_dir.as_deref(), &ctx.call_id)
                    .await
                    .map(Round::Done)
            }
            Ok(ServerResult::InputRequiredResult(asked)) => Ok(Round::Asked(asked)),
            Ok(_) => Err(ToolError::new(
                ToolErrorKind::ToolError,
                "the server answered tools/call with something other than a tool result",
            )),
            Err(ServiceError::Timeout { timeout }) => Err(ToolError::new(
                ToolErrorKind::Timeout,
                format!(
                    "the server sent neither a result nor progress for {}s (tool_timeout_sec); \
                     the call was cancelled",
                    timeout.as_secs_f64()
                ),
            )),
            // An answer the relay dropped (over the line cap, too deep): its message says why.
            Err(ServiceError::McpError(err)) if err.code.0 == crate::incoming::DROPPED_CODE => {
                Err(ToolError::new(ToolErrorKind::ToolError, err.message.to_string()))
            }
            Err(ServiceError::McpError(err)) => Err(ToolError::new(
                ToolErrorKind::ToolError,
                format!("the server refused the call: {}", err.message),
            )),
            Err(err) => Err(self.lost(&err).await),
        }
    }

    async fn lost(&self, err: &ServiceError) -> ToolError {
        let why = format!("the connection broke during the call ({err})");
        self.server.connection_lost(&why).await;
        let tail = match self.server.stderr_tail() {
            Some(tail) => format!("{why}; its stderr ended with: {tail}"),
            None => why,
        };
        self.server.unavailable(&format!("{tail}; it is restarted on the next call"))
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, arguments: &str) -> Result<PreparedCall, ArgsError> {
        let value = self.validator.parse_value(arguments)?;
        Ok(PreparedCall::new(value, Vec::new()))
    }

    fn run<'a>(
        &'a self,
        call: PreparedCall,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            match call.into_input::<Value>() {
                Some(args) => self.call(args, ctx).await,
                None => Err(ToolError::new(
                    ToolErrorKind::ToolError,
                    "internal error: the call was prepared for another tool",
                )),
            }
        })
    }
}
