//! The session proxy of allow-list mode, from inside the session's network namespace, with the
//! real clients: curl, Python's urllib, Node's fetch, `pip download`, `npm view` and `git clone`
//! reach an allowed name (pinned to a loopback server of the host), a denied name gets 403 and
//! its server sees no connection, and the host's loopback is out of reach directly. Every name
//! is pinned: no test asks the machine's resolver.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use agent_sandbox::{
    network::{DomainRules, NetLog, ProxyConfig, Resolver, SessionProxy, Via},
    process::{self, ProcessOutput, ProcessSpec},
    sandbox::{NetNamespace, SandboxConfig, SandboxPolicy, probe},
};
use agent_test_support::skipped;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};
use tokio_util::sync::CancellationToken;

/// A static file server on the host's loopback that counts the connections it accepts.
/// `/x/` serves `x/index.html`; a missing `/x` serves `x.json` (an npm packument).
async fn files(root: PathBuf) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepts = Arc::new(AtomicUsize::new(0));
    let count = accepts.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let root = root.clone();
            tokio::spawn(async move {
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => raw.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&raw).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("/");
                let path = target.split('?').next().unwrap_or("/").trim_start_matches('/');
                let mut file = root.join(path);
                if path.is_empty() || path.ends_with('/') {
                    file = file.join("index.html");
                }
                if !file.is_file() {
                    file = root.join(format!("{path}.json"));
                }
                let (status, kind, body) = match std::fs::read(&file) {
                    Ok(body) => {
                        let kind = match file.extension().and_then(|e| e.to_str()) {
                            Some("json") => "application/json",
                            Some("html") => "text/html",
                            _ => "application/octet-stream",
                        };
                        ("200 OK", kind, body)
                    }
                    Err(_) => ("404 Not Found", "text/plain", b"missing".to_vec()),
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (port, accepts)
}

#[allow(clippy::disallowed_methods, reason = "test fixtures: a git repository and a wheel")]
fn setup(dir: &Path, port: u16) {
    std::fs::write(dir.join("index.html"), "<p>hello from the allowed server</p>").unwrap();
    let git = |args: &[&str], cwd: &Path| {
        let out = std::process::Command::new("git").args(args).current_dir(cwd).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&["init", "-q", "-b", "main"], &work);
    std::fs::write(work.join("README"), "cloned through the proxy\n").unwrap();
    git(&["add", "README"], &work);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], &work);
    git(&["clone", "-q", "--bare", "work", "repo.git"], dir);
    git(&["update-server-info"], &dir.join("repo.git"));
    // A wheel: pip download reads its metadata.
    let wheel = dir.join("files/demo_pkg-1.0-py3-none-any.whl");
    std::fs::create_dir_all(wheel.parent().unwrap()).unwrap();
    let script = format!(
        "import zipfile\nz=zipfile.ZipFile({:?},'w')\nz.writestr('demo_pkg/__init__.py','')\nz.writestr('demo_pkg-1.0.dist-info/METADATA','Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n')\nz.writestr('demo_pkg-1.0.dist-info/WHEEL','Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\nz.writestr('demo_pkg-1.0.dist-info/RECORD','')\nz.close()\n",
        wheel.display().to_string()
    );
    let out = std::process::Command::new("python3").arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::create_dir_all(dir.join("simple/demo-pkg")).unwrap();
    std::fs::write(
        dir.join("simple/demo-pkg/index.html"),
        "<a href=\"/files/demo_pkg-1.0-py3-none-any.whl\">demo_pkg-1.0-py3-none-any.whl</a>",
    )
    .unwrap();
    let tarball = format!("http://allowed.test:{port}/files/demo-pkg-1.0.0.tgz");
    std::fs::write(
        dir.join("demo-pkg.json"),
        serde_json::json!({
            "name": "demo-pkg",
            "dist-tags": {"latest": "1.0.0"},
            "versions": {"1.0.0": {"name": "demo-pkg", "version": "1.0.0", "description": "served locally",
                "dist": {"tarball": tarball, "shasum": "0000000000000000000000000000000000000000"}}},
        })
        .to_string(),
    )
    .unwrap();
}

async fn sh(config: &SandboxConfig, script: &str) -> ProcessOutput {
    let env = vec![
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        ("HOME".to_owned(), std::env::var("HOME").unwrap_or_default()),
    ];
    let spec = ProcessSpec::bash(script).base_env(env);
    process::run(spec, config, CancellationToken::new(), Some(Duration::from_secs(60)))
        .await
        .expect("spawn")
}

#[tokio::test(flavor = "multi_thread")]
async fn allow_list_mode_lets_every_runtime_reach_allowed_names_only() {
    if let Some(err) = probe().support(SandboxPolicy::WorkspaceWrite).missing {
        skipped(&err.to_string());
        return;
    }
    let namespace = match NetNamespace::create() {
        Ok(ns) => ns,
        Err(err) => {
            skipped(&format!("no private network namespace: {err}"));
            return;
        }
    };
    let served = tempfile::tempdir().unwrap();
    let (allowed_port, _) = files(served.path().to_owned()).await;
    setup(served.path(), allowed_port);
    let (denied_port, denied_accepts) = files(served.path().to_owned()).await;
    let workspace = tempfile::tempdir().unwrap();
    let resolver =
        Resolver::new([("allowed.test", "127.0.0.1"), ("denied.test", "127.0.0.1")]).unwrap();
    let log = NetLog::to_file(Some(workspace.path().join("net-log.jsonl")));
    let preload = workspace.path().join("node-preload.cjs");
    let config = ProxyConfig {
        rules: DomainRules::new(["allowed.test".to_owned()], []),
        resolver,
        log: log.clone(),
        node_preload: Some(preload),
    };
    let proxy = SessionProxy::start_in(&namespace, config).unwrap();
    let mut sandbox = SandboxConfig::new(workspace.path())
        .with_policy(SandboxPolicy::WorkspaceWrite)
        .with_loopback(Some(namespace));
    sandbox.proxy_env = proxy.env();

    let (a, d) = (allowed_port, denied_port);
    let cases: Vec<(&str, String, &str)> = vec![
        ("curl", format!("curl -sS http://allowed.test:{a}/"), "hello from the allowed server"),
        (
            "curl denied",
            format!("curl -sS -w ' %{{http_code}}' http://denied.test:{d}/"),
            "not on the network allow-list",
        ),
        (
            "python",
            format!(
                "python3 -c \"import urllib.request as u; print(u.urlopen('http://allowed.test:{a}/').read().decode())\""
            ),
            "hello from the allowed server",
        ),
        (
            "python denied",
            format!(
                "python3 -c \"import urllib.request as u\ntry: u.urlopen('http://denied.test:{d}/')\nexcept Exception as e: print(e.code, e.read().decode())\""
            ),
            "403 agent network proxy: refused",
        ),
        (
            "node",
            format!(
                "node -e \"fetch('http://allowed.test:{a}/').then(r => r.text()).then(console.log)\""
            ),
            "hello from the allowed server",
        ),
        (
            "node denied",
            format!(
                "node -e \"fetch('http://denied.test:{d}/').catch(e => console.log('refused', e.cause.message))\""
            ),
            "refused agent network proxy: refused",
        ),
        (
            "pip",
            format!(
                "pip download --no-cache-dir --no-deps --disable-pip-version-check -q -d dl --index-url http://allowed.test:{a}/simple --trusted-host allowed.test demo-pkg && ls dl"
            ),
            "demo_pkg-1.0-py3-none-any.whl",
        ),
        (
            "npm",
            format!(
                "npm_config_cache=$TMPDIR/npm npm view demo-pkg description --registry http://allowed.test:{a}/"
            ),
            "served locally",
        ),
        (
            "git",
            format!("git clone -q http://allowed.test:{a}/repo.git clone && cat clone/README"),
            "cloned through the proxy",
        ),
        (
            "git denied",
            format!("git clone -q http://denied.test:{d}/repo.git denied 2>&1; echo done"),
            "403",
        ),
        (
            "direct",
            format!(
                "curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{a}/ 2>&1; echo \" exit=$?\""
            ),
            "exit=7",
        ),
    ];
    let mut failures = Vec::new();
    for (name, script, expect) in &cases {
        let out = sh(&sandbox, script).await;
        if !out.output.contains(expect) {
            failures.push(format!("{name}: expected {expect:?} in {:?}", out.output));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(denied_accepts.load(Ordering::SeqCst), 0, "the denied server saw a connection");
    let entries = log.entries();
    assert!(entries.iter().any(|e| e.allowed && e.host == "allowed.test" && e.via == Via::Connect));
    assert!(entries.iter().any(|e| e.allowed && e.host == "allowed.test" && e.via == Via::Http));
    assert!(entries.iter().any(|e| !e.allowed && e.host == "denied.test"));
    let on_disk = NetLog::read_file(&workspace.path().join("net-log.jsonl")).unwrap();
    assert_eq!(on_disk.len(), entries.len());
    let _ = HashMap::<(), ()>::new();
}

#[tokio::test(flavor = "multi_thread")]
async fn socks5_resolves_remotely_and_tls_names_must_match() {
    let (port, _) = files(tempfile::tempdir().unwrap().keep()).await;
    let (denied_port, denied_accepts) = files(tempfile::tempdir().unwrap().keep()).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = ProxyConfig {
        rules: DomainRules::new(["ok.test".to_owned()], ["bad.test".to_owned()]),
        resolver: Resolver::new([
            ("ok.test", "127.0.0.1"),
            ("bad.test", "127.0.0.1"),
            ("inside.test", "127.0.0.1"),
        ])
        .unwrap(),
        ..ProxyConfig::default()
    };
    let proxy = SessionProxy::start(listener, config).unwrap();
    let p = proxy.port();
    // SOCKS5 with the name sent to the proxy (socks5h).
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut reply = [0u8; 2];
    s.read_exact(&mut reply).await.unwrap();
    let name = b"bad.test";
    let mut request = vec![5, 1, 0, 3, name.len() as u8];
    request.extend_from_slice(name);
    request.extend_from_slice(&denied_port.to_be_bytes());
    s.write_all(&request).await.unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[1], 2, "not allowed by ruleset");
    assert_eq!(denied_accepts.load(Ordering::SeqCst), 0);
    // CONNECT to an allowed name carrying a TLS ClientHello for another name is cut.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    s.write_all(format!("CONNECT ok.test:{port} HTTP/1.1\r\nHost: ok.test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.unwrap());
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    s.write_all(&client_hello("evil.test")).await.unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest).await;
    assert!(
        proxy.log().entries().iter().any(|e| e.reason.contains("TLS server name `evil.test`")),
        "{:?}",
        proxy.log().entries()
    );
    // A name on no list is refused with the rule that would allow it; allowing it on the spot works.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", p)).await.unwrap();
    s.write_all(b"GET http://inside.test/ HTTP/1.1\r\nHost: inside.test\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 403") && answer.contains("allow = [\"inside.test\"]"),
        "{answer}"
    );
    proxy.allow("inside.test");
    assert!(proxy.rules().allowed().contains(&"inside.test".to_owned()));
}

/// A minimal TLS 1.2 ClientHello naming `host`.
fn client_hello(host: &str) -> Vec<u8> {
    let name = host.as_bytes();
    let mut sni = vec![0u8];
    sni.extend_from_slice(&(name.len() as u16).to_be_bytes());
    sni.extend_from_slice(name);
    let mut list = (sni.len() as u16).to_be_bytes().to_vec();
    list.extend_from_slice(&sni);
    let mut ext = vec![0, 0];
    ext.extend_from_slice(&(list.len() as u16).to_be_bytes());
    ext.extend_from_slice(&list);
    let mut hello = vec![3, 3];
    hello.extend_from_slice(&[0u8; 32]);
    hello.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
    hello.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    hello.extend_from_slice(&ext);
    let mut handshake = vec![1, 0];
    handshake.extend_from_slice(&(hello.len() as u16).to_be_bytes());
    handshake.extend_from_slice(&hello);
    let mut record = vec![0x16, 3, 1];
    record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}
