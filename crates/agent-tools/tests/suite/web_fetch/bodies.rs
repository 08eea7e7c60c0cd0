//! Bodies a hostile server may send: elements nested 100,000 deep in every shape the parser
//! treats differently, and compressed bodies, a decompression bomb among them.

use std::{io::Write, time::Instant};

use serde_json::json;

use super::{Fixture, Route, fenced, fetch, field, fixture, route, serve};

/// Every page of `url` in `format`, through the tool: the first answer and the whole text.
async fn read_whole(fixture: &Fixture, url: &str, format: &str) -> (String, String) {
    let mut text = String::new();
    let mut offset = 0u64;
    let mut first = None;
    loop {
        let args = json!({ "format": format, "offset": offset, "max_bytes": 262_144 });
        let out = fetch(fixture, url, args).await;
        assert!(out.contains("<<<page_"), "{format}: {}", &out[..out.len().min(400)]);
        text.push_str(&fenced(&out));
        let next = field(&out, "next_offset");
        first.get_or_insert(out);
        match next {
            Some(next) => offset = next.parse().unwrap(),
            None => return (first.unwrap_or_default(), text),
        }
    }
}

/// 100,000-deep pages: the marker word each ends with, and the HTML.
fn deep_pages() -> Vec<(&'static str, String)> {
    let n = 100_000;
    let r = |s: &str, k: usize| s.repeat(k);
    vec![
        (
            "closed-div",
            format!("<html><body>{}closed-div{}</body></html>", r("<div>", n), r("</div>", n)),
        ),
        ("unclosed-div", format!("<html><body>{}unclosed-div", r("<div>", n))),
        ("self-closed-div", format!("<body>{}self-closed-div", r("<div/>", n))),
        ("nested-table", format!("<body>{}nested-table", r("<table><tr><td>", n / 3))),
        ("nested-list", format!("<body>{}nested-list", r("<ul><li>", n / 2))),
        ("inline-tags", format!("<body><p>{}inline-tags", r("<span><em><a href=x>", n / 3))),
        ("formatting", format!("<body>{}formatting", r("<b><i id=1>", n / 2))),
        ("misnested", format!("<body>{}misnested{}", r("<b><div>", n / 2), r("</b></div>", n / 2))),
        (
            "hidden-script",
            format!(
                "<body>{}<script>hidden()</script><style>p{{}}</style>hidden-script",
                r("<div>", n)
            ),
        ),
    ]
}

#[tokio::test]
async fn pages_nested_100000_deep_are_answered_in_every_format() {
    let pages = deep_pages();
    let routes: Vec<(String, Route)> = pages
        .iter()
        .map(|(name, html)| (format!("/{name}"), route("text/html", html.clone())))
        .collect();
    let server = serve(routes.iter().map(|(p, r)| (p.as_str(), r.clone())).collect()).await;
    let fixture = fixture(&[("deep.test", "127.0.0.1")], &[]);
    for (name, html) in &pages {
        let url = format!("http://deep.test:{}/{name}", server.port);
        for format in ["markdown", "text"] {
            let started = Instant::now();
            let (first, text) = read_whole(&fixture, &url, format).await;
            eprintln!("{name} as {format}: {:?}", started.elapsed());
            assert!(text.contains(name), "{name} as {format}: the text is lost: {first}");
            assert!(
                first.contains("tags past that depth were dropped, their text kept"),
                "{first}"
            );
            assert!(!text.contains("hidden()") && !text.contains("p{}"), "{name}: {first}");
        }
        let (first, text) = read_whole(&fixture, &url, "raw").await;
        assert_eq!(text, *html, "{name} as raw: {first}");
    }
}

#[tokio::test]
async fn a_million_alike_siblings_convert_in_one_pass() {
    // htmd merges `<b>x</b><b>x</b>` into `**xx**` one removal at a time (quadratic); the
    // parser merges such runs first, so this 8 MB page converts at once.
    let html = format!("<body><p>{}siblings-end</p>", "<b>x</b>".repeat(1_000_000));
    let server = serve(vec![("/wide", route("text/html", html))]).await;
    let fixture = fixture(&[("wide.test", "127.0.0.1")], &[]);
    let started = Instant::now();
    let url = format!("http://wide.test:{}/wide", server.port);
    let (first, text) = read_whole(&fixture, &url, "markdown").await;
    eprintln!("a million siblings: {:?}", started.elapsed());
    assert_eq!(text, format!("**{}**siblings-end", "x".repeat(1_000_000)), "{first}");
}

#[tokio::test]
async fn pages_within_the_depth_keep_their_structure() {
    // The control: lists nested 100 deep (200 elements), and 10,000 `<p>` never closed (which the parser closes, so
    // they do not nest), lose nothing.
    let lists = format!("<body>{}inner{}", "<ul><li>x".repeat(100), "</li></ul>".repeat(100));
    let paragraphs: String = (0..10_000).map(|i| format!("<p>para{i}")).collect();
    let server = serve(vec![
        ("/lists", route("text/html", lists)),
        ("/paragraphs", route("text/html", format!("<body>{paragraphs}"))),
    ])
    .await;
    let fixture = fixture(&[("deep.test", "127.0.0.1")], &[]);
    let url = format!("http://deep.test:{}/lists", server.port);
    let (first, text) = read_whole(&fixture, &url, "markdown").await;
    assert!(!first.contains("were dropped"), "{first}");
    // The hundredth list item is indented a hundred levels.
    let inner = text.lines().find(|l| l.ends_with("xinner")).unwrap_or_default();
    assert!(inner.trim_start().starts_with('*') && inner.len() > 200, "{text}");
    let url = format!("http://deep.test:{}/paragraphs", server.port);
    let (first, text) = read_whole(&fixture, &url, "markdown").await;
    assert!(!first.contains("were dropped"), "{first}");
    let expect: Vec<String> = (0..10_000).map(|i| format!("para{i}")).collect();
    assert_eq!(text.split_whitespace().collect::<Vec<_>>(), expect);
}

fn encoded(coding: &str, body: &[u8]) -> Route {
    let mut r = route("text/plain; charset=utf-8", body.to_vec());
    r.headers.push(("content-encoding".into(), coding.into()));
    r
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[tokio::test]
async fn compressed_bodies_are_decoded_and_a_bomb_is_cut_at_the_limit() {
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    zlib.write_all("zlib café".as_bytes()).unwrap();
    let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    raw.write_all(b"raw deflate").unwrap();
    // 1 GiB of zeros as 1,024 gzip members of 1 MiB (1 MB on the wire).
    let member = gzip(&vec![0u8; 1 << 20]);
    let bomb = member.repeat(1024);
    let server = serve(vec![
        ("/multi", encoded("gzip", &[gzip(b"two "), gzip(b"members")].concat())),
        ("/zlib", encoded("deflate", &zlib.finish().unwrap())),
        ("/raw", encoded("deflate", &raw.finish().unwrap())),
        ("/bomb", encoded("gzip", &bomb)),
        ("/br", encoded("br", b"\x0b\x02\x80hello\x03")),
        ("/zstd", encoded("zstd", b"(\xb5/\xfd\x00Xhello")),
        ("/corrupt", encoded("gzip", b"this is not gzip")),
        ("/plain", encoded("identity", b"as it is")),
    ])
    .await;
    let fixture = fixture(&[("zip.test", "127.0.0.1")], &[]);
    let url = |path: &str| format!("http://zip.test:{}{path}", server.port);
    let check = async |path: &str, expect: &str| {
        let out = fetch(&fixture, &url(path), json!({})).await;
        assert!(out.contains(expect), "{path}: {}", &out[..out.len().min(600)]);
        out
    };
    assert_eq!(fenced(&check("/multi", "bytes_total: 11").await), "two members");
    assert_eq!(fenced(&check("/zlib", "zlib").await), "zlib café");
    assert_eq!(fenced(&check("/raw", "raw").await), "raw deflate");
    assert_eq!(fenced(&check("/plain", "as it is").await), "as it is");
    let started = Instant::now();
    check("/bomb", "bytes_total: 10485760").await;
    check("/bomb", "The page is larger than 10 MiB: only its first 10 MiB were read.").await;
    eprintln!("the bomb, twice: {:?}", started.elapsed());
    check("/br", "is sent with Content-Encoding `br`, which web_fetch does not decode").await;
    check("/zstd", "is sent with Content-Encoding `zstd`, which web_fetch does not decode").await;
    check("/corrupt", "has a body that is not valid gzip").await;
    // It asks only for what it decodes.
    let heads = server.heads.lock().unwrap().clone();
    assert!(
        heads.iter().all(|h| h.contains("\r\naccept-encoding: gzip, deflate\r\n")),
        "{heads:?}"
    );
}
