//! edit_file: exact edits, each rung of the ladder, and every failure the model must read.

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

const RUST: &str = "fn main() {\n\tlet a = 1;\n\tlet b = 2;\n\tprintln!(\"{a} {b}\");\n}\n\nfn other() {\n\tlet a = 1;\n}\n";

async fn read(fx: &Fixture, path: &str) {
    fx.call("read_file", json!({ "path": path })).await;
}

#[tokio::test]
async fn exact_edit_shows_the_region_with_line_numbers() {
    let fx = Fixture::new();
    fx.put("m.rs", RUST);
    read(&fx, "m.rs").await;
    let out = fx.call("edit_file", json!({"path": "m.rs", "old_string": "\tlet b = 2;\n", "new_string": "\tlet b = 3;\n\tlet c = 4;\n"})).await;
    assert_snapshot!(out, @r#"
    Edited m.rs: 1 replacement at lines 3–4 (+2 −1)
         1→fn main() {
         2→	let a = 1;
         3→	let b = 3;
         4→	let c = 4;
         5→	println!("{a} {b}");
         6→}
         7→
    "#);
    assert!(fx.get_text("m.rs").contains("\tlet b = 3;\n\tlet c = 4;\n\tprintln"));
}

#[tokio::test]
async fn ambiguous_matches_list_every_line() {
    let fx = Fixture::new();
    fx.put("m.rs", RUST);
    read(&fx, "m.rs").await;
    assert_snapshot!(fx.call("edit_file", json!({"path": "m.rs", "old_string": "let a = 1;", "new_string": "let a = 5;"})).await, @r#"{"ok":false,"error":"ambiguous_match","message":"old_string matches 2 places in m.rs (lines 2, 8). Add surrounding lines to make it unique, or set replace_all=true"}"#);
    let out = fx.call("edit_file", json!({"path": "m.rs", "old_string": "let a = 1;", "new_string": "let a = 5;", "replace_all": true})).await;
    assert!(out.starts_with("Edited m.rs: 2 replacements at lines 2, 8 (+2 −2)"), "{out}");
    assert_eq!(fx.get_text("m.rs").matches("let a = 5;").count(), 2);
}

#[tokio::test]
async fn not_found_shows_the_closest_text_with_visible_whitespace() {
    let fx = Fixture::new();
    fx.put("m.rs", "fn main() {\n\tlet a = 1;\n\tlet b = 2;\n}\n");
    read(&fx, "m.rs").await;
    // The tab/space mismatch is caught by the indentation rung, so make the text differ too.
    let out = fx.call("edit_file", json!({"path": "m.rs", "old_string": "fn main() {\n    let a = 10;\n", "new_string": "x"})).await;
    assert_snapshot!(out);
}

#[tokio::test]
async fn ladder_line_endings() {
    let fx = Fixture::new();
    fx.put("w.txt", "one\r\ntwo\r\nthree\r\n");
    read(&fx, "w.txt").await;
    let out = fx
        .call(
            "edit_file",
            json!({"path": "w.txt", "old_string": "one\ntwo\n", "new_string": "1\n2\n"}),
        )
        .await;
    assert!(out.contains("Note: matched after normalizing line endings."), "{out}");
    assert_eq!(fx.get("w.txt"), b"1\r\n2\r\nthree\r\n");
}

#[tokio::test]
async fn ladder_trailing_whitespace_and_punctuation() {
    let fx = Fixture::new();
    fx.put("t.md", "Title  \nbody\nIt’s “quoted” — here\n");
    read(&fx, "t.md").await;
    let out = fx
        .call(
            "edit_file",
            json!({"path": "t.md", "old_string": "Title\nbody", "new_string": "Heading\nbody"}),
        )
        .await;
    assert!(out.contains("Note: matched after ignoring trailing whitespace"), "{out}");
    let out = fx.call("edit_file", json!({"path": "t.md", "old_string": "It's \"quoted\" - here", "new_string": "It is quoted"})).await;
    assert!(out.contains("Note: matched after folding Unicode quotes, dashes and spaces"), "{out}");
    assert_eq!(fx.get_text("t.md"), "Heading\nbody\nIt is quoted\n");
}

#[tokio::test]
async fn ladder_indentation_reindents_to_the_file_style() {
    let fx = Fixture::new();
    fx.put("m.go", "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n");
    read(&fx, "m.go").await;
    let out = fx.call("edit_file", json!({"path": "m.go", "old_string": "    if x {\n        y()\n    }", "new_string": "    if x {\n        y()\n        z()\n    }"})).await;
    assert!(out.contains("matched after ignoring indentation"), "{out}");
    assert_eq!(fx.get_text("m.go"), "func f() {\n\tif x {\n\t\ty()\n\t\tz()\n\t}\n}\n");
}

#[tokio::test]
async fn leaked_line_number_prefixes_are_removed() {
    let fx = Fixture::new();
    fx.put("a.txt", "alpha\nbeta\n");
    read(&fx, "a.txt").await;
    let out = fx
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "     2→beta", "new_string": "gamma"}),
        )
        .await;
    assert!(out.contains("removed read_file line-number prefixes"), "{out}");
    assert_eq!(fx.get_text("a.txt"), "alpha\ngamma\n");
}

#[tokio::test]
async fn staleness() {
    let fx = Fixture::new();
    fx.put("s.txt", "a\nb\nc\n");
    assert_snapshot!(fx.call("edit_file", json!({"path": "s.txt", "old_string": "b", "new_string": "B"})).await, @r#"{"ok":false,"error":"stale_file","message":"s.txt has not been read in this session; read it with read_file first, then edit"}"#);
    read(&fx, "s.txt").await;
    // Changed since the read, but the text still matches exactly once: applied, with a note.
    fx.put("s.txt", "a\nb\nc\nd\n");
    let out =
        fx.call("edit_file", json!({"path": "s.txt", "old_string": "b", "new_string": "B"})).await;
    assert!(out.contains("the file changed since your last read"), "{out}");
    assert_eq!(fx.get_text("s.txt"), "a\nB\nc\nd\n");
    // Changed again and the old text is gone: refused with the fresh text.
    fx.put("s.txt", "a\nX\nc\nd\n");
    let out = fx
        .call("edit_file", json!({"path": "s.txt", "old_string": "a\nB\nc", "new_string": "z"}))
        .await;
    assert_snapshot!(out);
    assert_eq!(fx.get_text("s.txt"), "a\nX\nc\nd\n");
}

#[tokio::test]
async fn refusals() {
    let fx = Fixture::new();
    fx.put("a.txt", "a\n");
    fx.put("latin1.txt", b"caf\xe9\n");
    read(&fx, "a.txt").await;
    assert_snapshot!(fx.call("edit_file", json!({"path": "a.txt", "old_string": "a", "new_string": "a"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"old_string and new_string are identical; nothing to do"}"#);
    assert_snapshot!(fx.call("edit_file", json!({"path": "a.txt", "old_string": "", "new_string": "b"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"old_string is empty; to create a file or replace all of it, use write_file"}"#);
    assert_snapshot!(fx.call("edit_file", json!({"path": "latin1.txt", "old_string": "caf", "new_string": "cof"})).await, @r#"{"ok":false,"error":"binary_file","message":"latin1.txt is not editable text (not valid UTF-8 or UTF-16 text: undecodable byte at offset 3); it was not changed"}"#);
    assert_eq!(fx.get("latin1.txt"), b"caf\xe9\n");
    assert_snapshot!(fx.call("edit_file", json!({"path": "b.txt", "old_string": "a", "new_string": "b"})).await, @r#"{"ok":false,"error":"not_found","message":"no such file or directory: b.txt. Similar: a.txt"}"#);
    assert_snapshot!(fx.call("edit_file", json!({"path": "a.txt", "old_string": "zzz", "new_string": "b"})).await, @r#"{"ok":false,"error":"not_found","message":"old_string not found in a.txt, and no similar text was found. Re-read the file with read_file and copy the text exactly"}"#);
}
