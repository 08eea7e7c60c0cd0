//! write_file: creation, staleness, preserved format, atomic replacement.

use std::os::unix::fs::PermissionsExt as _;

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

#[tokio::test]
async fn creates_files_and_parent_directories_without_echoing_content() {
    let fx = Fixture::new();
    let out = fx.call("write_file", json!({"path": "new/dir/x.rs", "content": "a\nb\nc\n"})).await;
    assert_snapshot!(out, @"Created new/dir/x.rs (3 lines, 6 B)");
    assert_eq!(fx.get_text("new/dir/x.rs"), "a\nb\nc\n");
    let mode = std::fs::metadata(fx.root().join("new/dir/x.rs")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[tokio::test]
async fn overwriting_requires_a_fresh_read() {
    let fx = Fixture::new();
    fx.put("x.txt", "one\ntwo\n");
    assert_snapshot!(fx.call("write_file", json!({"path": "x.txt", "content": "new\n"})).await, @r#"{"ok":false,"error":"stale_file","message":"x.txt exists and has not been read in this session; read it with read_file first, then write again"}"#);
    fx.call("read_file", json!({"path": "x.txt"})).await;
    fx.put("x.txt", "one\ntwo\nthree\n");
    assert_snapshot!(fx.call("write_file", json!({"path": "x.txt", "content": "new\n"})).await, @r#"{"ok":false,"error":"stale_file","message":"x.txt changed since your last read (8 B → 14 B); re-read it with read_file, then write again"}"#);
    assert_eq!(fx.get_text("x.txt"), "one\ntwo\nthree\n");
    fx.call("read_file", json!({"path": "x.txt"})).await;
    assert_snapshot!(fx.call("write_file", json!({"path": "x.txt", "content": "one\n2\nthree\nfour\n"})).await, @"Overwrote x.txt: 3 → 4 lines (+2 −1)");
    // Its own write counts as seen: a second write needs no new read.
    assert_snapshot!(fx.call("write_file", json!({"path": "x.txt", "content": "done\n"})).await, @"Overwrote x.txt: 4 → 1 line (+1 −4)");
}

#[tokio::test]
async fn a_touch_that_keeps_the_content_is_not_stale() {
    let fx = Fixture::new();
    fx.put("x.txt", "same\n");
    fx.call("read_file", json!({"path": "x.txt"})).await;
    // A formatter rewrites the same bytes: the content hash is unchanged, so this is not stale.
    fx.put("x.txt", "same\n");
    let out = fx.call("write_file", json!({"path": "x.txt", "content": "other\n"})).await;
    assert!(out.starts_with("Overwrote"), "{out}");
}

#[tokio::test]
async fn keeps_crlf_bom_encoding_and_permission_bits() {
    let fx = Fixture::new();
    fx.put("win.txt", b"\xEF\xBB\xBFa\r\nb\r\n");
    let path = fx.root().join("win.txt");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    fx.call("read_file", json!({"path": "win.txt"})).await;
    fx.call("write_file", json!({"path": "win.txt", "content": "x\ny\n"})).await;
    assert_eq!(fx.get("win.txt"), b"\xEF\xBB\xBFx\r\ny\r\n");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);

    let mut utf16 = vec![0xFE, 0xFF];
    "a\n".encode_utf16().for_each(|u| utf16.extend_from_slice(&u.to_be_bytes()));
    fx.put("w16.txt", utf16);
    fx.call("read_file", json!({"path": "w16.txt"})).await;
    fx.call("write_file", json!({"path": "w16.txt", "content": "é\n"})).await;
    assert_eq!(fx.get("w16.txt"), vec![0xFE, 0xFF, 0x00, 0xE9, 0x00, 0x0A]);
}

#[tokio::test]
async fn leaves_no_temporary_files_behind() {
    let fx = Fixture::new();
    fx.call("write_file", json!({"path": "a.txt", "content": "a"})).await;
    let names: Vec<_> =
        std::fs::read_dir(fx.root()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("a.txt")]);
}

#[tokio::test]
async fn refusals() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root().join("dir")).unwrap();
    assert_snapshot!(fx.call("write_file", json!({"path": "dir", "content": "x"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"dir is a directory; give a file path"}"#);
    let out = fx.call("write_file", json!({"path": "../escape.txt", "content": "x"})).await;
    assert!(out.contains("outside_workspace"), "{out}");
    assert!(!fx.root().parent().unwrap().join("escape.txt").exists());
    let big = "x".repeat(1024 * 1024 + 1);
    assert_snapshot!(fx.call("write_file", json!({"path": "big.txt", "content": big})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"content is 1.0 MB; the limit is 1 MB. Write a smaller file or generate it with a command"}"#);
}

#[tokio::test]
async fn symlinks_are_written_through_only_inside_the_workspace() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("target.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("target.txt"), fx.root().join("out-link"))
        .unwrap();
    let out = fx.call("write_file", json!({"path": "out-link", "content": "pwned"})).await;
    assert!(out.contains("outside_workspace"), "{out}");
    assert_eq!(std::fs::read_to_string(outside.path().join("target.txt")).unwrap(), "outside\n");

    fx.put("real.txt", "a\n");
    std::os::unix::fs::symlink("real.txt", fx.root().join("in-link")).unwrap();
    fx.call("read_file", json!({"path": "in-link"})).await;
    let out = fx.call("write_file", json!({"path": "in-link", "content": "b\n"})).await;
    assert_snapshot!(out, @"Overwrote real.txt: 1 → 1 line (+1 −1)");
    assert!(std::fs::symlink_metadata(fx.root().join("in-link")).unwrap().file_type().is_symlink());
    assert_eq!(fx.get_text("real.txt"), "b\n");
}
