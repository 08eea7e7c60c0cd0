//! Benchmark figures for the network paths (printed, not asserted), all on loopback with pinned
//! names: `web_fetch.ms`, one web_fetch of a 1 MB HTML page converted to Markdown, and
//! `proxy.overhead_ms`, a small HTTP request through the session proxy minus the same request
//! made directly (medians of the per-pair differences).
//!
//! Run with `cargo run --release -p agent-tools --example web_bench [-- --json] [--quick]`.
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::{sync::Arc, time::Instant};

use agent_core::{Tool, ToolContext, Typed};
use agent_exec::{
    Workspace,
    network::{DomainRules, ProxyConfig, Resolver, SessionProxy},
};
use agent_tools::{WebFetch, WebFetchConfig};
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// A loopback server answering every request with `body` as HTML.
async fn serve(body: Arc<String>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let body = body.clone();
            tokio::spawn(async move {
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => raw.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    port
}

async fn get(port: u16, request: &str) -> usize {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    out.len()
}

fn report(json: bool, name: &str, values: &mut [f64]) {
    values.sort_by(f64::total_cmp);
    let (median, min, max) = (values[values.len() / 2], values[0], values[values.len() - 1]);
    if json {
        println!(
            "{}",
            json!({"name": name, "unit": "ms", "median": median, "min": min, "max": max, "runs": values.len()})
        );
    } else {
        println!(
            "{name:<18} median {median:.3} ms (min {min:.3}, max {max:.3}, {} runs)",
            values.len()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let runs = if args.iter().any(|a| a == "--quick") { 5 } else { 20 };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut page = String::from("<html><body><nav>menu</nav><main>");
        let mut n = 0;
        while page.len() < 1 << 20 {
            page.push_str(&format!("<h2>Section {n}</h2><p>Some <a href=\"/x{n}\">linked</a> text, <em>emphasis</em> and <code>code</code>.</p>\n"));
            n += 1;
        }
        page.push_str("</main></body></html>");
        let small = Arc::new("<p>ok</p>".to_owned());
        let page_port = serve(Arc::new(page)).await;
        let small_port = serve(small).await;

        let dir = tempfile::tempdir().unwrap();
        let workspace: Arc<dyn agent_core::Boundary> = Arc::new(Workspace::new(dir.path()).unwrap());
        let resolver = Resolver::new([("bench.test", "127.0.0.1")]).unwrap();
        let tool = Typed::new(WebFetch::new(WebFetchConfig { resolver: resolver.clone(), ..WebFetchConfig::default() })).unwrap();
        let args = json!({"url": format!("http://bench.test:{page_port}/"), "max_bytes": 262144}).to_string();
        let mut fetch_ms = Vec::new();
        for i in 0..runs + 1 {
            let prepared = tool.prepare(&args).unwrap();
            let ctx = ToolContext::new(workspace.clone(), "bench".into(), format!("c{i}"));
            let started = Instant::now();
            let out = tool.run(prepared, ctx).await.unwrap();
            assert!(out.text.contains("truncated: true"));
            if i > 0 {
                fetch_ms.push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
        report(json, "web_fetch.ms", &mut fetch_ms);

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let config = ProxyConfig { rules: DomainRules::new(["bench.test".to_owned()], []), resolver, ..ProxyConfig::default() };
        let proxy = SessionProxy::start(listener, config).unwrap();
        let direct = "GET / HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n";
        let proxied = format!("GET http://bench.test:{small_port}/ HTTP/1.1\r\nHost: bench.test\r\n\r\n");
        let mut overhead = Vec::new();
        for i in 0..runs * 5 + 1 {
            let started = Instant::now();
            get(small_port, direct).await;
            let plain = started.elapsed().as_secs_f64() * 1000.0;
            let started = Instant::now();
            get(proxy.port(), &proxied).await;
            let through = started.elapsed().as_secs_f64() * 1000.0;
            if i > 0 {
                overhead.push(through - plain);
            }
        }
        report(json, "proxy.overhead_ms", &mut overhead);
    });
    println!(
        "page: 1 MiB of HTML on a pinned loopback name; proxy: a 9-byte page, absolute-form HTTP"
    );
}
