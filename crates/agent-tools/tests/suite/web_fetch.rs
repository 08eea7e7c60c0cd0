//! web_fetch against loopback servers only: every name is pinned with the resolver override, so
//! no test asks the machine's resolver, and every refusal is checked on the server's accept count.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use agent_exec::{PermissionMode, PolicyBuilder, RuleAction, Workspace};
use agent_sandbox::network::Resolver;
use agent_tools::{BuiltinConfig, WebFetchConfig};
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use super::Fixture;

// Hostile bodies (deep nesting, compression) and paging through the executor.
mod bodies;
mod paging;

/// One canned route: status, headers and body.
#[derive(Clone)]
struct Route {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn route(content_type: &str, body: impl Into<Vec<u8>>) -> Route {
    Route {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        body: body.into(),
    }
}

fn redirect(to: &str) -> Route {
    Route { status: 302, headers: vec![("location".into(), to.into())], body: Vec::new() }
}

/// A loopback server that counts every connection it accepts and the full bodies it sent.
struct Server {
    port: u16,
    accepts: Arc<AtomicUsize>,
    bodies: Arc<AtomicUsize>,
    /// The head of every request, lower case.
    heads: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn serve_on(addr: &str, routes: HashMap<String, Route>) -> Server {
    let listener = TcpListener::bind(addr).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepts = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (count, sent, seen) = (accepts.clone(), bodies.clone(), heads.clone());
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let (routes, sent, seen) = (routes.clone(), sent.clone(), seen.clone());
            tokio::spawn(async move {
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => raw.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&raw).to_lowercase();
                seen.lock().unwrap().push(head.clone());
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let Some(route) = routes.get(&path).cloned() else {
                    let _ = socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                    return;
                };
                let etag =
                    route.headers.iter().find(|(n, _)| n == "etag").map(|(_, v)| v.to_lowercase());
                let fresh =
                    etag.is_some_and(|etag| head.contains(&format!("if-none-match: {etag}")));
                let (status, body) =
                    if fresh { (304, &b""[..]) } else { (route.status, &route.body[..]) };
                if !fresh && !body.is_empty() {
                    sent.fetch_add(1, Ordering::SeqCst);
                }
                let mut out = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (name, value) in &route.headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                out.push_str("\r\n");
                let _ = socket.write_all(out.as_bytes()).await;
                let _ = socket.write_all(body).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Server { port, accepts, bodies, heads }
}

async fn serve(routes: Vec<(&str, Route)>) -> Server {
    serve_on("127.0.0.1:0", routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect()).await
}

/// The tools with `pins`, and a boundary holding `rules` (allow unless prefixed with `deny:`).
fn fixture(pins: &[(&str, &str)], rules: &[&str]) -> Fixture {
    let resolver = Resolver::new(pins.iter().copied()).unwrap();
    let config = BuiltinConfig {
        web_fetch: WebFetchConfig { resolver, ..WebFetchConfig::default() },
        ..BuiltinConfig::default()
    };
    let mut fixture = Fixture::with_config(config);
    let mut builder =
        PolicyBuilder::new(Workspace::new(fixture.root()).unwrap(), PermissionMode::Default);
    for rule in rules {
        match rule.strip_prefix("deny:") {
            Some(rule) => builder.rule(RuleAction::Deny, rule, "test").unwrap(),
            None => builder.rule(RuleAction::Allow, rule, "test").unwrap(),
        };
    }
    fixture.boundary = Some(Arc::new(builder.build().workspace().clone()));
    fixture
}

async fn fetch(fixture: &Fixture, url: &str, extra: serde_json::Value) -> String {
    let mut args = json!({ "url": url });
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    fixture.call("web_fetch", args).await
}

/// The value of `name: …` in a web_fetch header.
fn field(out: &str, name: &str) -> Option<String> {
    out.lines().find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_owned))
}

/// The fenced page text of an answer.
fn fenced(out: &str) -> String {
    let start = out.find("<<<page_").unwrap();
    let body_start = start + out[start..].find('\n').unwrap() + 1;
    let end = out.rfind("\npage_").unwrap();
    out[body_start..end].to_owned()
}

#[tokio::test]
async fn a_3_mb_page_pages_back_with_nothing_lost_or_repeated() {
    let mut html = String::from(
        "<html><head><title>Big  book</title></head><body><nav><a href=/>MENU-ITEM</a></nav><main>",
    );
    let mut n = 0;
    while html.len() < 3 * 1024 * 1024 {
        html.push_str(&format!("<p>Paragraph {n} — café text to read.</p>\n"));
        n += 1;
    }
    html.push_str("</main><footer>FOOTER-TEXT</footer></body></html>");
    let mut page = route("text/html; charset=utf-8", html);
    page.headers.push(("etag".into(), "\"v1\"".into()));
    let server = serve(vec![("/big", page)]).await;
    let fixture = fixture(&[("docs.test", "127.0.0.1")], &[]);
    let url = format!("http://docs.test:{}/big", server.port);

    let mut text = String::new();
    let mut offset = 0u64;
    let mut calls = 0;
    loop {
        let out = fetch(&fixture, &url, json!({ "offset": offset, "max_bytes": 262144 })).await;
        assert_eq!(
            field(&out, "offset"),
            Some(offset.to_string()),
            "{}",
            &out[..out.len().min(600)]
        );
        assert_eq!(field(&out, "Title").as_deref(), Some("Big book"));
        let slice = fenced(&out);
        assert_eq!(field(&out, "bytes_returned"), Some(slice.len().to_string()));
        text.push_str(&slice);
        calls += 1;
        match field(&out, "next_offset") {
            Some(next) => {
                assert_eq!(field(&out, "truncated").as_deref(), Some("true"));
                assert!(out.ends_with(&format!("offset {next} for the rest.")));
                offset = next.parse().unwrap();
            }
            None => {
                assert_eq!(field(&out, "truncated").as_deref(), Some("false"));
                assert_eq!(field(&out, "bytes_total"), Some(text.len().to_string()));
                break;
            }
        }
    }
    assert!(calls > 5, "{calls}");
    let paragraphs: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(paragraphs.len(), n);
    for (i, line) in paragraphs.iter().enumerate() {
        assert_eq!(*line, format!("Paragraph {i} — café text to read."));
    }
    assert!(!text.contains("MENU-ITEM") && !text.contains("FOOTER-TEXT"));
    // The later pages came from the cache, revalidated with the ETag: one full body was sent.
    assert_eq!(server.bodies.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn binary_types_are_refused_by_type() {
    let server = serve(vec![
        ("/a.pdf", route("application/pdf", b"%PDF-1.7\n\0\0binary".to_vec())),
        ("/notes.txt", route("text/plain; charset=iso-8859-1", b"caf\xe9 ok".to_vec())),
    ])
    .await;
    let fixture = fixture(&[("files.test", "127.0.0.1")], &[]);
    let out = fetch(&fixture, &format!("http://files.test:{}/a.pdf", server.port), json!({})).await;
    assert!(out.contains("binary_file") && out.contains("is application/pdf, not text"), "{out}");
    let out =
        fetch(&fixture, &format!("http://files.test:{}/notes.txt", server.port), json!({})).await;
    assert_eq!(fenced(&out), "café ok");
}

#[tokio::test]
async fn internal_addresses_are_refused_in_every_spelling() {
    let server = serve(vec![("/", route("text/plain", "local secret"))]).await;
    let v6 = serve_on("[::1]:0", [("/".to_owned(), route("text/plain", "v6 secret"))].into()).await;
    let p = server.port;
    let fixture = fixture(&[], &[]);
    for url in [
        format!("http://127.0.0.1:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://0x7f.0.0.1:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://[::1]:{}/", v6.port),
    ] {
        let out = fetch(&fixture, &url, json!({})).await;
        assert!(
            out.contains("permission_denied") && out.contains("loopback address"),
            "{url}: {out}"
        );
        assert!(out.contains("WebFetch(domain:"), "{url}: {out}");
    }
    assert_eq!(server.accepts.load(Ordering::SeqCst), 0);
    assert_eq!(v6.accepts.load(Ordering::SeqCst), 0);

    // The control: a rule opens the local server deliberately.
    let opened = self::fixture(&[], &["WebFetch(domain:localhost)"]);
    let out = fetch(&opened, &format!("http://localhost:{p}/"), json!({})).await;
    assert_eq!(fenced(&out), "local secret", "{out}");
    assert_eq!(server.accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_redirect_to_loopback_is_refused_before_any_connection() {
    let secret = serve(vec![("/secret", route("text/plain", "the secret"))]).await;
    let target = format!("http://127.0.0.1:{}/secret", secret.port);
    let page = serve(vec![
        ("/go", redirect(&target)),
        ("/same", redirect("/final")),
        ("/final", route("text/plain", "landed")),
    ])
    .await;
    let fixture = fixture(&[("page.test", "127.0.0.1")], &[]);
    let out = fetch(&fixture, &format!("http://page.test:{}/go", page.port), json!({})).await;
    assert!(out.contains("(a redirect): 127.0.0.1 is a loopback address"), "{out}");
    assert_eq!(secret.accepts.load(Ordering::SeqCst), 0);
    // A redirect on the same host is followed, and said.
    let out = fetch(&fixture, &format!("http://page.test:{}/same", page.port), json!({})).await;
    assert!(out.contains("(after 1 redirect)") && fenced(&out) == "landed", "{out}");

    // The control: with the target opened by a rule, the same redirect reaches it.
    let opened = self::fixture(&[("page.test", "127.0.0.1")], &["WebFetch(domain:127.0.0.1)"]);
    let out = fetch(&opened, &format!("http://page.test:{}/go", page.port), json!({})).await;
    assert_eq!(fenced(&out), "the secret", "{out}");
    assert_eq!(secret.accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirects_to_other_hosts_and_loops_are_not_followed() {
    let other = serve(vec![("/", route("text/plain", "other"))]).await;
    let mut routes: Vec<(String, Route)> =
        (0..7).map(|i| (format!("/r{i}"), redirect(&format!("/r{}", i + 1)))).collect();
    routes.push(("/away".into(), redirect(&format!("http://other.test:{}/", other.port))));
    let page = serve_on("127.0.0.1:0", routes.into_iter().collect()).await;
    let pins = [("page.test", "127.0.0.1"), ("other.test", "127.0.0.1")];
    let fixture = fixture(&pins, &["deny:WebFetch(domain:denied.test)"]);
    let out = fetch(&fixture, &format!("http://page.test:{}/r0", page.port), json!({})).await;
    assert!(out.contains("redirects more than 5 times"), "{out}");
    let out = fetch(&fixture, &format!("http://page.test:{}/away", page.port), json!({})).await;
    assert!(
        out.contains("is on another host (other.test)")
            && out.contains("Call web_fetch with that URL"),
        "{out}"
    );
    assert_eq!(other.accepts.load(Ordering::SeqCst), 0);
    let allowed = self::fixture(&pins, &["WebFetch(domain:other.test)"]);
    let out = fetch(&allowed, &format!("http://page.test:{}/away", page.port), json!({})).await;
    assert_eq!(fenced(&out), "other", "{out}");
}
