//! apply_patch: Codex's scenario suite, the observations the model reads, the preview, and the
//! promise that a failing patch changes nothing.

use std::{collections::BTreeMap, path::Path};

use agent_tools::{ApplyPatch, BuiltinConfig, EditTool};
use insta::assert_snapshot;
use serde_json::{Value, json};

use super::Fixture;

fn fixture() -> Fixture {
    Fixture::with_config(BuiltinConfig {
        edit_tool: EditTool::ApplyPatch,
        ..BuiltinConfig::default()
    })
}

/// Every file (with its bytes) and directory under `root`, by relative path.
pub(crate) fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        match bytes {
            None => std::fs::create_dir_all(to.join(rel)).unwrap(),
            Some(bytes) => {
                std::fs::create_dir_all(to.join(&rel).parent().unwrap()).unwrap();
                std::fs::write(to.join(rel), bytes).unwrap();
            }
        }
    }
}

/// The scenario directories of Codex's suite, in order.
fn scenarios() -> Vec<std::path::PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-apply-patch/scenarios");
    let mut all: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    all.sort();
    all
}

/// The tree a scenario must leave here: Codex's `expected/`, or ours where differences.json says
/// we deliberately differ.
fn expected(scenario: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let differences: Value = serde_json::from_str(
        &std::fs::read_to_string(
            scenario.parent().unwrap().parent().unwrap().join("differences.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let name = scenario.file_name().unwrap().to_str().unwrap();
    match &differences[name]["expected"] {
        Value::Null => tree(&scenario.join("expected")),
        Value::String(input) if input == "input" => tree(&scenario.join("input")),
        Value::Object(files) => files
            .iter()
            .map(|(path, text)| (path.clone(), Some(text.as_str().unwrap().as_bytes().to_vec())))
            .collect(),
        other => panic!("{name}: unknown expectation {other}"),
    }
}

#[tokio::test]
async fn codex_scenarios_leave_the_expected_tree() {
    let all = scenarios();
    assert!(all.len() >= 22, "the suite is there: {all:?}");
    for scenario in all {
        let fx = fixture();
        copy_tree(&scenario.join("input"), fx.root());
        let patch = std::fs::read_to_string(scenario.join("patch.txt")).unwrap();
        fx.call("apply_patch", json!({ "patch": patch })).await;
        assert_eq!(tree(fx.root()), expected(&scenario), "{}", scenario.display());
    }
}

#[tokio::test]
async fn the_observation_lists_every_file_and_loose_matches() {
    let fx = fixture();
    fx.put("src/app.rs", "fn main() {\n    old();  \n}\n");
    fx.put("old/name.txt", "a\nb\n");
    fx.put("gone.txt", "x\ny\n");
    let patch = "*** Begin Patch\n*** Update File: src/app.rs\n@@ fn main() {\n-    old();\n+    new();\n+    more();\n*** Add File: docs/new.md\n+# New\n+\n*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n-b\n+c\n*** Delete File: gone.txt\n*** End Patch\n";
    assert_snapshot!(fx.call("apply_patch", json!({ "patch": patch })).await, @r"
    Applied the patch: 4 file sections.
      updated src/app.rs (+2 −1)
      added docs/new.md (+2)
      moved old/name.txt → new/name.txt (+1 −1)
      deleted gone.txt (−2)
    Note: in src/app.rs, hunk 1 matched after ignoring trailing whitespace.
    ");
    assert_eq!(fx.get_text("src/app.rs"), "fn main() {\n    new();\n    more();\n}\n");
    assert_eq!(fx.get_text("new/name.txt"), "a\nc\n");
    assert!(!fx.root().join("old/name.txt").exists() && !fx.root().join("gone.txt").exists());
}

#[tokio::test]
async fn a_hunk_that_does_not_match_shows_the_closest_text_and_changes_nothing() {
    let fx = fixture();
    fx.put("a.txt", "one\n");
    fx.put("m.rs", "fn main() {\n\tlet a = 1;\n\tlet b = 2;\n}\n");
    let before = tree(fx.root());
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Add File: new.txt\n+x\n*** Update File: m.rs\n@@\n fn main() {\n-\tlet a = 10;\n+\tlet a = 11;\n*** End Patch";
    assert_snapshot!(fx.call("apply_patch", json!({ "patch": patch })).await);
    assert_eq!(tree(fx.root()), before, "no file was changed, none created");
}

#[tokio::test]
async fn rejections_name_the_line_and_change_nothing() {
    let fx = fixture();
    fx.put("a.txt", "one\n");
    let before = tree(fx.root());
    for (patch, expect) in [
        (
            "*** Update File: a.txt\n-one\n+two\n",
            "(line 1): the first line of the patch must be `*** Begin Patch`",
        ),
        (
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Delete File: missing.txt\n*** End Patch",
            "cannot delete missing.txt",
        ),
        ("*** Begin Patch\n*** End Patch", "the patch names no file"),
    ] {
        let out = fx.call("apply_patch", json!({ "patch": patch })).await;
        assert!(out.contains(expect), "{out}");
        assert_eq!(tree(fx.root()), before, "{patch}");
    }
}

#[tokio::test]
async fn encoding_line_endings_and_permissions_are_kept() {
    let fx = fixture();
    let mut utf16 = vec![0xFF, 0xFE];
    "a\r\nb\r\n".encode_utf16().for_each(|unit| utf16.extend_from_slice(&unit.to_le_bytes()));
    fx.put("w.txt", &utf16);
    fx.put("bom.txt", b"\xEF\xBB\xBFx\ny");
    fx.put("run.sh", "#!/bin/sh\necho a\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(fx.root().join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let patch = "*** Begin Patch\n*** Update File: w.txt\n@@\n-b\n+c\n*** Update File: bom.txt\n@@\n-y\n+z\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo a\n+echo b\n*** End Patch";
    let out = fx.call("apply_patch", json!({ "patch": patch })).await;
    assert!(out.starts_with("Applied the patch"), "{out}");
    let mut expect = vec![0xFF, 0xFE];
    "a\r\nc\r\n".encode_utf16().for_each(|unit| expect.extend_from_slice(&unit.to_le_bytes()));
    assert_eq!(fx.get("w.txt"), expect);
    assert_eq!(fx.get("bom.txt"), b"\xEF\xBB\xBFx\nz", "BOM kept, still no final newline");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(fx.root().join("bin/run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "a moved script stays executable");
    }
}

#[tokio::test]
async fn a_move_onto_itself_keeps_the_file() {
    // Codex 0.171 deletes the file here (it writes the destination, then removes the source).
    let fx = fixture();
    fx.put("f.txt", "a\n");
    let patch =
        "*** Begin Patch\n*** Update File: f.txt\n*** Move to: f.txt\n@@\n-a\n+b\n*** End Patch";
    fx.call("apply_patch", json!({ "patch": patch })).await;
    assert_eq!(fx.get_text("f.txt"), "b\n");
}

#[tokio::test]
async fn the_preview_is_what_the_call_writes() {
    let fx = fixture();
    fx.put("a.txt", "one\ntwo\n");
    fx.put("old.txt", "x\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** Update File: old.txt\n*** Move to: moved/new.txt\n@@\n-x\n+y\n*** Add File: b.txt\n+b\n*** End Patch";
    let before = tree(fx.root());
    let preview = ApplyPatch::new(fx.tracker.clone()).preview(&*fx.boundary(), patch).unwrap();
    assert_eq!(tree(fx.root()), before, "the preview wrote nothing");
    let shown: Vec<_> = preview
        .iter()
        .map(|c| {
            (c.shown.as_str(), c.moved_from.as_deref(), c.before.as_deref(), c.after.as_deref())
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("a.txt", None, Some("one\ntwo\n"), Some("one\n2\n")),
            ("b.txt", None, None, Some("b\n")),
            ("moved/new.txt", Some("old.txt"), Some("x\n"), Some("y\n")),
        ]
    );
    fx.call("apply_patch", json!({ "patch": patch })).await;
    for change in &preview {
        assert_eq!(std::fs::read_to_string(&change.path).ok().as_deref(), change.after.as_deref());
    }
    assert!(!fx.root().join("old.txt").exists());
}

#[tokio::test]
async fn a_secret_file_is_not_shown_in_a_mismatch() {
    let fx = fixture();
    fx.put(".env", "API_KEY=sk-live-123\n");
    let patch = "*** Begin Patch\n*** Update File: .env\n@@\n-API_KEY=sk-live-12\n+API_KEY=x\n*** End Patch";
    let out = fx.call("apply_patch", json!({ "patch": patch })).await;
    assert!(out.contains("the file is secret") || out.contains("The file is secret"), "{out}");
    assert!(!out.contains("sk-live-123"), "{out}");
}

#[tokio::test]
async fn a_huge_patch_is_refused_before_anything_is_written() {
    let fx = fixture();
    let lines =
        "+0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n".repeat(17_000);
    let patch = format!(
        "*** Begin Patch\n*** Add File: small.txt\n+ok\n*** Add File: big.txt\n{lines}*** End Patch"
    );
    let out = fx.call("apply_patch", json!({ "patch": patch })).await;
    assert!(out.contains("the limit is 1 MB"), "{out}");
    assert!(tree(fx.root()).is_empty(), "nothing was written");
    // Control: the same shape under the limit is applied.
    let lines = "+0123456789abcdef\n".repeat(1000);
    let patch = format!(
        "*** Begin Patch\n*** Add File: small.txt\n+ok\n*** Add File: big.txt\n{lines}*** End Patch"
    );
    let out = fx.call("apply_patch", json!({ "patch": patch })).await;
    assert!(out.starts_with("Applied the patch"), "{out}");
    assert_eq!(fx.get_text("big.txt").lines().count(), 1000);
}
