//! Classification of every failure (HTTP, transport, stream, body) into a [`ModelError`].

use agent_core::{ModelError, ModelErrorKind};
use async_openai::error::OpenAIError;
use serde_json::Value;

use crate::transport::HttpFailure;

/// The longest server message kept in an error.
const MAX_MESSAGE: usize = 500;

/// What an error body said, whichever shape the server used.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ServerError {
    pub(crate) message: String,
    pub(crate) code: Option<String>,
}

impl ServerError {
    /// Reads OpenAI's `{"error":{message,type,code}}`, Ollama's `{"error":"..."}`, vLLM's
    /// `{"object":"error","message":..}`, FastAPI's `{"detail":..}`, or falls back to the raw text.
    pub(crate) fn parse(body: &str) -> Self {
        let text = || cut(body.trim());
        let Ok(value) = serde_json::from_str::<Value>(body) else {
            return Self { message: text(), code: None };
        };
        Self::from_value(&value).unwrap_or_else(|| Self { message: text(), code: None })
    }

    /// The error a JSON value carries, if it is an error object in any known shape.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        let code_of = |object: &Value| {
            ["code", "type"].iter().find_map(|key| match object.get(key) {
                Some(Value::String(code)) if !code.is_empty() => Some(code.clone()),
                Some(Value::Number(code)) => Some(code.to_string()),
                _ => None,
            })
        };
        match value.get("error") {
            Some(Value::String(message)) => {
                return Some(Self { message: cut(message), code: None });
            }
            Some(object @ Value::Object(_)) => {
                let message = object.get("message").and_then(Value::as_str).unwrap_or("");
                return Some(Self { message: cut(message), code: code_of(object) });
            }
            _ => {}
        }
        if value.get("object").and_then(Value::as_str) == Some("error") {
            let message = value.get("message").and_then(Value::as_str).unwrap_or("");
            return Some(Self { message: cut(message), code: code_of(value) });
        }
        if let Some(detail) = value.get("detail") {
            let message = detail.as_str().map_or_else(|| detail.to_string(), str::to_owned);
            return Some(Self { message: cut(&message), code: None });
        }
        None
    }
}

/// Classifies a failure from its HTTP status (if any), the server's code and message.
pub(crate) fn classify(status: Option<u16>, error: &ServerError) -> ModelErrorKind {
    let code = error.code.as_deref().unwrap_or("");
    let message = error.message.to_lowercase();
    let context_hints = [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "prompt is too long",
    ];
    if code == "context_length_exceeded" || context_hints.iter().any(|hint| message.contains(hint))
    {
        return ModelErrorKind::ContextTooLong;
    }
    if code == "model_not_found" {
        return ModelErrorKind::ModelNotFound;
    }
    match status {
        Some(401 | 403) => ModelErrorKind::Auth,
        Some(429) if code == "insufficient_quota" => ModelErrorKind::InvalidRequest,
        Some(429) => ModelErrorKind::RateLimit { retry_after: None },
        Some(404) if message.contains("model") => ModelErrorKind::ModelNotFound,
        Some(408) => ModelErrorKind::Network,
        Some(500..) => ModelErrorKind::Server,
        Some(_) => ModelErrorKind::InvalidRequest,
        // An error reported inside a stream has no status of its own; the code says what it was.
        None => match code {
            "rate_limit_exceeded" => ModelErrorKind::RateLimit { retry_after: None },
            "invalid_api_key" | "unauthorized" => ModelErrorKind::Auth,
            "invalid_request_error" | "invalid_prompt" => ModelErrorKind::InvalidRequest,
            _ => ModelErrorKind::Server,
        },
    }
}

/// The error for a failed HTTP exchange.
pub(crate) fn from_failure(failure: &HttpFailure) -> ModelError {
    if let Some(content_type) = &failure.unexpected_content_type {
        let mut error = ModelError::new(
            ModelErrorKind::BadResponse,
            format!(
                "expected an event stream but the server answered with {content_type}: {}",
                cut(failure.body.trim())
            ),
        );
        error.status = Some(failure.status);
        error.request_id = failure.request_id.clone();
        return error;
    }
    let server = ServerError::parse(&failure.body);
    let kind = match classify(Some(failure.status), &server) {
        ModelErrorKind::Server if crate::quirks::is_rejection_as_5xx(&failure.body) => {
            ModelErrorKind::InvalidRequest
        }
        ModelErrorKind::RateLimit { .. } => {
            ModelErrorKind::RateLimit { retry_after: failure.retry_after }
        }
        kind => kind,
    };
    let what = match &kind {
        ModelErrorKind::Auth => "the server refused the api key",
        ModelErrorKind::RateLimit { .. } => "rate limited",
        ModelErrorKind::ContextTooLong => "the request is longer than the model's context window",
        ModelErrorKind::ModelNotFound => "the model was not found",
        ModelErrorKind::Server => "the server failed",
        ModelErrorKind::Network => "the request timed out on the server",
        ModelErrorKind::InvalidRequest if failure.status == 404 => {
            "not found (check the base url, which must end with the api version such as /v1)"
        }
        ModelErrorKind::InvalidRequest if failure.status >= 500 => {
            "the server rejected the request as invalid"
        }
        ModelErrorKind::InvalidRequest
        | ModelErrorKind::BadResponse
        | ModelErrorKind::Cancelled => "the server rejected the request",
    };
    let mut detail =
        if server.message.is_empty() { String::new() } else { format!(": {}", server.message) };
    if let (Some(asked), Some(cap)) = (failure.retry_after, failure.retry_after_cap) {
        detail.push_str(&format!(
            "; the server asked to wait {} s before retrying, longer than the {} s this client waits",
            asked.as_secs_f64().round(),
            cap.as_secs_f64().round()
        ));
    }
    let mut error = ModelError::new(kind, format!("{what} (http {}){detail}", failure.status));
    error.status = Some(failure.status);
    error.request_id = failure.request_id.clone();
    error
}

/// The error for anything the transport reports through async-openai's error type.
pub(crate) fn from_openai(error: OpenAIError) -> ModelError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
            Ok(failure) => from_failure(&failure),
            Err(other) => match other.downcast::<ModelError>() {
                // The transport's own verdicts (a missed deadline) arrive already classified.
                Ok(error) => *error,
                Err(other) => {
                    ModelError::new(ModelErrorKind::Network, format!("transport failed: {other}"))
                }
            },
        },
        OpenAIError::Reqwest(error) => {
            let what = if error.is_timeout() {
                "the request timed out"
            } else if error.is_connect() {
                "could not connect to the server"
            } else {
                "the connection failed"
            };
            ModelError::new(ModelErrorKind::Network, format!("{what}: {}", chain(&error)))
        }
        OpenAIError::StreamError(stream) => {
            ModelError::new(ModelErrorKind::Network, format!("the response stream broke: {stream}"))
        }
        OpenAIError::JSONDeserialize(parse, body) => bad_json(&parse, body.as_bytes()),
        OpenAIError::ApiError(api) => {
            let server =
                ServerError { message: cut(&api.api_error.message), code: api.api_error.code };
            let status = api.status_code.as_u16();
            let mut error = ModelError::new(
                classify(Some(status), &server),
                format!("the server rejected the request (http {status}): {}", server.message),
            );
            error.status = Some(status);
            error
        }
        other => ModelError::new(ModelErrorKind::InvalidRequest, other.to_string()),
    }
}

/// The error for a body or event that is not the JSON we expect. Only the start of the body is
/// quoted, with control characters escaped, however large or binary the body was.
pub(crate) fn bad_json(parse: &serde_json::Error, body: &[u8]) -> ModelError {
    ModelError::new(
        ModelErrorKind::BadResponse,
        format!("the server sent invalid json ({parse}): {}", snippet(body)),
    )
}

/// The start of a body as text for a message: at most [`MAX_MESSAGE`] characters, invalid UTF-8
/// replaced and control characters escaped (see [`cut`]), however large or binary the body was.
pub(crate) fn snippet(body: &[u8]) -> String {
    // Four bytes a character at most, so this never cuts a character the message keeps.
    let start = &body[..body.len().min(MAX_MESSAGE * 4)];
    let mut text = cut(String::from_utf8_lossy(start).trim());
    if start.len() < body.len() && !text.ends_with('…') {
        text.push('…');
    }
    text
}

/// The error for an error object the server put inside a stream or a 200 body.
pub(crate) fn from_server_error(server: &ServerError) -> ModelError {
    let message = match (server.message.is_empty(), &server.code) {
        (false, _) => server.message.clone(),
        (true, Some(code)) => code.clone(),
        (true, None) => "no details given".to_owned(),
    };
    ModelError::new(classify(None, server), format!("the server reported an error: {message}"))
}

/// Removes the key from a message, in case a server echoes it back.
pub(crate) fn scrub(mut error: ModelError, key: Option<&str>) -> ModelError {
    if let Some(key) = key.filter(|key| key.len() >= 4)
        && error.message.contains(key)
    {
        error.message = error.message.replace(key, "<redacted>");
    }
    error
}

/// An error and its sources, joined with `: `.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// A server's text for a message: cut to [`MAX_MESSAGE`] characters, with control characters
/// escaped (`\u{1b}`, `\n`), so a server cannot move the cursor or retitle the terminal through
/// an error message, nor break a log line.
fn cut(text: &str) -> String {
    let (kept, more) = match text.char_indices().nth(MAX_MESSAGE) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    };
    let mut out = String::with_capacity(kept.len() + 4);
    for c in kept.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if more {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(status: u16, body: &str, expect: ModelErrorKind, message: &str) {
        let failure = HttpFailure {
            status,
            request_id: Some("req_1".into()),
            retry_after: None,
            body: body.to_owned(),
            unexpected_content_type: None,
            retry_after_cap: None,
        };
        let error = from_failure(&failure);
        assert_eq!(error.kind, expect);
        assert_eq!(error.message, message);
        assert_eq!((error.status, error.request_id.as_deref()), (Some(status), Some("req_1")));
    }

    #[test]
    fn classifies_openai_error_bodies() {
        check(
            401,
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
            ModelErrorKind::Auth,
            "the server refused the api key (http 401): Incorrect API key",
        );
        check(
            400,
            r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#,
            ModelErrorKind::ContextTooLong,
            "the request is longer than the model's context window (http 400): too long",
        );
        check(
            429,
            r#"{"error":{"message":"quota","code":"insufficient_quota"}}"#,
            ModelErrorKind::InvalidRequest,
            "the server rejected the request (http 429): quota",
        );
    }

    #[test]
    fn classifies_compatible_server_bodies() {
        check(
            404,
            r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
            ModelErrorKind::ModelNotFound,
            "the model was not found (http 404): model \"llama9\" not found, try pulling it first",
        );
        check(
            404,
            "404 page not found",
            ModelErrorKind::InvalidRequest,
            "not found (check the base url, which must end with the api version such as /v1) (http 404): 404 page not found",
        );
        check(
            400,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens","code":400}"#,
            ModelErrorKind::ContextTooLong,
            "the request is longer than the model's context window (http 400): This model's maximum context length is 4096 tokens",
        );
        check(502, "", ModelErrorKind::Server, "the server failed (http 502)");
        check(
            500,
            r#"{"error":{"message":"1 validation error: content must be a string","type":"internal_server_error"}}"#,
            ModelErrorKind::InvalidRequest,
            "the server rejected the request as invalid (http 500): 1 validation error: content must be a string",
        );
    }

    #[test]
    fn a_binary_or_huge_body_is_quoted_short_and_escaped() {
        let mut body = b"\x1b]0;pwned\x07<html>\xff\n".to_vec();
        body.extend(std::iter::repeat_n(b'x', 1 << 20));
        let parse = serde_json::from_slice::<Value>(&body).err().unwrap();
        let message = bad_json(&parse, &body).message;
        assert!(message.len() < 1200, "{}", message.len());
        assert!(!message.chars().any(char::is_control), "{message}");
        insta::assert_snapshot!(&message[..80], @r"the server sent invalid json (expected value at line 1 column 1): \u{1b}]0;pwned");
    }

    #[test]
    fn scrub_removes_an_echoed_key() {
        let error = ModelError::new(ModelErrorKind::Auth, "bad key sk-12345");
        assert_eq!(scrub(error, Some("sk-12345")).message, "bad key <redacted>");
    }
}
