//! The context window a model server reports about itself, for a model the built-in table does
//! not know: vLLM's `max_model_len`, llama.cpp's `n_ctx`, LM Studio's `loaded_context_length`.

use std::time::Duration;

use async_openai::config::Config as _;
use serde_json::Value;

use crate::{ClientConfig, config::WireConfig, connection::http_client};

/// How long each question may take. The answer only refines a window already assumed, so a slow
/// or silent server costs nothing but the refinement.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// Windows outside this range are not believed (a server's placeholder or a unit mix-up).
const PLAUSIBLE: std::ops::RangeInclusive<u64> = 512..=100_000_000;

/// Asks the server of `config` for the context window it serves `config.model` with, in tokens.
///
/// Asked together, believed in this order: the OpenAI-style `GET {base}/models` entry of the model (vLLM's `max_model_len`,
/// the `context_length` other servers add, llama.cpp's `meta.n_ctx`), llama.cpp's `GET /props` (`n_ctx`, the window
/// the server was started with, not the model's training length), then LM Studio's
/// `GET /api/v0/models/{model}` (`loaded_context_length`). `None` when no answer names one;
/// Ollama's OpenAI endpoints report none (its window is the `num_ctx` option, see
/// `docs/context.md`). The key, when configured, goes only to the configured server.
pub async fn server_context_window(config: &ClientConfig) -> Option<u64> {
    let wire = WireConfig::new(config).ok()?;
    let http = http_client(config, wire.is_plain_http()).ok()?;
    let base = reqwest::Url::parse(wire.api_base()).ok()?;
    let get = |url: reqwest::Url| {
        let request = http.get(url).headers(wire.headers()).timeout(ASK_TIMEOUT);
        async move {
            let response = request.send().await.ok()?.error_for_status().ok()?;
            response.json::<Value>().await.ok()
        }
    };
    let under = |segments: &[&str], root: bool| {
        let mut url = base.clone();
        {
            let mut path = url.path_segments_mut().ok()?;
            path.pop_if_empty();
            if root && base.path_segments()?.next_back() == Some("v1") {
                path.pop();
            }
            path.extend(segments);
        }
        Some(url)
    };
    // The three questions go out together: a server answers one of them at most, and asked one
    // after another they would cost three round trips before the first model request.
    let (models, props, lm_studio) = futures_util::join!(
        get(under(&["models"], false)?),
        get(under(&["props"], true)?),
        get(under(&["api", "v0", "models", &config.model], true)?),
    );
    models
        .and_then(|v| from_models(&v, &config.model))
        .or_else(|| props.and_then(|v| from_props(&v)))
        .or_else(|| lm_studio.and_then(|v| from_lm_studio(&v)))
}

/// The window in an OpenAI-style model list: the entry named `model`, or the only entry.
fn from_models(list: &Value, model: &str) -> Option<u64> {
    let entries = list["data"].as_array()?;
    let entry = entries
        .iter()
        .find(|entry| entry["id"].as_str() == Some(model))
        .or_else(|| entries.first().filter(|_| entries.len() == 1))?;
    ["max_model_len", "context_length", "context_window", "loaded_context_length"]
        .iter()
        .find_map(|key| plausible(&entry[key]))
        // llama.cpp's served window (not `n_ctx_train`, the length the model was trained on).
        .or_else(|| plausible(&entry["meta"]["n_ctx"]))
}

/// llama.cpp's `/props`: the window of its default slot.
fn from_props(props: &Value) -> Option<u64> {
    plausible(&props["default_generation_settings"]["n_ctx"]).or_else(|| plausible(&props["n_ctx"]))
}

/// LM Studio's model entry: the window it loaded the model with, else the model's maximum.
fn from_lm_studio(entry: &Value) -> Option<u64> {
    plausible(&entry["loaded_context_length"]).or_else(|| plausible(&entry["max_context_length"]))
}

fn plausible(value: &Value) -> Option<u64> {
    value.as_u64().filter(|tokens| PLAUSIBLE.contains(tokens))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_servers_answer_is_read() {
        // vLLM names the served window in its model list.
        let vllm = json!({"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B", "object": "model", "max_model_len": 32768}]});
        assert_eq!(from_models(&vllm, "Qwen/Qwen2.5-7B"), Some(32_768));
        // llama.cpp's list (as this tier's llama-server answers it) names the served window
        // `meta.n_ctx` beside the training length `meta.n_ctx_train`; an older one names only
        // the training length, which is not the window it serves, and `/props` answers.
        let llama_models = json!({"data": [{"id": "smollm2-135m", "owned_by": "llamacpp", "meta": {"n_ctx": 4096, "n_ctx_train": 8192}}]});
        assert_eq!(from_models(&llama_models, "smollm2-135m"), Some(4_096));
        let older = json!({"data": [{"id": "smollm2", "meta": {"n_ctx_train": 8192}}]});
        assert_eq!(from_models(&older, "smollm2"), None);
        let props = json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1});
        assert_eq!(from_props(&props), Some(4_096));
        let lm = json!({"id": "qwen2.5-7b-instruct", "max_context_length": 32768, "loaded_context_length": 4096});
        assert_eq!(from_lm_studio(&lm), Some(4_096));
    }

    #[test]
    fn another_models_entry_and_implausible_values_are_not_believed() {
        let two = json!({"data": [{"id": "a", "max_model_len": 8192}, {"id": "b", "max_model_len": 4096}]});
        assert_eq!(from_models(&two, "b"), Some(4_096));
        assert_eq!(from_models(&two, "c"), None);
        let one = json!({"data": [{"id": "served-name", "context_length": 16384}]});
        assert_eq!(from_models(&one, "alias"), Some(16_384));
        assert_eq!(from_props(&json!({"n_ctx": 0})), None);
        assert_eq!(from_props(&json!({"n_ctx": "4096"})), None);
    }
}
