//! read_file: header, numbering, caps, and every refusal.

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

#[tokio::test]
async fn header_names_encoding_line_endings_and_indentation() {
    let fx = Fixture::new();
    fx.put("src/app.rs", "fn main() {\r\n\tlet x = 1;\r\n\tprintln!(\"{x}\");\r\n}\r\n");
    assert_snapshot!(fx.call("read_file", json!({"path": "src/app.rs"})).await, @r#"
    src/app.rs · lines 1–4 of 4 · utf-8 · CRLF · indent: tabs
         1→fn main() {
         2→	let x = 1;
         3→	println!("{x}");
         4→}
    "#);
}

#[tokio::test]
async fn offset_and_limit_say_where_to_continue() {
    let fx = Fixture::new();
    let text: String = (1..=10).map(|n| format!("    line {n}\n")).collect();
    fx.put("a.txt", text);
    assert_snapshot!(fx.call("read_file", json!({"path": "a.txt", "offset": 4, "limit": 3})).await, @r"
    a.txt · lines 4–6 of 10 · utf-8 · LF · indent: 4 spaces
         4→    line 4
         5→    line 5
         6→    line 6
    PARTIAL: lines 4–6 of 10; continue with offset=7
    ");
}

#[tokio::test]
async fn oversized_results_stop_at_whole_lines_with_the_next_offset() {
    let fx = Fixture::new();
    let line = "x".repeat(1000);
    let text: String = (0..200).map(|_| format!("{line}\n")).collect();
    fx.put("big.txt", text);
    let out = fx.call("read_file", json!({"path": "big.txt", "offset": 1, "limit": 200})).await;
    assert!(out.len() <= 64 * 1024 + 200, "output is {} bytes", out.len());
    let last = out.lines().last().unwrap();
    assert_snapshot!(last, @"PARTIAL (64 KB output cap): lines 1–64 of 200; continue with offset=65");
    // Every shown line is whole.
    assert!(out.lines().skip(1).take(64).all(|l| l.ends_with(&line)));
}

#[tokio::test]
async fn long_lines_are_cut_with_a_marker() {
    let fx = Fixture::new();
    fx.put("min.js", format!("{}\n", "ab".repeat(1500)));
    let out = fx.call("read_file", json!({"path": "min.js"})).await;
    assert!(out.ends_with("…[+1000 chars]"), "{out}");
}

#[tokio::test]
async fn utf16_with_bom_is_decoded_and_named() {
    let fx = Fixture::new();
    let mut bytes = vec![0xFF, 0xFE];
    "héllo\nwörld\n".encode_utf16().for_each(|u| bytes.extend_from_slice(&u.to_le_bytes()));
    fx.put("w.txt", bytes);
    assert_snapshot!(fx.call("read_file", json!({"path": "w.txt"})).await, @r"
    w.txt · lines 1–2 of 2 · utf-16le · LF · indent: none
         1→héllo
         2→wörld
    ");
}

#[tokio::test]
async fn refusals() {
    let fx = Fixture::new();
    fx.put("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR rest of the image");
    fx.put("latin1.txt", b"caf\xe9\n");
    fx.put("src/app.rs", "fn main() {}\n");
    fx.put("empty.txt", "");
    assert_snapshot!(fx.call("read_file", json!({"path": "img.png"})).await, @r#"{"ok":false,"error":"binary_file","message":"img.png is not a text file (PNG image, 34 B); not shown"}"#);
    assert_snapshot!(fx.call("read_file", json!({"path": "latin1.txt"})).await, @r#"{"ok":false,"error":"binary_file","message":"latin1.txt is not a text file (not valid UTF-8 or UTF-16 text: undecodable byte at offset 3, 5 B); not shown"}"#);
    assert_snapshot!(fx.call("read_file", json!({"path": "src/ap.rs"})).await, @r#"{"ok":false,"error":"not_found","message":"no such file or directory: src/ap.rs. Similar: src/app.rs"}"#);
    assert_snapshot!(fx.call("read_file", json!({"path": "lib/app.rs"})).await, @r#"{"ok":false,"error":"not_found","message":"no such file or directory: lib/app.rs. Similar: src/app.rs"}"#);
    assert_snapshot!(fx.call("read_file", json!({"path": "src"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"src is a directory; use list_dir to see its entries"}"#);
    assert_snapshot!(fx.call("read_file", json!({"path": "empty.txt"})).await, @"empty.txt · (file exists and is empty)");
    assert_snapshot!(fx.call("read_file", json!({"path": "src/app.rs", "offset": 9})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"offset 9 is past the end of src/app.rs, which has 1 line"}"#);
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.root().join("link")).unwrap();
    let via_dots = fx.call("read_file", json!({"path": "../x/secret.txt"})).await;
    assert!(via_dots.contains(r#""error":"outside_workspace""#), "{via_dots}");
    let via_link = fx.call("read_file", json!({"path": "link/secret.txt"})).await;
    assert!(via_link.contains(r#""error":"outside_workspace""#), "{via_link}");
    assert!(!via_link.contains("secret\""));
}

#[tokio::test]
async fn reading_records_the_file_for_later_writes() {
    let fx = Fixture::new();
    fx.put("a.txt", "a\n");
    let path = std::fs::canonicalize(fx.root().join("a.txt")).unwrap();
    assert!(!fx.tracker.has_seen(&path));
    fx.call("read_file", json!({"path": "a.txt"})).await;
    assert!(fx.tracker.has_seen(&path));
}
