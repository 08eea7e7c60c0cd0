//! A unified diff as preview lines (`similar` does the diffing), or a new file's lines.

use similar::{ChangeTag, TextDiff};

use super::{Block, Tone};

/// The change from `before` to `after` as `@@` hunks with `context` lines around each change;
/// every line of `after` as an addition when there is no `before` (a new file).
pub(crate) fn unified(before: Option<&str>, after: &str, context: usize) -> Block {
    let mut block = Block::default();
    let Some(before) = before else {
        for line in after.lines() {
            block.push(Tone::Added, format!("+{line}"));
        }
        return block;
    };
    // A deadline keeps the prompt responsive on a huge file with many changes: past it the
    // diff is coarser (larger hunks), never wrong.
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(before, after);
    let mut unified = diff.unified_diff();
    unified.context_radius(context);
    for hunk in unified.iter_hunks() {
        block.push(Tone::Hunk, hunk.header().to_string());
        for change in hunk.iter_changes() {
            let (sign, tone) = match change.tag() {
                ChangeTag::Delete => ('-', Tone::Removed),
                ChangeTag::Insert => ('+', Tone::Added),
                ChangeTag::Equal => (' ', Tone::Plain),
            };
            let text = change.value();
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            block.push(tone, format!("{sign}{text}"));
            if change.missing_newline() {
                block.push(Tone::Dim, "\\ No newline at end of file".to_owned());
            }
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preview::Style;

    #[track_caller]
    fn check(before: Option<&str>, after: &str, context: usize, expect: &str) {
        assert_eq!(unified(before, after, context).render(&Style::plain(80), None, ""), expect);
    }

    #[test]
    fn diffs() {
        check(Some("a\nb\nc\n"), "a\nB\nc\n", 1, "  @@ -1,3 +1,3 @@\n   a\n  -b\n  +B\n   c\n");
        check(Some("a\r\nb\r\n"), "a\r\nc\r\n", 0, "  @@ -2 +2 @@\n  -b\n  +c\n");
        check(
            Some("a"),
            "a\nb",
            0,
            "  @@ -1 +1,2 @@\n  -a\n  \\ No newline at end of file\n  +a\n  +b\n  \\ No newline at end of file\n",
        );
        check(None, "x\ny\n", 3, "  +x\n  +y\n");
        check(Some("same\n"), "same\n", 3, "");
    }
}
