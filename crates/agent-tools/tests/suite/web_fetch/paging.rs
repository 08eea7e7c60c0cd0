//! Paging through the real executor: what the model reads after the output cap, page after page,
//! following the offsets the answers give, must be the whole article in order.
//!
//! Every `max_bytes` from 1 to the maximum on a 3 MB article would be hundreds of millions of
//! calls; the values are chosen where behaviour changes instead (docs/tools.md, "web_fetch"):
//! every value from 1 to 64 (on a short article, where a page is a character or a few), a spread
//! in the middle, every value within 12 of the cap boundary (where header plus text just fit),
//! values over the cap, and the maximum, under the default cap and under a larger one.

use std::sync::Arc;

use agent_core::{CancellationToken, ToolCall};
use agent_exec::{
    DEFAULT_OUTPUT_CAP, Executor, ExecutorConfig, PermissionMode, PermissionPolicy, Registry,
    Workspace,
};
use agent_sandbox::network::Resolver;
use agent_tools::{BuiltinConfig, WebFetchConfig, web_fetch::MAX_BYTES};
use serde_json::json;

use super::{Server, fenced, field, route, serve};

/// An article of `words` numbered words ("wé0 wé1 …", so characters and bytes differ), twelve
/// to a paragraph, inside page furniture that must not show.
fn article(words: usize) -> String {
    let mut html = String::from("<html><body><nav>MENU</nav><main><h1>Article</h1>");
    for start in (0..words).step_by(12) {
        let line: Vec<String> =
            (start..(start + 12).min(words)).map(|i| format!("wé{i}")).collect();
        html.push_str(&format!("<p>{}</p>\n", line.join(" ")));
    }
    html.push_str("</main><footer>FOOTER</footer></body></html>");
    html
}

/// An executor with web_fetch alone, capping outputs at `cap` characters, and the article's URL.
struct Pager {
    exec: Executor,
    url: String,
    cap: usize,
    calls: usize,
    _server: Server,
    _dir: tempfile::TempDir,
}

async fn pager(words: usize, cap: usize) -> Pager {
    let mut page = route("text/html; charset=utf-8", article(words));
    // With a validator the later pages revalidate (304) instead of converting the page again.
    page.headers.push(("etag".into(), "\"v1\"".into()));
    let server = serve(vec![("/article", page)]).await;
    let resolver = Resolver::new([("news.test", "127.0.0.1")]).unwrap();
    let config = BuiltinConfig {
        web_fetch: WebFetchConfig { resolver, ..WebFetchConfig::default() },
        ..BuiltinConfig::default()
    };
    let tool = agent_tools::builtin(&config)
        .unwrap()
        .into_iter()
        .find(|t| t.spec().name == "web_fetch")
        .unwrap();
    let mut registry = Registry::new();
    registry.register(Arc::clone(&tool)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = PermissionPolicy::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Bypass);
    let mut config = ExecutorConfig::new("paging");
    config.output_cap = cap;
    let exec = Executor::new(registry, policy, config);
    let url = format!("http://news.test:{}/article", server.port);
    Pager { exec, url, cap, calls: 0, _server: server, _dir: dir }
}

impl Pager {
    /// Pages the article with `max_bytes = max` from offset 0, as a model would: each call with
    /// the `next_offset` of the answer before. Returns the text the model read.
    async fn read(&mut self, max: usize) -> String {
        let mut text = String::new();
        let mut offset = 0u64;
        loop {
            self.calls += 1;
            let args = json!({ "url": self.url, "offset": offset, "max_bytes": max });
            let call =
                ToolCall::function(format!("c{}", self.calls), "web_fetch", args.to_string());
            let outcome = self.exec.execute(&call, &CancellationToken::new()).await;
            let seen = &outcome.text;
            let context =
                || format!("max_bytes {max}, offset {offset}: {}", &seen[..seen.len().min(700)]);
            assert!(outcome.ok && !outcome.truncated, "{}", context());
            assert!(seen.chars().count() <= self.cap, "{}", context());
            assert_eq!(field(seen, "offset"), Some(offset.to_string()), "{}", context());
            let slice = fenced(seen);
            assert!(!slice.is_empty() && slice.len() <= max.max(4), "{}", context());
            text.push_str(&slice);
            match field(seen, "next_offset") {
                Some(next) => offset = next.parse().unwrap(),
                None => return text,
            }
        }
    }
}

/// The words of `text` are exactly `wé0 … wé{words-1}` after the heading, in order.
#[track_caller]
fn check(text: &str, words: usize, max: usize) {
    let mut got = text.split_whitespace();
    assert_eq!(got.next(), Some("#"), "max_bytes {max}");
    assert_eq!(got.next(), Some("Article"), "max_bytes {max}");
    let mut count = 0;
    for (i, word) in got.enumerate() {
        assert_eq!(word, format!("wé{i}"), "max_bytes {max}: word {i} of {words}");
        count += 1;
    }
    assert_eq!(count, words, "max_bytes {max}: words lost at the end");
}

#[tokio::test]
async fn every_max_bytes_pages_an_article_back_whole_to_the_model() {
    // Small pages on a short article: 1 to 64 bytes each, a character at the least.
    let mut short = pager(240, DEFAULT_OUTPUT_CAP).await;
    for max in 1..=64 {
        check(&short.read(max).await, 240, max);
    }

    // A 3 MB article under the default cap of 12,000 characters.
    let words = 330_000;
    let mut long = pager(words, DEFAULT_OUTPUT_CAP).await;
    // The header's length, to find the boundary where header and text just fit the cap.
    let probe = {
        long.calls += 1;
        let args = json!({ "url": long.url, "max_bytes": 100 }).to_string();
        let call = ToolCall::function("probe", "web_fetch", args);
        long.exec.execute(&call, &CancellationToken::new()).await.text
    };
    let header = probe.chars().count() - fenced(&probe).chars().count();
    let boundary = DEFAULT_OUTPUT_CAP - header;
    let mut maxes = vec![1000, 4096, 8192, 16_384, 32_768, 65_536, 131_072, MAX_BYTES];
    maxes.extend(boundary - 12..=boundary + 12);
    for max in maxes {
        check(&long.read(max).await, words, max);
    }

    // Under a cap of 100,000 characters pages of 65,536 bytes fit as they are, larger ones not.
    let mut wide = pager(words, 100_000).await;
    for max in [65_536, 99_000, MAX_BYTES] {
        check(&wide.read(max).await, words, max);
    }
    eprintln!("{} calls", short.calls + long.calls + wide.calls);
}
