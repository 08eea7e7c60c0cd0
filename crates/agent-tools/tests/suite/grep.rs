//! grep: output modes, filters, paging, and the explanations of empty results and bad patterns.

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

fn project(fx: &Fixture) {
    fx.put(".gitignore", "*.log\nvendor/\n");
    fx.put("src/a.rs", "fn alpha() {}\n// TODO: one\nfn beta() {}\n");
    fx.put("src/b.py", "def gamma():\n    pass  # TODO two\n");
    fx.put("notes.md", "nothing here\n");
    fx.put("app.log", "TODO in a log\n");
    fx.put("vendor/lib.rs", "// TODO vendored\n");
    fx.put(".env", "TODO=secret\n");
    fx.put("img.bin", b"TODO\0\x01\x02");
    // Fixed modification times so "newest first" is deterministic.
    let set = |rel: &str, secs: u64| {
        let file = std::fs::File::options().write(true).open(fx.root().join(rel)).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    };
    set("src/a.rs", 2_000_000);
    set("src/b.py", 1_000_000);
}

#[tokio::test]
async fn files_with_matches_newest_first() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("grep", json!({"pattern": "TODO"})).await, @r"
    2 files match (newest first; showing files 1–2 of 2):
    src/a.rs
    src/b.py
    ");
}

#[tokio::test]
async fn content_with_context_and_count() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("grep", json!({"pattern": "todo", "case_insensitive": true, "output_mode": "content", "context": 1})).await, @r"
    2 matching lines in 2 files (newest first; showing lines 1–6 of 6):
    src/a.rs-1-fn alpha() {}
    src/a.rs:2:// TODO: one
    src/a.rs-3-fn beta() {}
    --
    src/b.py-1-def gamma():
    src/b.py:2:    pass  # TODO two
    ");
    assert_snapshot!(fx.call("grep", json!({"pattern": "fn \\w+", "output_mode": "count"})).await, @r"
    2 matching lines in 1 file (newest first; showing files 1–1 of 1):
    src/a.rs:2
    ");
}

#[tokio::test]
async fn filters_and_paging() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("grep", json!({"pattern": "TODO", "type": "py"})).await, @r"
    1 file matches (newest first; showing files 1–1 of 1):
    src/b.py
    ");
    assert_snapshot!(fx.call("grep", json!({"pattern": "TODO", "glob": "*.rs"})).await, @r"
    1 file matches (newest first; showing files 1–1 of 1):
    src/a.rs
    ");
    assert_snapshot!(fx.call("grep", json!({"pattern": "TODO", "head_limit": 1})).await, @r"
    2 files match (newest first; showing files 1–1 of 2; offset=1 for more):
    src/a.rs
    ");
    let all = fx
        .call("grep", json!({"pattern": "TODO", "include_ignored": true, "include_hidden": true}))
        .await;
    for path in ["app.log", "vendor/lib.rs", "src/a.rs"] {
        assert!(all.lines().any(|line| line == path), "{path} missing from {all}");
    }
    // `.env` is a secret file: named in the note, never searched.
    assert!(!all.lines().any(|line| line == ".env"), "{all}");
    assert!(
        all.ends_with(
            "Note: skipped 1 secret file (.env); an allow rule `Read(./.env)` includes it."
        ),
        "{all}"
    );
    assert!(!all.contains("img.bin"), "binary files are skipped: {all}");
}

#[tokio::test]
async fn zero_matches_explain_what_was_skipped() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("grep", json!({"pattern": "vendored"})).await, @r#"No matches for "vendored" in 4 files searched. Skipped files: 2 ignored by .gitignore/.ignore, 2 hidden, 1 binary. Set include_ignored=true and include_hidden=true to search them."#);
}

#[tokio::test]
async fn invalid_regex_suggests_fixed_strings() {
    let fx = Fixture::new();
    project(&fx);
    let out = fx.call("grep", json!({"pattern": "foo(bar"})).await;
    assert!(out.contains(r#""error":"invalid_arguments""#), "{out}");
    assert!(out.contains("set fixed_strings=true"), "{out}");
    assert_snapshot!(fx.call("grep", json!({"pattern": "fn alpha(", "fixed_strings": true})).await, @r"
    1 file matches (newest first; showing files 1–1 of 1):
    src/a.rs
    ");
    assert_snapshot!(fx.call("grep", json!({"pattern": "x", "type": "nolang"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"unknown file type \"nolang\"; use for example rust, py, js, ts, go, java, c, cpp, md, json, toml, yaml, or use glob instead"}"#);
}

#[tokio::test]
async fn multiline_matches_span_lines() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("grep", json!({"pattern": "alpha.*\\n.*TODO", "multiline": true, "output_mode": "content"})).await, @r"
    2 matching lines in 1 file (newest first; showing lines 1–2 of 2):
    src/a.rs:1:fn alpha() {}
    src/a.rs:2:// TODO: one
    ");
}

#[tokio::test]
async fn a_single_file_path_is_searched_even_if_ignored() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("grep", json!({"pattern": "TODO", "path": "app.log", "output_mode": "content"})).await, @r"
    1 matching line in 1 file (newest first; showing lines 1–1 of 1):
    app.log:1:TODO in a log
    ");
}
