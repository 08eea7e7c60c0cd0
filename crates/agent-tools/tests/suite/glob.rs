//! glob: name and path patterns, newest first, ignore rules with visible skip counts.

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

fn project(fx: &Fixture) {
    fx.put(".gitignore", "target/\n");
    fx.put("Cargo.toml", "");
    fx.put("src/lib.rs", "");
    fx.put("src/deep/mod.rs", "");
    fx.put("target/gen.rs", "");
    let set = |rel: &str, secs: u64| {
        let file = std::fs::File::options().write(true).open(fx.root().join(rel)).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    };
    set("src/lib.rs", 1_000_000);
    set("src/deep/mod.rs", 2_000_000);
}

#[tokio::test]
async fn name_patterns_match_at_any_depth_newest_first() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("glob", json!({"pattern": "*.rs"})).await, @r#"
    2 files match "*.rs" under . (newest first):
    src/deep/mod.rs
    src/lib.rs
    "#);
    assert_snapshot!(fx.call("glob", json!({"pattern": "src/*.rs"})).await, @r#"
    1 file matches "src/*.rs" under . (newest first):
    src/lib.rs
    "#);
    let all = fx.call("glob", json!({"pattern": "**/*.rs", "include_ignored": true})).await;
    assert!(all.contains("target/gen.rs"), "{all}");
}

#[tokio::test]
async fn empty_results_count_what_was_skipped() {
    let fx = Fixture::new();
    project(&fx);
    assert_snapshot!(fx.call("glob", json!({"pattern": "gen.rs"})).await, @r#"No files match "gen.rs" under . (3 files checked). Skipped files: 1 ignored by .gitignore/.ignore, 1 hidden. Set include_ignored=true and include_hidden=true to include them."#);
    let out = fx.call("glob", json!({"pattern": "a[", "path": "src"})).await;
    assert!(out.contains(r#""error":"invalid_arguments""#), "{out}");
}
