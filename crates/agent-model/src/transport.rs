//! The HTTP transport: our retry policy, the first-byte deadline of each attempt, and failures that
//! keep their HTTP status, request id, `Retry-After` and (the start of their) body.
//!
//! It is a tower service over async-openai's `HttpRequestFactory`, as async-openai's middleware
//! expects, so benchmarks can put a canned service in its place; the connection calls it directly.
//! There is one retry loop (this one), and every non-success answer becomes an [`HttpFailure`]
//! carried through `OpenAIError::Boxed` to the adapter, which classifies it.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use agent_core::ModelError;

use async_openai::{error::OpenAIError, middleware::HttpRequestFactory};
use reqwest::{
    Response,
    header::{ACCEPT, CONTENT_TYPE, HeaderMap},
};

use crate::{
    body::AttemptStarted,
    config::RetryPolicy,
    limits::{Deadlines, Missed, ResponseLimits},
    quirks,
};

/// Error bodies longer than this are cut; they only feed an error message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A response that was not the success the adapter expected.
#[derive(Debug, thiserror::Error)]
#[error("http status {status}")]
pub(crate) struct HttpFailure {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The `x-request-id` header, when the server sent one.
    pub(crate) request_id: Option<String>,
    /// The server's requested delay (`retry-after-ms` or `retry-after` in seconds).
    pub(crate) retry_after: Option<Duration>,
    /// The body, cut to a sane size.
    pub(crate) body: String,
    /// Set when a streaming request got a success whose content type is not SSE.
    pub(crate) unexpected_content_type: Option<String>,
    /// Set when the server asked to wait longer than the retry policy waits: that longest wait.
    pub(crate) retry_after_cap: Option<Duration>,
}

/// The tower service async-openai sends requests through.
#[derive(Clone)]
pub(crate) struct Transport {
    http: reqwest::Client,
    retry: Arc<RetryPolicy>,
    limits: Arc<ResponseLimits>,
}

impl Transport {
    pub(crate) fn new(http: reqwest::Client, retry: RetryPolicy, limits: ResponseLimits) -> Self {
        Self { http, retry: Arc::new(retry), limits: Arc::new(limits) }
    }
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = Response;
    type Error = OpenAIError;
    type Future = ResponseFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        Box::pin(send(self.http.clone(), self.retry.clone(), self.limits.clone(), factory))
    }
}

/// Sends a request, retrying what the policy allows. Only failures before a response starts are
/// retried: once this returns a response, its body belongs to the caller and is never replayed.
/// Each attempt must see its response's head within the first-byte deadline; a server that
/// stays silent that long is not asked again (the total deadline is the connection's).
async fn send(
    http: reqwest::Client,
    policy: Arc<RetryPolicy>,
    limits: Arc<ResponseLimits>,
    factory: HttpRequestFactory,
) -> Result<Response, OpenAIError> {
    let mut retries = 0;
    loop {
        let request = factory.build().await?;
        let wants_sse = request
            .headers()
            .get(ACCEPT)
            .is_some_and(|accept| accept.as_bytes().starts_with(b"text/event-stream"));
        let attempt = tokio::time::Instant::now();
        let answer = match attempt.checked_add(limits.first_byte_timeout) {
            Some(at) => tokio::time::timeout_at(at, http.execute(request)).await.map_err(|_| {
                let error: ModelError = Deadlines::start(attempt, &limits).error(Missed::FirstByte);
                OpenAIError::Boxed(Box::new(error))
            })?,
            None => http.execute(request).await,
        };
        let wait = match answer {
            Ok(mut response) if response.status().is_success() => {
                response.extensions_mut().insert(AttemptStarted(attempt));
                let content_type = header(response.headers(), CONTENT_TYPE.as_str());
                let is_sse = content_type
                    .as_deref()
                    .is_some_and(|ty| ty.to_ascii_lowercase().starts_with("text/event-stream"));
                if wants_sse && !is_sse {
                    let mut failure = read_failure(response).await;
                    failure.unexpected_content_type =
                        Some(content_type.unwrap_or_else(|| "no content type".to_owned()));
                    return Err(OpenAIError::Boxed(Box::new(failure)));
                }
                return Ok(response);
            }
            Ok(response) => {
                let mut failure = read_failure(response).await;
                match retry_delay(&policy, retries, &failure) {
                    Some(wait) => wait,
                    None => {
                        if failure.retry_after.is_some_and(|asked| asked > policy.max_retry_after) {
                            failure.retry_after_cap = Some(policy.max_retry_after);
                        }
                        return Err(OpenAIError::Boxed(Box::new(failure)));
                    }
                }
            }
            Err(error) if error.is_connect() && retries < policy.max_retries => {
                policy.backoff(retries)
            }
            Err(error) => return Err(OpenAIError::Reqwest(error)),
        };
        tracing::warn!(
            retry = retries + 1,
            wait_ms = wait.as_millis() as u64,
            "retrying model request"
        );
        tokio::time::sleep(wait).await;
        retries += 1;
    }
}

/// How long to wait before retrying this failure, or `None` when it must not be retried.
fn retry_delay(policy: &RetryPolicy, retries: u32, failure: &HttpFailure) -> Option<Duration> {
    if retries >= policy.max_retries {
        return None;
    }
    // A 429 for an exhausted quota will not get better by waiting, nor will a request that a
    // server rejected as invalid but reported as a 5xx (see `quirks`).
    let retryable = (failure.status == 429 && !failure.body.contains("insufficient_quota"))
        || (failure.status >= 500 && !quirks::is_rejection_as_5xx(&failure.body));
    if !retryable {
        return None;
    }
    match failure.retry_after {
        Some(asked) if asked > policy.max_retry_after => None,
        Some(asked) => Some(asked),
        None => Some(policy.backoff(retries)),
    }
}

async fn read_failure(response: Response) -> HttpFailure {
    let status = response.status().as_u16();
    let headers = response.headers();
    let request_id = header(headers, "x-request-id");
    let retry_after = header(headers, "retry-after-ms")
        .and_then(|ms| ms.trim().parse::<f64>().ok())
        .map(|ms| ms / 1000.0)
        .or_else(|| header(headers, "retry-after").and_then(|s| s.trim().parse::<f64>().ok()))
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .map(|secs| Duration::from_secs_f64(secs.min(1e9)));
    let body = String::from_utf8_lossy(&error_body(response).await).into_owned();
    HttpFailure {
        status,
        request_id,
        retry_after,
        body,
        unexpected_content_type: None,
        retry_after_cap: None,
    }
}

/// The start of a failure's body: reading stops at [`MAX_ERROR_BODY`], so a huge or endless error
/// body costs no more than that (the rest is never read), and a broken one is just shorter.
async fn error_body(mut response: Response) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    body
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(status: u16, body: &str, retry_after: Option<u64>, retries: u32, expect: Option<u64>) {
        let policy = RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(5),
        };
        let failure = HttpFailure {
            status,
            request_id: None,
            retry_after: retry_after.map(Duration::from_secs),
            body: body.to_owned(),
            unexpected_content_type: None,
            retry_after_cap: None,
        };
        let got = retry_delay(&policy, retries, &failure).map(|wait| wait.as_millis() as u64);
        match (got, expect) {
            (Some(got), Some(expect)) => assert!(got <= expect && got * 4 >= expect * 3, "{got}"),
            (got, expect) => assert_eq!(got, expect),
        }
    }

    #[test]
    fn retries_rate_limits_and_server_errors_only() {
        check(429, "", None, 0, Some(100));
        check(503, "", None, 1, Some(100));
        check(400, "", None, 0, None);
        check(401, "", None, 0, None);
    }

    #[test]
    fn honours_retry_after_up_to_the_cap() {
        check(429, "", Some(2), 0, Some(2000));
        check(429, "", Some(3600), 0, None);
    }

    #[test]
    fn stops_after_max_retries_and_on_exhausted_quota() {
        check(500, "", None, 2, None);
        check(429, r#"{"error":{"code":"insufficient_quota"}}"#, None, 0, None);
    }

    #[test]
    fn a_validation_error_sent_as_500_is_not_retried() {
        check(500, r#"{"error":{"message":"7 validation errors: …"}}"#, None, 0, None);
        check(500, r#"{"error":{"message":"upstream timed out"}}"#, None, 0, Some(100));
    }
}
