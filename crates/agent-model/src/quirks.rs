//! The one table of real servers' deviations that the adapters must know by name.
//!
//! Most compatibility is handled by request shapes every known server accepts (an assistant
//! message with tool calls carries `content: ""`, `tool_choice` is always explicit when tools are
//! offered) and by lenient response types. What is left needs a server's own words: the markers
//! below, read from error bodies. Each entry names the server and the failure it was seen with.

/// A server-side error that the server reports as a 5xx although the request itself is at fault.
/// Retrying such a request sends the same bytes to the same validation and fails the same way, so
/// it is reported at once, with the server's message.
#[derive(Debug)]
pub(crate) struct RejectionAs5xx {
    /// The server the marker was seen with.
    pub(crate) server: &'static str,
    /// Text in the error body, compared without regard to case.
    pub(crate) marker: &'static str,
}

/// Markers of request-validation errors sent with a 5xx status.
pub(crate) const REJECTIONS_AS_5XX: &[RejectionAs5xx] = &[
    // llama-cpp-python 0.3.36 (FastAPI + pydantic) answers a body that fails validation, such as an
    // assistant message with `content: null`, with HTTP 500 and
    // {"error":{"message":"7 validation errors: …","type":"internal_server_error"}}.
    RejectionAs5xx { server: "llama-cpp-python", marker: "validation error" },
    // llama-cpp-python renders the model's jinja chat template; a message the template cannot
    // render (an assistant message without a `content` key) fails with HTTP 500
    // "'dict object' has no attribute 'content'". LiteLLM's proxy passes the same body through.
    RejectionAs5xx { server: "llama-cpp-python", marker: "has no attribute" },
];

/// Whether a 5xx body is a request-validation error that no retry can fix.
pub(crate) fn is_rejection_as_5xx(body: &str) -> bool {
    let body = body.to_lowercase();
    match REJECTIONS_AS_5XX.iter().find(|entry| body.contains(entry.marker)) {
        Some(entry) => {
            tracing::debug!(
                seen_with = entry.server,
                marker = entry.marker,
                "a 5xx that names an invalid request"
            );
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(body: &str, expect: bool) {
        assert_eq!(is_rejection_as_5xx(body), expect, "{body}");
    }

    #[test]
    fn validation_errors_are_recognised_and_plain_failures_are_not() {
        check(
            r#"{"error":{"message":"7 validation errors: {'type': 'string_type', 'loc': ('body', 'messages', 1, 'content')}","type":"internal_server_error","param":null,"code":null}}"#,
            true,
        );
        check(r#"{"error":{"message":"'dict object' has no attribute 'content'"}}"#, true);
        check(r#"{"error":{"message":"CUDA out of memory","type":"server_error"}}"#, false);
        check("", false);
        assert!(REJECTIONS_AS_5XX.iter().all(|entry| !entry.server.is_empty()));
    }
}
