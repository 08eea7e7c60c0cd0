//! `EditFile::preview` and `WriteFile::preview`: the change a call would make, worked out without
//! writing, is exactly what the call then writes, and a failing call previews its failure.

use agent_tools::{EditFile, EditFileInput, WriteFile, WriteFileInput};
use serde_json::{Value, json};

use super::Fixture;

/// Previews `args` of `tool` on a file holding `before` (absent when `None`, read by the model
/// first when `read`), checks that the preview wrote nothing, runs the call, and checks that the
/// file then holds exactly the preview's `after`. Returns the preview's `after`, or its error.
async fn check(
    tool: &str,
    before: Option<&[u8]>,
    read: bool,
    args: Value,
) -> Result<String, String> {
    let fx = Fixture::new();
    if let Some(bytes) = before {
        fx.put("f.txt", bytes);
    }
    if read {
        fx.call("read_file", json!({"path": "f.txt"})).await;
    }
    let ws = fx.boundary();
    let preview = match tool {
        "edit_file" => {
            let input: EditFileInput = serde_json::from_value(args.clone()).unwrap();
            EditFile::new(fx.tracker.clone()).preview(&*ws, &input)
        }
        _ => {
            let input: WriteFileInput = serde_json::from_value(args.clone()).unwrap();
            WriteFile::new(fx.tracker.clone()).preview(&*ws, &input)
        }
    };
    let on_disk = || std::fs::read(fx.root().join("f.txt")).ok();
    assert_eq!(on_disk().as_deref(), before, "the preview wrote nothing");
    let result = fx.call_result(tool, args).await;
    match preview {
        Ok(change) => {
            assert!(result.is_ok(), "the call succeeds as previewed: {result:?}");
            assert_eq!(change.shown, "f.txt");
            let before_text = before.map(|b| String::from_utf8_lossy(b).into_owned());
            assert_eq!(change.before, before_text, "the preview's before is the file now");
            let written = String::from_utf8(on_disk().unwrap()).unwrap();
            assert_eq!(written, change.after, "the call wrote exactly the preview");
            Ok(change.after)
        }
        Err(err) => {
            let observation = result.expect_err("the call fails as previewed");
            assert!(observation.contains(err.kind.as_str()), "{observation} vs {err:?}");
            assert_eq!(on_disk().as_deref(), before, "the failed call wrote nothing");
            Err(err.kind.as_str().to_owned())
        }
    }
}

const MAIN: &[u8] = b"fn main() {\n    println!(\"hello\");\n}\n";

#[tokio::test]
async fn previews_are_what_the_calls_write() {
    let edit =
        |old: &str, new: &str| json!({"path": "f.txt", "old_string": old, "new_string": new});
    let hello = edit("    println!(\"hello\");", "    println!(\"hello, world\");");
    assert_eq!(
        check("edit_file", Some(MAIN), true, hello).await.unwrap(),
        "fn main() {\n    println!(\"hello, world\");\n}\n"
    );
    // The indentation rung re-indents the replacement; the preview shows the re-indented text.
    let tabs = b"fn main() {\n\tlet a = 1;\n}\n";
    let loose = edit("let a = 1;\nlet b = 2;", "x");
    assert_eq!(check("edit_file", Some(tabs), true, loose).await, Err("not_found".to_owned()));
    let relaxed = edit("    let a = 1;\n", "    let a = 2;\n    let b = 3;\n");
    assert_eq!(
        check("edit_file", Some(tabs), true, relaxed).await.unwrap(),
        "fn main() {\n\tlet a = 2;\n\tlet b = 3;\n}\n"
    );
    // CRLF files keep their line endings, in the preview as on disk.
    let crlf = check("edit_file", Some(b"one\r\ntwo\r\n"), true, edit("one\n", "1\n")).await;
    assert_eq!(crlf.unwrap(), "1\r\ntwo\r\n");
    // A file the model has not read: the preview says the call would fail, and it does.
    let unread = edit("fn", "pub fn");
    assert_eq!(check("edit_file", Some(MAIN), false, unread).await, Err("stale_file".to_owned()));

    let write = |content: &str| json!({"path": "f.txt", "content": content});
    assert_eq!(check("write_file", None, false, write("new\n")).await.unwrap(), "new\n");
    let over = check("write_file", Some(b"a\r\nb\r\n"), true, write("c\nd\n")).await;
    assert_eq!(over.unwrap(), "c\r\nd\r\n");
    assert_eq!(
        check("write_file", Some(MAIN), false, write("x")).await,
        Err("stale_file".to_owned())
    );
}
