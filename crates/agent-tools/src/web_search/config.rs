//! The user's web search configuration: which provider, where, and with which key.

use std::time::Duration;

use agent_core::{ApiKey, ToolError, ToolErrorKind};

use super::provider::{Brave, Provider, Searxng, Tavily};

/// The timeout of one search request.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// Which search API to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// A SearXNG instance's JSON API (`/search?format=json`); needs `base_url`, no key.
    Searxng,
    /// Brave Search's web search API; needs `api_key`.
    Brave,
    /// Tavily's search API; needs `api_key`.
    Tavily,
}

/// How web_search reaches its provider.
#[derive(Debug, Clone)]
pub struct WebSearchConfig {
    /// The provider.
    pub provider: ProviderKind,
    /// The API base URL: required for SearXNG (such as `http://localhost:8888`); for Brave and
    /// Tavily it defaults to their public endpoints.
    pub base_url: Option<String>,
    /// The API key (Brave, Tavily).
    pub api_key: Option<ApiKey>,
    /// The timeout of one request. Default 15 s.
    pub timeout: Duration,
}

impl WebSearchConfig {
    /// A configuration for `provider` with no URL or key yet and the default timeout.
    pub fn new(provider: ProviderKind) -> Self {
        Self { provider, base_url: None, api_key: None, timeout: DEFAULT_TIMEOUT }
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Sets the per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn base(&self) -> &str {
        match (&self.base_url, self.provider) {
            (Some(url), _) => url.trim_end_matches('/'),
            (None, ProviderKind::Brave) => "https://api.search.brave.com",
            (None, ProviderKind::Tavily) => "https://api.tavily.com",
            (None, ProviderKind::Searxng) => "",
        }
    }

    /// The host the tool contacts, for permission rules such as `WebSearch(domain:…)`; `None`
    /// when the configuration names none (a SearXNG table without a URL), which the policy judges
    /// as "any domain".
    pub fn host(&self) -> Option<String> {
        reqwest::Url::parse(self.base()).ok().and_then(|u| u.host_str().map(str::to_owned))
    }

    /// The provider, or `not_configured` naming what is missing.
    pub(crate) fn provider(&self) -> Result<Box<dyn Provider>, ToolError> {
        let missing = |what: &str| {
            ToolError::new(
                ToolErrorKind::NotConfigured,
                format!(
                    "web_search is not fully configured: the {:?} provider needs {what}. Ask the user to set it; do not retry",
                    self.provider
                ),
            )
        };
        let base = reqwest::Url::parse(self.base()).map_err(|_| missing("a valid base_url"))?;
        Ok(match self.provider {
            ProviderKind::Searxng => Box::new(Searxng { base }),
            ProviderKind::Brave => Box::new(Brave {
                base,
                key: self.api_key.clone().ok_or_else(|| missing("an api_key"))?,
            }),
            ProviderKind::Tavily => Box::new(Tavily {
                base,
                key: self.api_key.clone().ok_or_else(|| missing("an api_key"))?,
            }),
        })
    }
}
