//! The one table of real servers' deviations that the adapters must know by name.
//!
//! Most compatibility is handled by request shapes every known server accepts (an assistant
//! message with tool calls carries `content: ""`, `tool_choice` is always explicit when tools are
//! offered, a replayed call's arguments are always a JSON object) and by lenient response types.
//! What is left needs a server's own words: the markers below, read from error bodies. Each entry
//! names the server and the failure it was seen with.

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
    // llama-server renders replayed tool calls through its chat template and parses their
    // arguments first; a call whose arguments are not JSON fails with HTTP 500 "Failed to parse
    // tool call arguments as JSON: [json.exception.parse_error.101] …" (`replay_arguments` keeps
    // this from happening; the marker keeps any other such request from being retried).
    RejectionAs5xx { server: "llama-server", marker: "failed to parse tool call arguments" },
];

/// The `arguments` string of a tool call replayed to the server: the model's own text when it is
/// a JSON object, `{}` otherwise.
///
/// A model cut off by its token limit leaves a call with half an object (`{`), which the harness
/// answers with an `invalid_json` observation. OpenAI accepts the text back as it was, but servers
/// that render the conversation through a chat template parse every replayed call: llama.cpp's
/// `llama-server` answers HTTP 500 "Failed to parse tool call arguments as JSON", so no later turn
/// of the session could be sent. The observation already tells the model what was wrong with its
/// arguments, so `{}` loses nothing it needs.
pub(crate) fn replay_arguments(arguments: &str) -> &str {
    let is_object = arguments.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok();
    if is_object { arguments } else { "{}" }
}

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
    fn replayed_arguments_are_always_a_json_object() {
        let replay =
            |text: &str, expect: &str| assert_eq!(replay_arguments(text), expect, "{text}");
        replay(r#"{"text": "hello"}"#, r#"{"text": "hello"}"#);
        replay(" {}", " {}");
        replay("{", "{}");
        replay(r#"{"text": "hel"#, "{}");
        replay("", "{}");
        replay("[1]", "{}");
        replay("\"text\"", "{}");
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
