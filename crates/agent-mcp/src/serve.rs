//! `ToolServer`: an `agent_exec::Executor` served to MCP clients (`agent mcp serve`).
//!
//! Each `tools/call` runs through the executor like a model's call: the same validation,
//! workspace, OS sandbox, permission policy and output cap. Tool annotations are derived from each
//! tool's `Effects`; a long call reports progress every second to a client that sent a
//! `progressToken`; `notifications/cancelled` cancels the call's token. A call the policy would
//! ask about is put to the calling client as an elicitation when it supports one
//! ([`crate::elicitation`]).

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use agent_core::{Effects, ToolCall, ToolSpec};
use agent_exec::Executor;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
        ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
};
use serde_json::Value;

use crate::elicitation::{Caller, Elicitor, RuleAdvice, Stateless};

/// How often a running call tells a client that asked for progress that it is still running.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The executor's tools, as an MCP server. Cheap to clone: every clone (one per HTTP session)
/// shares the executor, so the permission grants and the call numbering are the server's.
#[derive(Clone)]
pub struct ToolServer {
    executor: Arc<Executor>,
    calls: Arc<AtomicU64>,
    elicitor: Arc<Elicitor>,
}

impl std::fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer").finish_non_exhaustive()
    }
}

/// The server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The HTTP server could not take its address.
    #[error("mcp server: cannot listen on {addr}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why the socket refused it.
        #[source]
        source: std::io::Error,
    },
    /// The client's initialization failed, so no session began.
    #[error("mcp server: the session did not start")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The session's task ended abnormally (it panicked or was aborted).
    #[error("mcp server: the session ended abnormally")]
    Session(#[source] tokio::task::JoinError),
}

impl ToolServer {
    /// A server for `executor`'s tools. Its approver becomes the calling client: in a permission
    /// mode that asks, a call that needs approval is put to the client as an elicitation (and
    /// refused, naming the rule that would allow it, when the client cannot be asked).
    pub fn new(executor: Executor) -> Self {
        Self::build(executor, None)
    }

    /// [`ToolServer::new`], with the program's wording of the rules that would allow a call
    /// without asking, for the approval question put to the client: `agent mcp serve` says
    /// "start the server with --allow '…'"; the library alone names the rules.
    pub fn with_rule_advice(executor: Executor, advice: RuleAdvice) -> Self {
        Self::build(executor, Some(advice))
    }

    fn build(executor: Executor, advice: Option<RuleAdvice>) -> Self {
        let elicitor = Arc::new(Elicitor::new(advice));
        let executor =
            executor.with_approver(Arc::clone(&elicitor) as Arc<dyn agent_exec::Approver>);
        Self { executor: Arc::new(executor), calls: Arc::new(AtomicU64::new(0)), elicitor }
    }

    /// Serves one client over this process's stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|err| ServeError::Handshake(Box::new(err)))?;
        running.waiting().await.map_err(ServeError::Session)?;
        Ok(())
    }
}

/// The MCP tool for a spec: same name, description and schema, annotations from its effects.
pub fn mcp_tool(spec: &ToolSpec) -> Tool {
    let schema = match &spec.parameters {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let mut tool = Tool::new(spec.name.clone(), spec.description.clone(), schema);
    tool.annotations = Some(annotations(spec.effects));
    tool
}

/// `Effects` as MCP hints: read-only tools are `readOnlyHint`; tools that write files or run
/// processes may destroy what is there (`destructiveHint`); network tools reach an open world.
pub fn annotations(effects: Effects) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(effects.read_only)
        .destructive(!effects.read_only && (effects.writes_files || effects.runs_processes))
        .open_world(effects.network)
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agent", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The agent's built-in tools, run in the served workspace under its sandbox and \
                 permission policy. A refused call names the rule that would allow it.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.executor.specs().iter().map(mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let number = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let arguments = match request.arguments {
            Some(map) => Value::Object(map).to_string(),
            None => "{}".to_owned(),
        };
        let call = ToolCall {
            call_id: format!("mcp_{number}"),
            name: request.name.to_string(),
            arguments,
            item_id: None,
            shape: agent_core::CallShape::Function,
        };
        // A 2026-07-28 request stands alone: its `_meta` says whether the client can be asked,
        // and a retried call carries the answer. A session client is asked during the call.
        let modern = context.protocol_version().is_some_and(|v| crate::is_modern(v.as_str()));
        let stateless = modern.then(|| {
            let can_ask = context
                .client_capabilities()
                .and_then(|capabilities| capabilities.elicitation)
                .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
            Arc::new(Stateless::new(can_ask, request.input_responses.as_ref()))
        });
        let caller = match &stateless {
            Some(state) => Caller::Stateless(Arc::clone(state)),
            None => Caller::Session(context.peer.clone()),
        };
        let _caller = self.elicitor.register(&call.call_id, caller);
        // `context.ct` is cancelled by the client's notifications/cancelled.
        let running = self.executor.execute(&call, &context.ct);
        tokio::pin!(running);
        let token = context.meta.get_progress_token();
        let mut ticks = 0u32;
        let outcome = loop {
            tokio::select! {
                outcome = &mut running => break outcome,
                () = tokio::time::sleep(PROGRESS_EVERY), if token.is_some() => {
                    ticks += 1;
                    if let Some(token) = &token {
                        let message = format!("`{}` is running ({ticks} s)", call.name);
                        let param = ProgressNotificationParam::new(token.clone(), f64::from(ticks))
                            .with_message(message);
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
            }
        };
        // The call needed an answer the request did not carry: it was refused before it ran,
        // and the client gets the question instead of that refusal.
        if let Some(asking) = stateless.as_ref().and_then(|state| state.asking()) {
            return Ok(asking.into());
        }
        let content = vec![ContentBlock::text(outcome.text)];
        let result = if outcome.ok {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        };
        Ok(result.into())
    }
}
