//! Client configuration shared by both adapters: endpoint, key, model, timeouts and retry policy.

use std::time::Duration;

use agent_core::{ApiKey, ModelError, ModelErrorKind, ToolChoice};

use crate::limits::ResponseLimits;
use async_openai::config::Config;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use secrecy::{ExposeSecret, SecretString};

/// The single retry policy of the crate: it retries HTTP 429, 5xx and connection failures that
/// happen before a response starts, with exponential backoff and jitter.
///
/// A `Retry-After` header is honoured (never retried sooner than asked) but capped: if the server
/// asks for more than [`RetryPolicy::max_retry_after`], the request is not retried and the error
/// carries the server's delay so the caller can decide. A response whose body has started
/// streaming is never retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The delay before the first retry; each later retry doubles it.
    pub initial_backoff: Duration,
    /// The longest computed backoff.
    pub max_backoff: Duration,
    /// The longest `Retry-After` the client will wait for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (0-based), with up to 25% random jitter subtracted
    /// so that many clients that failed together do not retry together.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let base = self.initial_backoff.saturating_mul(2_u32.saturating_pow(retry));
        let base = base.min(self.max_backoff);
        let jitter = base.mul_f64(0.25 * jitter_fraction());
        base.saturating_sub(jitter)
    }
}

/// A fraction in [0, 1) from the clock's sub-second noise; good enough to spread retries, and
/// it avoids a dependency on a random number generator.
fn jitter_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

/// Everything both adapters need to reach a model.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The API base URL including the version segment, such as `https://api.openai.com/v1` or
    /// `http://localhost:11434/v1`.
    pub base_url: String,
    /// The bearer key; `None` sends no `Authorization` header (local servers).
    pub api_key: Option<ApiKey>,
    /// The model name sent with every request.
    pub model: String,
    /// Whether responses are streamed (SSE) or fetched whole.
    pub stream: bool,
    /// The longest time to establish a connection.
    pub connect_timeout: Duration,
    /// The deadlines (first byte, idle, total) and size caps of each response.
    pub limits: ResponseLimits,
    /// How failed requests are retried.
    pub retry: RetryPolicy,
    /// The tool choice of a first turn: a request whose transcript ends with a user message (the
    /// first model turn after each user input). Later turns use the request's own choice, so a
    /// model forced to call a tool first can still answer once it has the result. `None` (the
    /// default) leaves every request as it is.
    pub first_turn_tool_choice: Option<ToolChoice>,
    /// Whether the model takes image input. When it does not, tool-output images are left out of
    /// every request (their text names them), so a text-only server never refuses one.
    pub image_input: bool,
}

impl ClientConfig {
    /// A configuration with streaming on, no key, a 10 s connect timeout, the default
    /// [`ResponseLimits`] and retry policy, no first-turn tool choice and image input on.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            stream: true,
            connect_timeout: Duration::from_secs(10),
            limits: ResponseLimits::default(),
            retry: RetryPolicy::default(),
            first_turn_tool_choice: None,
            image_input: true,
        }
    }

    /// The same configuration with a key.
    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }
}

/// The async-openai `Config` we hand to its client. We do not use its `OpenAIConfig`, because
/// that one silently reads `OPENAI_*` environment variables and panics on a key that is not a
/// valid header value; here every header is built once, up front, and can fail cleanly.
#[derive(Clone)]
pub(crate) struct WireConfig {
    base_url: String,
    headers: HeaderMap,
    // The trait wants a key even when none is used; it is only reachable through the trait.
    key: SecretString,
}

impl WireConfig {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ModelError> {
        let invalid = |message: String| ModelError::new(ModelErrorKind::InvalidRequest, message);
        let mut headers = HeaderMap::new();
        let key = match &config.api_key {
            Some(key) => SecretString::from(key.expose().to_owned()),
            None => SecretString::from(String::new()),
        };
        if config.api_key.is_some() {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
                .map_err(|_| {
                    invalid("the api key contains characters not allowed in a header".to_owned())
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let base_url = config.base_url.trim_end_matches('/').to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(invalid(format!(
                "the base url must start with http:// or https://: {base_url}"
            )));
        }
        Ok(Self { base_url, headers, key })
    }

    /// Whether the base URL is plain `http://`, which needs no TLS at all.
    pub(crate) fn is_plain_http(&self) -> bool {
        self.base_url.starts_with("http://")
    }
}

impl Config for WireConfig {
    fn headers(&self) -> HeaderMap {
        self.headers.clone()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    fn query(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }

    fn api_base(&self) -> &str {
        &self.base_url
    }

    fn api_key(&self) -> &SecretString {
        &self.key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(policy: &RetryPolicy, retry: u32, low_ms: u64, high_ms: u64) {
        let delay = policy.backoff(retry);
        assert!(
            delay >= Duration::from_millis(low_ms) && delay <= Duration::from_millis(high_ms),
            "retry {retry}: {delay:?} not in [{low_ms}, {high_ms}] ms"
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy::default();
        check(&policy, 0, 375, 500);
        check(&policy, 1, 750, 1000);
        check(&policy, 10, 6000, 8000);
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let config = ClientConfig::new("http://x/v1", "m").with_api_key(ApiKey::new("sk-secret"));
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn bad_key_and_bad_url_are_errors_not_panics() {
        let bad_key = ClientConfig::new("http://x/v1", "m").with_api_key(ApiKey::new("a\nb"));
        let error = WireConfig::new(&bad_key).err().map(|err| err.to_string()).unwrap_or_default();
        assert!(error.contains("api key") && !error.contains("a\nb"), "{error}");
        let bad_url = ClientConfig::new("localhost:1/v1", "m");
        assert!(WireConfig::new(&bad_url).is_err());
    }
}
