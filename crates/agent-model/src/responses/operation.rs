//! An `apply_patch_call`'s file operation and the patch text it amounts to, both ways: the
//! `apply_patch` tool takes patch text (`*** Begin Patch` … `*** End Patch`), and a replayed call
//! needs its operation back.

use serde::{Deserialize, Serialize};

use crate::lenient;

/// A file operation of an `apply_patch_call`, leniently read: an operation the adapter does not
/// know still becomes a call, which the tool answers with what was wrong.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Operation {
    #[serde(rename = "type", default, deserialize_with = "lenient::string")]
    pub(crate) kind: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub(crate) path: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) diff: Option<String>,
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const UPDATE: &str = "*** Update File: ";
const DELETE: &str = "*** Delete File: ";

/// The patch text an operation amounts to. A created file's V4A diff is its lines, each with a
/// `+` (one without it gets one); an update's diff is the hunks, as a patch has them.
pub(crate) fn patch_text(operation: &Operation) -> String {
    let path = operation.path.as_deref().unwrap_or_default();
    let diff = operation.diff.as_deref().unwrap_or_default();
    let mut text = format!("{BEGIN}\n");
    match operation.kind.as_deref() {
        Some("create_file") => {
            text.push_str(ADD);
            text.push_str(path);
            text.push('\n');
            for line in lines(diff) {
                if !line.starts_with('+') {
                    text.push('+');
                }
                text.push_str(line);
                text.push('\n');
            }
        }
        Some("delete_file") => {
            text.push_str(DELETE);
            text.push_str(path);
            text.push('\n');
        }
        Some("update_file") => {
            text.push_str(UPDATE);
            text.push_str(path);
            text.push('\n');
            for line in lines(diff) {
                text.push_str(line);
                text.push('\n');
            }
        }
        other => {
            // The tool refuses the header and names it, which tells the model what went wrong.
            text.push_str(&format!(
                "*** Unsupported operation: {}\n",
                other.unwrap_or("(no type)")
            ));
        }
    }
    text.push_str(END);
    text
}

/// A diff's lines, without the empty piece after a final newline.
fn lines(diff: &str) -> impl Iterator<Item = &str> {
    diff.strip_suffix('\n').unwrap_or(diff).split('\n').filter(move |_| !diff.is_empty())
}

/// The operation a patch text written by [`patch_text`] came from, to replay the call; a text
/// in another form (a hook rewrote it) is replayed as an update with the whole text.
pub(crate) fn operation(patch: &str) -> Operation {
    let body = patch.strip_prefix(BEGIN).and_then(|rest| rest.strip_prefix('\n'));
    let body = body.and_then(|body| body.strip_suffix(END)).unwrap_or_default();
    let (header, rest) = body.split_once('\n').unwrap_or((body, ""));
    let known = [("create_file", ADD), ("update_file", UPDATE), ("delete_file", DELETE)];
    for (kind, prefix) in known {
        if let Some(path) = header.strip_prefix(prefix) {
            let diff = (kind != "delete_file").then(|| rest.to_owned());
            return Operation { kind: Some(kind.to_owned()), path: Some(path.to_owned()), diff };
        }
    }
    Operation {
        kind: Some("update_file".to_owned()),
        path: Some(String::new()),
        diff: Some(patch.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(kind: &str, path: &str, diff: Option<&str>, expect: &str) {
        let op = Operation {
            kind: Some(kind.to_owned()),
            path: Some(path.to_owned()),
            diff: diff.map(str::to_owned),
        };
        let text = patch_text(&op);
        assert_eq!(text, expect);
        // Replaying the call gives the operation back, with every created line `+`-prefixed.
        let back = operation(&text);
        assert_eq!((&back.kind, &back.path), (&op.kind, &op.path));
        let plus = |diff: &str| -> String {
            diff.lines()
                .map(|line| {
                    if line.starts_with('+') || kind != "create_file" {
                        format!("{line}\n")
                    } else {
                        format!("+{line}\n")
                    }
                })
                .collect()
        };
        assert_eq!(back.diff.as_deref().map(plus), op.diff.as_deref().map(plus));
    }

    #[test]
    fn operations_become_patch_text_and_back() {
        check(
            "create_file",
            "hello.txt",
            Some("+hello\n+world\n"),
            "*** Begin Patch\n*** Add File: hello.txt\n+hello\n+world\n*** End Patch",
        );
        check(
            "create_file",
            "bare.txt",
            Some("no plus\n"),
            "*** Begin Patch\n*** Add File: bare.txt\n+no plus\n*** End Patch",
        );
        check(
            "update_file",
            "src/a.rs",
            Some("@@ fn main\n-    old();\n+    new();\n"),
            "*** Begin Patch\n*** Update File: src/a.rs\n@@ fn main\n-    old();\n+    new();\n*** End Patch",
        );
        check(
            "delete_file",
            "gone.txt",
            None,
            "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
        );
        check(
            "create_file",
            "empty.txt",
            Some(""),
            "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch",
        );
    }

    #[test]
    fn an_unknown_operation_is_named_in_the_patch() {
        let op = Operation { kind: Some("rename_file".into()), path: Some("a".into()), diff: None };
        assert_eq!(
            patch_text(&op),
            "*** Begin Patch\n*** Unsupported operation: rename_file\n*** End Patch"
        );
    }
}
