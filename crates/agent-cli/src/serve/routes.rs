//! The routes of `agent serve`, each documented for the OpenAPI document by its `utoipa::path`
//! (compiled in tests only: see the `openapi` module).

use std::sync::Arc;

use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Deserialize;

use super::{
    api::{
        ApprovalAnswer, Checkpoint, CreateSession, ForkRequest, PendingApproval, PendingQuestion,
        PromptAccepted, PromptRequest, QuestionAnswer, SessionInfo, TranscriptBody, UndoRequest,
        UndoResult,
    },
    guard::{self, Guard},
    history,
    hub::{Hub, Refusal},
    openapi, page,
    questions::NotTaken,
    stream,
};
// The error body is named only in the routes' OpenAPI annotations, which tests compile.
#[cfg(test)]
use super::api::Problem;

/// The largest request body (docs/limits.md).
pub(crate) const MAX_BODY: usize = 1 << 20;

type Shared = State<Arc<Hub>>;

/// Every route, behind the guard.
pub(crate) fn router(hub: Arc<Hub>, guard: Arc<Guard>) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/health", get(health))
        .route("/v1/openapi.json", get(document))
        .route("/v1/sessions", post(create_session).get(list_sessions))
        .route("/v1/sessions/{id}", get(get_session).delete(close_session))
        .route("/v1/sessions/{id}/transcript", get(transcript))
        .route("/v1/sessions/{id}/prompt", post(prompt))
        .route("/v1/sessions/{id}/events", get(events))
        .route("/v1/sessions/{id}/cancel", post(cancel))
        .route("/v1/sessions/{id}/approvals", get(approvals))
        .route("/v1/sessions/{id}/approvals/{approval}", post(answer))
        .route("/v1/sessions/{id}/questions", get(questions))
        .route("/v1/sessions/{id}/questions/{question}", post(reply))
        .route("/v1/sessions/{id}/checkpoints", get(checkpoints))
        .route("/v1/sessions/{id}/undo", post(undo))
        .route("/v1/sessions/{id}/fork", post(fork))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
        .with_state(hub)
}

/// Says the server is up, and nothing else (no token needed).
#[cfg_attr(test, utoipa::path(get, path = "/health", security(()), responses((status = 204, description = "up"))))]
pub(crate) async fn health() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// This API's OpenAPI 3.1 document.
#[cfg_attr(test, utoipa::path(get, path = "/v1/openapi.json",
    responses((status = 200, description = "the document", content_type = "application/json"))))]
pub(crate) async fn document() -> Response {
    ([("content-type", "application/json")], openapi::DOCUMENT).into_response()
}

/// Opens a session, built as `agent exec` builds one.
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions", request_body = CreateSession, responses(
    (status = 201, body = SessionInfo), (status = 400, body = Problem),
    (status = 409, body = Problem), (status = 422, body = Problem), (status = 429, body = Problem))))]
pub(crate) async fn create_session(
    State(hub): Shared,
    Json(request): Json<CreateSession>,
) -> Result<(StatusCode, Json<SessionInfo>), Refusal> {
    let live = hub.create(request).await?;
    Ok((StatusCode::CREATED, Json(live.info())))
}

/// The open sessions.
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions", responses((status = 200, body = Vec<SessionInfo>))))]
pub(crate) async fn list_sessions(State(hub): Shared) -> Json<Vec<SessionInfo>> {
    Json(hub.list().iter().map(|live| live.info()).collect())
}

/// One open session.
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions/{id}", params(("id" = String, Path)),
    responses((status = 200, body = SessionInfo), (status = 404, body = Problem))))]
pub(crate) async fn get_session(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<Json<SessionInfo>, Refusal> {
    Ok(Json(hub.get(&id)?.info()))
}

/// Closes a session: its prompt is cancelled, its jobs killed, its MCP servers stopped. Its
/// files stay; `resume` opens it again.
#[cfg_attr(test, utoipa::path(delete, path = "/v1/sessions/{id}", params(("id" = String, Path)),
    responses((status = 204, description = "closed"), (status = 404, body = Problem))))]
pub(crate) async fn close_session(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<StatusCode, Refusal> {
    hub.close(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The session's conversation as its transcript holds it.
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions/{id}/transcript", params(("id" = String, Path)),
    responses((status = 200, body = TranscriptBody), (status = 404, body = Problem))))]
pub(crate) async fn transcript(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<Json<TranscriptBody>, Refusal> {
    let live = hub.get(&id)?;
    Ok(Json(history::transcript(&live)?))
}

/// Runs a prompt; its events follow on the event stream. One prompt at a time per session.
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions/{id}/prompt", params(("id" = String, Path)),
    request_body = PromptRequest, responses((status = 202, body = PromptAccepted),
    (status = 404, body = Problem), (status = 409, body = Problem))))]
pub(crate) async fn prompt(
    State(hub): Shared,
    Path(id): Path<String>,
    Json(request): Json<PromptRequest>,
) -> Result<(StatusCode, Json<PromptAccepted>), Refusal> {
    let after = hub.get(&id)?.prompt(request.text)?;
    Ok((StatusCode::ACCEPTED, Json(PromptAccepted { after })))
}

/// Where an event stream begins.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(utoipa::IntoParams), into_params(parameter_in = Query))]
pub(crate) struct StreamFrom {
    /// Stream the events after this id (as `Last-Event-ID`; the header wins). Default: only
    /// events from now on.
    after: Option<u64>,
}

/// The session's events as Server-Sent Events: each `data` is one event of
/// docs/exec-events.schema.json, each `id` its number in the session. Send `Last-Event-ID` to
/// resume after a dropped connection.
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions/{id}/events",
    params(("id" = String, Path), StreamFrom,
        ("Last-Event-ID" = Option<u64>, Header, description = "resume after this event")),
    responses((status = 200, description = "the event stream", content_type = "text/event-stream",
        body = String),
    (status = 404, body = Problem), (status = 410, body = Problem), (status = 429, body = Problem))))]
pub(crate) async fn events(
    State(hub): Shared,
    Path(id): Path<String>,
    Query(from): Query<StreamFrom>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    let live = hub.get(&id)?;
    let header = headers.get("last-event-id").and_then(|value| value.to_str().ok());
    let last = match header {
        Some(text) => text
            .trim()
            .parse()
            .map_err(|_| Refusal::Bad(format!("Last-Event-ID `{text}` is not an event id")))?,
        None => from.after.unwrap_or_else(|| live.journal.last_id()),
    };
    Ok(stream::events(live, last)?.into_response())
}

/// Cancels the running prompt: the model request and every tool stop; the run ends with
/// `run.failed` (`cancelled`).
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions/{id}/cancel", params(("id" = String, Path)),
    responses((status = 204, description = "cancelled"), (status = 404, body = Problem))))]
pub(crate) async fn cancel(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<StatusCode, Refusal> {
    hub.get(&id)?.cancel();
    Ok(StatusCode::NO_CONTENT)
}

/// The calls waiting for approval.
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions/{id}/approvals", params(("id" = String, Path)),
    responses((status = 200, body = Vec<PendingApproval>), (status = 404, body = Problem))))]
pub(crate) async fn approvals(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<Json<Vec<PendingApproval>>, Refusal> {
    Ok(Json(hub.get(&id)?.approvals.list()))
}

/// Answers a waiting call.
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions/{id}/approvals/{approval}",
    params(("id" = String, Path), ("approval" = u64, Path)), request_body = ApprovalAnswer,
    responses((status = 204, description = "answered"), (status = 404, body = Problem))))]
pub(crate) async fn answer(
    State(hub): Shared,
    Path((id, approval)): Path<(String, u64)>,
    Json(answer): Json<ApprovalAnswer>,
) -> Result<StatusCode, Refusal> {
    if hub.get(&id)?.approvals.answer(approval, answer.decision, answer.reason) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Refusal::NotFound(format!("no approval {approval} waits in session {id}")))
    }
}

/// The model's questions waiting for an answer (`ask_user`).
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions/{id}/questions", params(("id" = String, Path)),
    responses((status = 200, body = Vec<PendingQuestion>), (status = 404, body = Problem))))]
pub(crate) async fn questions(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<Json<Vec<PendingQuestion>>, Refusal> {
    Ok(Json(hub.get(&id)?.questions.list()))
}

/// Answers (or declines) a waiting question; an answer that does not fit it is refused and the
/// question keeps waiting.
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions/{id}/questions/{question}",
    params(("id" = String, Path), ("question" = u64, Path)), request_body = QuestionAnswer,
    responses((status = 204, description = "answered"), (status = 400, body = Problem),
        (status = 404, body = Problem))))]
pub(crate) async fn reply(
    State(hub): Shared,
    Path((id, question)): Path<(String, u64)>,
    Json(answer): Json<QuestionAnswer>,
) -> Result<StatusCode, Refusal> {
    match hub.get(&id)?.questions.answer(question, answer) {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(NotTaken::NoQuestion) => {
            Err(Refusal::NotFound(format!("no question {question} waits in session {id}")))
        }
        Err(NotTaken::Unfit(why)) => Err(Refusal::Bad(why)),
    }
}

/// The session's checkpoints (each prompt's file changes), oldest first.
#[cfg_attr(test, utoipa::path(get, path = "/v1/sessions/{id}/checkpoints", params(("id" = String, Path)),
    responses((status = 200, body = Vec<Checkpoint>), (status = 404, body = Problem))))]
pub(crate) async fn checkpoints(
    State(hub): Shared,
    Path(id): Path<String>,
) -> Result<Json<Vec<Checkpoint>>, Refusal> {
    let live = hub.get(&id)?;
    Ok(Json(history::checkpoints(&live)?))
}

/// Undoes a turn's file changes (or redoes an undo), as `agent undo` does.
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions/{id}/undo", params(("id" = String, Path)),
    request_body = UndoRequest, responses((status = 200, body = UndoResult),
    (status = 404, body = Problem), (status = 409, body = Problem))))]
pub(crate) async fn undo(
    State(hub): Shared,
    Path(id): Path<String>,
    Json(request): Json<UndoRequest>,
) -> Result<Json<UndoResult>, Refusal> {
    let live = hub.get(&id)?;
    let result = tokio::task::spawn_blocking(move || history::undo_turn(&live, &request))
        .await
        .map_err(|err| Refusal::Failed(format!("the undo failed: {err}")))??;
    Ok(Json(result))
}

/// Opens a new session whose history is this one's up to the end of a turn (`--fork`); the
/// original is unchanged.
#[cfg_attr(test, utoipa::path(post, path = "/v1/sessions/{id}/fork", params(("id" = String, Path)),
    request_body = ForkRequest, responses((status = 201, body = SessionInfo),
    (status = 404, body = Problem), (status = 409, body = Problem), (status = 429, body = Problem))))]
pub(crate) async fn fork(
    State(hub): Shared,
    Path(id): Path<String>,
    Json(request): Json<ForkRequest>,
) -> Result<(StatusCode, Json<SessionInfo>), Refusal> {
    let live = hub.get(&id)?;
    let forked = hub.fork(&live, request.turn).await?;
    Ok((StatusCode::CREATED, Json(forked.info())))
}
