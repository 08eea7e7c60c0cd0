//! `Read(…)` deny rules inside walks: `grep`, `glob` and `list_dir` over a directory that holds a
//! denied subtree reveal no byte of the denied files and do not list them. The check is the
//! effect: the denied text and names are absent from what the model would read.

use std::sync::Arc;

use agent_exec::{PermissionMode, PolicyBuilder, RuleAction, Workspace};
use serde_json::json;

use super::Fixture;

/// The lines of the two files, both found by the pattern `7f3a`.
const SRC: &str = "7f3a-src-body";
const KEY: &str = "7f3a-key-body";

/// A workspace with `src/` and `secrets/` each holding a file with a line `7f3a…`, and an open
/// `docs/` file, whose boundary leaves out what `deny` forbids reading.
fn fixture(deny: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut builder =
        PolicyBuilder::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Bypass);
    builder.rule(RuleAction::Deny, deny, "test").unwrap();
    let mut fx = Fixture::with_config_in(Default::default(), dir);
    fx.boundary = Some(Arc::new(builder.build().workspace().clone()));
    fx.put("src/deep/hidden_name.rs", format!("// {SRC}\nfn main() {{}}\n"));
    fx.put("secrets/hidden_key.txt", format!("{KEY}\n"));
    fx.put("docs/open.md", "nothing here\n");
    fx
}

/// The denied file's line and name, for each deny rule the tests use.
fn denied_file(deny: &str) -> (&'static str, &'static str) {
    if deny.contains("src") { (SRC, "hidden_name") } else { (KEY, "hidden_key") }
}

#[track_caller]
fn assert_reveals_nothing(out: &str, deny: &str, what: &str) {
    let (line, name) = denied_file(deny);
    assert!(!out.contains(line) && !out.contains(name), "{what}: {out}");
    // `fn main` is the src file's second line, shown as context if that file were searched.
    assert!(line != SRC || !out.contains("fn main"), "{what}: {out}");
}

#[tokio::test]
async fn grep_leaves_denied_files_out_of_every_walk() {
    for (deny, denied_dir) in [("Read(src/**)", "src"), ("Read(./secrets/**)", "secrets")] {
        let fx = fixture(deny);
        for path in [".", denied_dir, &format!("./{denied_dir}/")] {
            for mode in ["files_with_matches", "content", "count"] {
                for glob in [None, Some("*.rs"), Some("**/*")] {
                    let mut args = json!({"pattern": "7f3a", "path": path, "output_mode": mode,
                        "context": 3, "include_hidden": true, "include_ignored": true});
                    if let Some(glob) = glob {
                        args["glob"] = json!(glob);
                    }
                    let out = fx.call("grep", args).await;
                    let what = format!("{deny} path={path} mode={mode} glob={glob:?}");
                    assert_reveals_nothing(&out, deny, &what);
                    if path != "." {
                        assert!(out.contains("No matches"), "{what}: {out}");
                    }
                    assert!(
                        out.contains(&format!(
                            "Note: left out files matched by the deny rule `{deny}`."
                        )),
                        "{what}: {out}"
                    );
                }
            }
        }
        // The other folder's file is still found: only the denied subtree is left out.
        let out = fx.call("grep", json!({"pattern": "7f3a", "output_mode": "count"})).await;
        let open = if denied_dir == "src" {
            "secrets/hidden_key.txt:1"
        } else {
            "src/deep/hidden_name.rs:1"
        };
        assert!(out.contains(open), "{deny}: {out}");
    }
}

#[tokio::test]
async fn glob_and_list_dir_do_not_name_denied_files() {
    let fx = fixture("Read(src/**)");
    for path in [".", "src", "src/deep"] {
        let out = fx.call("glob", json!({"pattern": "**/*", "path": path})).await;
        assert!(!out.contains("hidden_name"), "glob {path}: {out}");
        assert!(out.contains("the deny rule `Read(src/**)`"), "glob {path}: {out}");
        let out = fx.call("list_dir", json!({"path": path, "depth": 5})).await;
        let listed: Vec<&str> = out.lines().skip(1).collect();
        assert!(
            !listed.iter().any(|line| line.contains("hidden_name") || line.contains("deep")),
            "list_dir {path}: {out}"
        );
        assert!(out.contains("the deny rule `Read(src/**)`"), "list_dir {path}: {out}");
    }
    let out = fx.call("glob", json!({"pattern": "**/*.md"})).await;
    assert!(out.contains("docs/open.md"), "{out}");
    // A rule naming the folder itself hides the folder too.
    let fx = fixture("Read(./secrets)");
    let out = fx.call("list_dir", json!({"depth": 5})).await;
    assert!(!out.lines().any(|line| line.trim_start().starts_with("secrets")), "{out}");
    assert!(out.contains("hidden_name.rs"), "{out}");
}
