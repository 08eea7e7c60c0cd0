//! Custom tools refused: a server that does not know `"type": "custom"` answers 400, and both
//! adapters then send freeform tools in their function shape for the rest of the client's life.
//!
//! OpenAI's own models take custom tools on both APIs; compatible servers (vLLM, llama.cpp,
//! Ollama) and older OpenAI models refuse them with a 400 whose message names the type, such as
//! "Invalid value: 'custom'. Supported values are: 'function'". Every freeform tool keeps its
//! JSON Schema, with the text in one string argument, so nothing is lost by the fallback.

use std::{
    future::Future,
    sync::atomic::{AtomicBool, Ordering},
};

use agent_core::{ModelError, ModelErrorKind, ModelRequest, ModelStream, ToolShape, ToolSpec};

/// Sends `request` through `open`; when the server refuses the custom tools it offers, `offers`
/// is turned off (for this request and every later one of the client) and the request is sent
/// again, with the freeform tools in their function shape.
pub(crate) async fn open_falling_back<'a, F, Fut>(
    offers: &AtomicBool,
    model: &str,
    request: ModelRequest<'a>,
    open: F,
) -> Result<ModelStream<'a>, ModelError>
where
    F: Fn(ModelRequest<'a>) -> Fut,
    Fut: Future<Output = Result<ModelStream<'a>, ModelError>>,
{
    let offered = offers_custom(request.tools);
    match open(request).await {
        Err(error) if offered && offers.load(Ordering::Relaxed) && refuses_custom(&error) => {
            tracing::warn!(model = %model, error = %error.message, "the server refused custom tools; sending them as function tools from now on");
            offers.store(false, Ordering::Relaxed);
            open(request).await
        }
        other => other,
    }
}

/// Whether a request would offer a custom tool (a freeform tool with its text input).
pub(crate) fn offers_custom(tools: &[ToolSpec]) -> bool {
    tools.iter().any(|tool| tool.shape == ToolShape::Freeform && tool.text_input.is_some())
}

/// Whether a refused request was refused for its custom tools: a 400 (or 422, as vLLM answers a
/// body its schema rejects) that names the `custom` type.
pub(crate) fn refuses_custom(error: &ModelError) -> bool {
    let message = error.message.to_lowercase();
    error.kind == ModelErrorKind::InvalidRequest && message.contains("custom")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(kind: ModelErrorKind, message: &str, expect: bool) {
        assert_eq!(refuses_custom(&ModelError::new(kind, message)), expect, "{message}");
    }

    #[test]
    fn only_a_refused_request_that_names_custom_falls_back() {
        check(
            ModelErrorKind::InvalidRequest,
            "Invalid value: 'custom'. Supported values are: 'function'.",
            true,
        );
        check(ModelErrorKind::InvalidRequest, "tools.0.type: unknown variant `custom`", true);
        check(ModelErrorKind::InvalidRequest, "messages too long", false);
        check(ModelErrorKind::Server, "custom error page", false);
    }
}
