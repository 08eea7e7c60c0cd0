//! list_dir: tree, markers, depth, paging, and counted (never silent) omissions.

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

fn tree(fx: &Fixture) {
    fx.put(".gitignore", "target/\n*.log\n");
    fx.put("Cargo.toml", "");
    fx.put("src/main.rs", "");
    fx.put("src/bin/tool.rs", "");
    fx.put("src/bin/deep/x.rs", "");
    fx.put("target/debug/a", "");
    fx.put("target/debug/b", "");
    fx.put("build.log", "");
    fx.put(".env", "");
    std::os::unix::fs::symlink("src/main.rs", fx.root().join("main-link")).unwrap();
    std::os::unix::fs::symlink("/etc", fx.root().join("etc-link")).unwrap();
}

#[tokio::test]
async fn tree_with_markers_and_counted_omissions() {
    let fx = Fixture::new();
    tree(&fx);
    assert_snapshot!(fx.call("list_dir", json!({})).await, @r"
    ./
    src/
      bin/ (2 entries)
      main.rs
    target/ (ignored, 3 entries)
    Cargo.toml
    etc-link@ → /etc (outside workspace)
    main-link@ → src/main.rs
    Not shown: 2 hidden, 1 ignored file; 1 ignored directory shown collapsed. Set include_hidden=true / include_ignored=true to list them.
    ");
}

#[tokio::test]
async fn include_flags_and_depth() {
    let fx = Fixture::new();
    tree(&fx);
    assert_snapshot!(fx.call("list_dir", json!({"path": "src", "depth": 3})).await, @r"
    src/
    bin/
      deep/
        x.rs
      tool.rs
    main.rs
    ");
    let all = fx
        .call("list_dir", json!({"depth": 1, "include_hidden": true, "include_ignored": true}))
        .await;
    assert_snapshot!(all, @r"
    ./
    src/ (2 entries)
    target/ (1 entry)
    .env
    .gitignore
    Cargo.toml
    build.log
    etc-link@ → /etc (outside workspace)
    main-link@ → src/main.rs
    ");
}

#[tokio::test]
async fn paging_says_where_to_continue() {
    let fx = Fixture::new();
    for n in 0..30 {
        fx.put(&format!("f{n:02}.txt"), "");
    }
    let out = fx.call("list_dir", json!({"limit": 5, "offset": 10})).await;
    assert_snapshot!(out, @r"
    ./
    f10.txt
    f11.txt
    f12.txt
    f13.txt
    f14.txt
    Showing entries 11–15 of 30 (offset=15 for more).
    ");
}

#[tokio::test]
async fn refusals() {
    let fx = Fixture::new();
    fx.put("a.txt", "");
    assert_snapshot!(fx.call("list_dir", json!({"path": "a.txt"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"a.txt is a file, not a directory; use read_file to read it"}"#);
    assert_snapshot!(fx.call("list_dir", json!({"path": "nope"})).await, @r#"{"ok":false,"error":"not_found","message":"no such file or directory: nope. Use list_dir or glob to find the right path."}"#);
    assert!(fx.call("list_dir", json!({"path": ".."})).await.contains("outside_workspace"));
}
