//! The code sandbox against real engines: QuickJS in process, python3 under the process sandbox.
//! A check that cannot run here (no python3, no Landlock) prints `SKIPPED: <reason>` and returns.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use agent_core::CancellationToken;
use agent_sandbox::sandbox::{SandboxPolicy, probe};
use agent_test_support::skipped;
use agent_tools::execute_code::{self as code, CodeErrorKind, CodeLimits, CodeResult, Language};
use serde_json::json;

async fn js(code: &str) -> CodeResult {
    code::run(Language::JavaScript, code, &CodeLimits::default(), CancellationToken::new()).await
}

async fn with_timeout(language: Language, code: &str, timeout: Duration) -> CodeResult {
    let limits = CodeLimits { timeout, ..CodeLimits::default() };
    code::run(language, code, &limits, CancellationToken::new()).await
}

#[track_caller]
fn assert_error(result: &CodeResult, kind: CodeErrorKind) {
    let error =
        result.error.as_ref().unwrap_or_else(|| panic!("expected {kind}, got success: {result:?}"));
    assert_eq!(error.kind, kind, "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_returns_values_and_console_output() {
    let result =
        js("console.log('hi', {a: 1}, [2], null); console.error(new TypeError('careful')); \
                     const xs = [1, 2, 3]; xs.map(x => x * 2)")
        .await;
    assert_eq!(result.error, None);
    assert_eq!(result.stdout, "hi {\"a\":1} [2] null\n");
    assert_eq!(result.stderr, "TypeError: careful\n");
    assert_eq!(result.value, Some(json!([2, 4, 6])));

    assert_eq!(
        js("({a: 'x', b: [true, 1.5]})").await.value,
        Some(json!({"a": "x", "b": [true, 1.5]}))
    );
    assert_eq!(js("let u; u").await.value, None);
    assert_eq!(js("10n ** 20n").await.value, Some(json!("100000000000000000000")));
    assert_eq!(js("(async () => 6 * 7)()").await.value, Some(json!(42)));
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_while_true_stops_at_the_deadline() {
    let result =
        with_timeout(Language::JavaScript, "while (true) {}", Duration::from_millis(300)).await;
    assert_error(&result, CodeErrorKind::Timeout);
    assert!(result.duration < Duration::from_secs(2), "took {:?}", result.duration);
    // try/catch cannot swallow the interrupt.
    let result = with_timeout(
        Language::JavaScript,
        "for (;;) { try { while (true) {} } catch (e) {} }",
        Duration::from_millis(300),
    )
    .await;
    assert_error(&result, CodeErrorKind::Timeout);
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_memory_limit_is_an_error_not_a_crash() {
    assert_error(
        &js("new Uint8Array(1024 * 1024 * 1024).length").await,
        CodeErrorKind::MemoryLimit,
    );
    let result =
        js("const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random()));").await;
    assert_error(&result, CodeErrorKind::MemoryLimit);
    // The host is fine and the next run starts fresh.
    assert_eq!(js("1 + 1").await.value, Some(json!(2)));
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_has_no_require_fetch_modules_or_state() {
    let result = js("[typeof require, typeof fetch, typeof std, typeof os, typeof process, typeof XMLHttpRequest]").await;
    assert_eq!(result.value, Some(json!(vec!["undefined"; 6])));
    let result = js("import('os')").await;
    assert_error(&result, CodeErrorKind::Exception);
    assert!(result.error.unwrap().message.contains("os"));
    assert_error(&js("require('fs')").await, CodeErrorKind::Exception);
    assert_error(&js("fetch('http://127.0.0.1/')").await, CodeErrorKind::Exception);
    assert_eq!(js("globalThis.leak = 1").await.value, Some(json!(1)));
    assert_eq!(js("typeof leak").await.value, Some(json!("undefined")));
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_errors_have_kinds() {
    let result = js("function f() { throw new RangeError('too far'); }\nf()").await;
    assert_error(&result, CodeErrorKind::Exception);
    assert!(result.error.unwrap().message.starts_with("RangeError: too far"));
    assert_error(&js("let = ;").await, CodeErrorKind::Syntax);
    assert_error(&js("throw 'plain'").await, CodeErrorKind::Exception);
    assert_error(&js("function r() { return r(); } r()").await, CodeErrorKind::Exception);

    // A call cancelled before it runs ends as cancelled, not at the five-second deadline. QuickJS
    // has no channel out while it runs, so cancelling a running snippet is checked with Python
    // (`python_cancelled_while_running_leaves_no_process`); a running JavaScript loop is stopped
    // by the same interrupt handler at its deadline (`javascript_while_true_stops_at_the_deadline`).
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result =
        code::run(Language::JavaScript, "while (true) {}", &CodeLimits::default(), cancel).await;
    assert_error(&result, CodeErrorKind::Cancelled);
    assert!(result.duration < Duration::from_secs(2), "took {:?}", result.duration);
}

#[tokio::test(flavor = "multi_thread")]
async fn deep_nesting_is_an_error_or_a_value_never_a_crash() {
    let parens = format!("{}1{}", "(".repeat(50_000), ")".repeat(50_000));
    let bangs = format!("{}0", "!".repeat(100_000));
    let mut got = Vec::new();
    for code in [&parens, &bangs] {
        // QuickJS checks its own stack while parsing; the host thread survives either way.
        for language in [Language::JavaScript, Language::TypeScript] {
            let result =
                code::run(language, code, &CodeLimits::default(), CancellationToken::new()).await;
            got.push(match (&result.value, &result.error) {
                (_, Some(error)) => format!("{}: {}", error.kind, error.message),
                (Some(value), None) => format!("value {value}"),
                (None, None) => "nothing".to_owned(),
            });
        }
    }
    let overflow = "exception: RangeError: Maximum call stack size exceeded";
    // The TypeScript step prints `1` without the parentheses, so only QuickJS's own parser
    // meets the depth; either way the answer is a typed error or the right value.
    assert_eq!(got, [overflow, "value 1", overflow, overflow]);
    // A value nested deeper than JSON tools handle comes back as an error or nothing.
    let result = js("let o = {}; for (let i = 0; i < 100000; i++) o = { o }; o").await;
    assert_eq!(result.value, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_with_interfaces_and_generics_runs() {
    let code = r#"
        interface Box<T> { value: T; label?: string }
        type Pair<A, B> = [A, B];
        enum Color { Red = 1, Green }
        class Stack<T> {
            private items: T[] = [];
            constructor(private readonly name: string) {}
            push(item: T): this { this.items.push(item); return this; }
            get size(): number { return this.items.length; }
        }
        function wrap<T extends object>(value: T): Box<T> { return { value }; }
        const pair: Pair<string, number> = ['a', 1];
        const s = new Stack<number>('s').push(1).push(2);
        console.log(s.size);
        ({ boxed: wrap({ n: 1 }).value, pair, green: Color.Green, size: s.size as number })
    "#;
    let result =
        code::run(Language::TypeScript, code, &CodeLimits::default(), CancellationToken::new())
            .await;
    assert_eq!(result.error, None, "{result:?}");
    assert_eq!(result.stdout, "2\n");
    assert_eq!(
        result.value,
        Some(json!({"boxed": {"n": 1}, "pair": ["a", 1], "green": 2, "size": 2}))
    );

    let result = code::run(
        Language::TypeScript,
        "let x: = 1",
        &CodeLimits::default(),
        CancellationToken::new(),
    )
    .await;
    assert_error(&result, CodeErrorKind::Syntax);
}

/// Python needs python3 and an enforceable sandbox.
fn skip_python() -> bool {
    if let Some(err) = probe().support(SandboxPolicy::WorkspaceWrite).missing {
        skipped(&err.to_string());
        return true;
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("python3").exists()));
    if !on_path {
        skipped("python3 is not installed");
    }
    !on_path
}

async fn py(code: &str) -> CodeResult {
    code::run(Language::Python, code, &CodeLimits::default(), CancellationToken::new()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn python_runs_and_returns_output_and_value() {
    if skip_python() {
        return;
    }
    let result = py("import json, math\nprint('hi')\nopen('scratch.txt', 'w').write('ok')\n{'root': math.sqrt(16), 'read': open('scratch.txt').read()}").await;
    assert_eq!(result.error, None, "{result:?}");
    assert_eq!(result.stdout, "hi\n");
    assert_eq!(result.value, Some(json!({"root": 4.0, "read": "ok"})));

    let result = py("def f():\n    raise ValueError('bad input')\nf()").await;
    assert_error(&result, CodeErrorKind::Exception);
    assert_eq!(result.error.unwrap().message, "ValueError: bad input");
    assert!(result.stderr.contains("line 2, in f"), "{}", result.stderr);
    assert_error(&py("def (:").await, CodeErrorKind::Syntax);

    // Larger than one command-line argument may be (128 KiB).
    let big = format!("{}x", "x = 1\n".repeat(30_000));
    assert_eq!(py(&big).await.value, Some(json!(1)));
}

#[tokio::test(flavor = "multi_thread")]
async fn python_cannot_write_connect_or_spawn() {
    if skip_python() {
        return;
    }
    let before = std::fs::read("/etc/passwd").unwrap();
    let result = py("open('/etc/passwd', 'a').write('breach:x:0:0::/:/bin/sh\\n')").await;
    assert_error(&result, CodeErrorKind::Exception);
    assert!(result.error.unwrap().message.starts_with("PermissionError"));
    assert_eq!(
        std::fs::read("/etc/passwd").unwrap(),
        before,
        "sandbox BREACH: /etc/passwd changed"
    );

    let result =
        py("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)\nprint('SOCKET')")
            .await;
    assert_error(&result, CodeErrorKind::Exception);
    assert!(!result.stdout.contains("SOCKET"));

    let result = py("import subprocess\nsubprocess.run(['ls'])\nprint('SPAWNED')").await;
    assert_error(&result, CodeErrorKind::Exception);
    assert!(result.error.as_ref().unwrap().message.starts_with("PermissionError"), "{result:?}");
    let result = py("import os\nos.execv('/bin/sh', ['sh', '-c', 'echo SPAWNED'])").await;
    assert!(!result.stdout.contains("SPAWNED"), "sandbox BREACH: exec succeeded");
    assert_error(&result, CodeErrorKind::Exception);
    assert!(result.error.as_ref().unwrap().message.starts_with("PermissionError"), "{result:?}");

    // Files outside the interpreter's own are not even readable.
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "secret").unwrap();
    let result = py(&format!("open({:?}).read()", secret.path())).await;
    assert_error(&result, CodeErrorKind::Exception);
    assert_eq!(result.value, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn python_stops_at_the_deadline() {
    if skip_python() {
        return;
    }
    let result =
        with_timeout(Language::Python, "while True:\n    pass", Duration::from_secs(1)).await;
    assert_error(&result, CodeErrorKind::Timeout);
    assert!(result.duration < Duration::from_secs(3), "took {:?}", result.duration);
}

/// The file `name` in the fresh directory of a running Python snippet (`$TMPDIR/agent-python-*`),
/// once one exists.
fn python_marker(name: &str) -> Option<PathBuf> {
    let dirs = std::fs::read_dir(std::env::temp_dir()).ok()?;
    dirs.flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("agent-python-"))
        .map(|entry| entry.path().join(name))
        .find(|path| path.exists())
}

fn alive(pid: u32) -> bool {
    // A zombie has exited: only a process that can still run counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

#[tokio::test(flavor = "multi_thread")]
async fn python_cancelled_while_running_leaves_no_process() {
    if skip_python() {
        return;
    }
    // The snippet writes its pid into a marker only it could have written, then spins: the cancel
    // comes once the marker is there, so the process is known to be running when it is killed.
    let marker = format!("started-{}-{:?}", std::process::id(), Instant::now());
    let marker = marker.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "");
    let source = format!(
        "import os\nwith open({marker:?}, 'w') as f:\n    f.write(str(os.getpid()))\nwhile True:\n    pass"
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { code::run(Language::Python, &source, &CodeLimits::default(), cancel).await }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        let pid = python_marker(&marker)
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| text.trim().parse::<u32>().ok());
        if let Some(pid) = pid {
            break pid;
        }
        assert!(Instant::now() < deadline, "the snippet never wrote its marker");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(alive(pid), "python {pid} is not running before the cancel");
    cancel.cancel();
    let result = run.await.unwrap();
    assert_error(&result, CodeErrorKind::Cancelled);
    assert!(!alive(pid), "python {pid} outlived the cancelled call");
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sees_no_secret() {
    if skip_python() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let put = |root: &Path, rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    };
    let secrets = ["API_TOKEN=tok-4f1c9e", "ssh-key-b2d7a0"];
    let paths =
        [put(ws.path(), ".env", secrets[0]), put(home.path(), ".ssh/id_ed25519", secrets[1])];
    for path in paths {
        let source = format!("print(open({:?}).read())", path.display().to_string());
        let result = py(&source).await;
        let text = format!("{}{}{:?}", result.stdout, result.stderr, result.error);
        assert!(
            secrets.iter().all(|s| !text.contains(s)),
            "BREACH: python read {}: {text}",
            path.display()
        );
    }
}
