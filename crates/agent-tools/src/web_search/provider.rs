//! The search providers behind one trait: how each builds its request and reads its answer.

use agent_core::ApiKey;
use reqwest::{Client, RequestBuilder, Url};
use serde::Deserialize;

/// A validated search.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub(crate) text: String,
    pub(crate) max_results: usize,
    pub(crate) allowed: Vec<String>,
    pub(crate) blocked: Vec<String>,
    pub(crate) recency_days: Option<u32>,
}

impl Query {
    /// Whether a result URL passes the domain filters (subdomains count as their parent).
    pub(crate) fn admits(&self, url: &str) -> bool {
        let host = Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_lowercase))
            .unwrap_or_default();
        let within = |domain: &String| host == *domain || host.ends_with(&format!(".{domain}"));
        (self.allowed.is_empty() || self.allowed.iter().any(within))
            && !self.blocked.iter().any(within)
    }

    /// The query text with `site:` operators for engines that support them.
    fn with_sites(&self) -> String {
        let mut text = self.text.clone();
        if !self.allowed.is_empty() {
            let sites: Vec<String> = self.allowed.iter().map(|d| format!("site:{d}")).collect();
            text.push_str(&format!(" ({})", sites.join(" OR ")));
        }
        for domain in &self.blocked {
            text.push_str(&format!(" -site:{domain}"));
        }
        text
    }

    /// How many results to ask for: more when filtering afterwards may drop some.
    fn fetch_count(&self) -> usize {
        if self.allowed.is_empty() && self.blocked.is_empty() {
            self.max_results
        } else {
            (self.max_results * 2).min(20)
        }
    }
}

/// One result, before rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) title: String,
    pub(crate) url: String,
    pub(crate) snippet: String,
    pub(crate) date: Option<String>,
}

/// A search API.
pub(crate) trait Provider: Send + Sync {
    /// The name shown in results and errors.
    fn name(&self) -> &'static str;
    /// The HTTP request for `query`.
    fn request(&self, client: &Client, query: &Query) -> RequestBuilder;
    /// The results in a successful response body.
    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, serde_json::Error>;
}

fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}/{}", url.path().trim_end_matches('/'), path.trim_start_matches('/'));
    url.set_path(&joined);
    url
}

/// A SearXNG instance (`GET /search?format=json`).
pub(crate) struct Searxng {
    pub(crate) base: Url,
}

#[derive(Deserialize)]
struct SearxngBody {
    #[serde(default)]
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: String,
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
}

impl Provider for Searxng {
    fn name(&self) -> &'static str {
        "SearXNG"
    }

    fn request(&self, client: &Client, query: &Query) -> RequestBuilder {
        let mut url = endpoint(&self.base, "search");
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", &query.with_sites()).append_pair("format", "json");
            if let Some(days) = query.recency_days {
                pairs.append_pair("time_range", range_name(days));
            }
        }
        client.get(url).header("accept", "application/json")
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, serde_json::Error> {
        let body: SearxngBody = serde_json::from_slice(body)?;
        Ok(body
            .results
            .into_iter()
            .map(|r| Hit { title: r.title, url: r.url, snippet: r.content, date: r.published_date })
            .collect())
    }
}

/// SearXNG and Tavily take named ranges, not day counts.
fn range_name(days: u32) -> &'static str {
    match days {
        0..=1 => "day",
        2..=7 => "week",
        8..=31 => "month",
        _ => "year",
    }
}

/// Brave Search (`GET /res/v1/web/search`, key in `X-Subscription-Token`).
pub(crate) struct Brave {
    pub(crate) base: Url,
    pub(crate) key: ApiKey,
}

#[derive(Deserialize)]
struct BraveBody {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    age: Option<String>,
}

impl Provider for Brave {
    fn name(&self) -> &'static str {
        "Brave Search"
    }

    fn request(&self, client: &Client, query: &Query) -> RequestBuilder {
        let mut url = endpoint(&self.base, "res/v1/web/search");
        {
            let mut pairs = url.query_pairs_mut();
            pairs
                .append_pair("q", &query.with_sites())
                .append_pair("count", &query.fetch_count().to_string());
            if let Some(days) = query.recency_days {
                let freshness = match days {
                    0..=1 => "pd",
                    2..=7 => "pw",
                    8..=31 => "pm",
                    _ => "py",
                };
                pairs.append_pair("freshness", freshness);
            }
        }
        client
            .get(url)
            .header("accept", "application/json")
            .header("x-subscription-token", self.key.expose())
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, serde_json::Error> {
        let body: BraveBody = serde_json::from_slice(body)?;
        Ok(body
            .web
            .map(|w| w.results)
            .unwrap_or_default()
            .into_iter()
            .map(|r| Hit { title: r.title, url: r.url, snippet: r.description, date: r.age })
            .collect())
    }
}

/// Tavily (`POST /search` with a JSON body, key as a bearer token).
pub(crate) struct Tavily {
    pub(crate) base: Url,
    pub(crate) key: ApiKey,
}

#[derive(Deserialize)]
struct TavilyBody {
    #[serde(default)]
    results: Vec<TavilyResult>,
}

#[derive(Deserialize)]
struct TavilyResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    published_date: Option<String>,
}

impl Provider for Tavily {
    fn name(&self) -> &'static str {
        "Tavily"
    }

    fn request(&self, client: &Client, query: &Query) -> RequestBuilder {
        let mut body = serde_json::json!({
            "query": query.text,
            "max_results": query.fetch_count(),
            "search_depth": "basic",
        });
        if !query.allowed.is_empty() {
            body["include_domains"] = serde_json::json!(query.allowed);
        }
        if !query.blocked.is_empty() {
            body["exclude_domains"] = serde_json::json!(query.blocked);
        }
        if let Some(days) = query.recency_days {
            body["time_range"] = serde_json::json!(range_name(days));
        }
        client
            .post(endpoint(&self.base, "search"))
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.key.expose()))
            .body(body.to_string())
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, serde_json::Error> {
        let body: TavilyBody = serde_json::from_slice(body)?;
        Ok(body
            .results
            .into_iter()
            .map(|r| Hit { title: r.title, url: r.url, snippet: r.content, date: r.published_date })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(allowed: &[&str], blocked: &[&str], url: &str, expect: bool) {
        let query = Query {
            text: String::new(),
            max_results: 5,
            allowed: allowed.iter().map(|d| (*d).to_owned()).collect(),
            blocked: blocked.iter().map(|d| (*d).to_owned()).collect(),
            recency_days: None,
        };
        assert_eq!(query.admits(url), expect, "{url}");
    }

    #[test]
    fn domain_filters_cover_subdomains_only() {
        check(&["docs.rs"], &[], "https://docs.rs/serde", true);
        check(&["rust-lang.org"], &[], "https://doc.rust-lang.org/book", true);
        check(&["docs.rs"], &[], "https://notdocs.rs/x", false);
        check(&[], &["example.com"], "https://www.example.com/a", false);
        check(&[], &["example.com"], "https://example.org/a", true);
        check(&[], &[], "not a url", true);
    }
}
