//! The patch format: `*** Begin Patch`, one section per file (`*** Add File:`, `*** Delete File:`,
//! `*** Update File:` with an optional `*** Move to:`), hunks under `@@` headers, `*** End Patch`.
//!
//! The parser is as lenient as Codex's, whose models write this format: the begin and end markers
//! and the file headers may be padded with whitespace, a heredoc wrapper (`<<'EOF'` … `EOF`) is
//! taken off, the first hunk of a file may omit its `@@` line, and an empty line inside a hunk is
//! an empty context line. Lines that start with a space are never trimmed: there the space is the
//! context marker, and the rest is file text.

/// The freeform shape's grammar, in Lark, for a custom tool whose input is the raw patch text.
///
/// Written from the format above. `native` sends it as the custom tool's `definition`; the
/// tool's own parser stays the judge of what is accepted (it is more lenient about padding).
pub const LARK_GRAMMAR: &str = r#"start: begin_patch file_op+ end_patch

begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

file_op: add_file | delete_file | update_file

add_file: "*** Add File: " path LF added_line*
delete_file: "*** Delete File: " path LF
update_file: "*** Update File: " path LF move_to? hunk+

move_to: "*** Move to: " path LF
hunk: hunk_header? hunk_line+ end_of_file?
hunk_header: "@@" LF | "@@ " CONTEXT LF
hunk_line: (" " | "-" | "+") TEXT? LF
end_of_file: "*** End of File" LF
added_line: "+" TEXT? LF

path: /[^\r\n]+/
CONTEXT: /[^\r\n]+/
TEXT: /[^\r\n]+/
LF: /\r?\n/
"#;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: what to do to each file, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Patch {
    pub(crate) ops: Vec<FileOp>,
}

/// One `*** … File:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileOp {
    /// Create a file (or replace one) with these lines, each ending in a newline.
    Add {
        path: String,
        text: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    /// The path the section names first (the source of a move).
    pub(crate) fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path } | FileOp::Update { path, .. } => {
                path
            }
        }
    }
}

/// One hunk of an update: lines to find (context and `-` lines) and what replaces them (context
/// and `+` lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The text after `@@ `: a line to find first (a function or class header); the hunk's lines
    /// are then searched after it.
    pub(crate) context: Option<String>,
    pub(crate) old: Vec<String>,
    pub(crate) new: Vec<String>,
    /// For each line of `new`, the index in `old` of the context line it repeats: such a line
    /// keeps the file's text (which the ladder may have matched loosely) instead of the patch's.
    pub(crate) kept: Vec<Option<usize>>,
    /// `*** End of File` followed: the old lines must end the file.
    pub(crate) end_of_file: bool,
    /// The hunk's first line in the patch text, 1-based, for messages.
    pub(crate) line: usize,
}

impl Hunk {
    fn context_line(&mut self, text: &str) {
        self.kept.push(Some(self.old.len()));
        self.old.push(text.to_owned());
        self.new.push(text.to_owned());
    }
}

/// Why a patch text is not a patch, with the 1-based line of the patch text at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl ParseError {
    fn at(line: usize, message: impl Into<String>) -> Self {
        Self { line, message: message.into() }
    }
}

/// Parses a patch text.
pub(crate) fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.trim().lines().collect();
    // Line numbers count from the first non-blank line, as the model sees its patch.
    let (body, first_line) = match boundaries(&lines) {
        Ok(body) => (body, 2),
        Err(err) => match unwrap_heredoc(&lines) {
            Some(inner) => (boundaries(inner).map_err(|_| err)?, 3),
            None => return Err(err),
        },
    };
    let mut ops = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let (op, used) = file_op(&body[at..], first_line + at)?;
        ops.push(op);
        at += used;
    }
    Ok(Patch { ops })
}

/// The lines between the begin and end markers.
fn boundaries<'a>(lines: &'a [&'a str]) -> Result<&'a [&'a str], ParseError> {
    let first = lines.first().map(|line| line.trim());
    let last = lines.last().map(|line| line.trim());
    if first != Some(BEGIN) {
        return Err(ParseError::at(1, format!("the first line of the patch must be `{BEGIN}`")));
    }
    if lines.len() < 2 || last != Some(END) {
        return Err(ParseError::at(
            lines.len().max(1),
            format!("the last line of the patch must be `{END}`"),
        ));
    }
    Ok(&lines[1..lines.len() - 1])
}

/// The lines inside a heredoc wrapper (`<<'EOF'` … `EOF`), as a shell command line would carry
/// the patch to an `apply_patch` program.
fn unwrap_heredoc<'a>(lines: &'a [&'a str]) -> Option<&'a [&'a str]> {
    let (first, last) = (lines.first()?, lines.last()?);
    let opens = matches!(*first, "<<EOF" | "<<'EOF'" | "<<\"EOF\"");
    (opens && last.ends_with("EOF") && lines.len() >= 4).then(|| &lines[1..lines.len() - 1])
}

/// One file section at the start of `lines`, and how many lines it took.
fn file_op(lines: &[&str], line: usize) -> Result<(FileOp, usize), ParseError> {
    let header = lines[0].trim();
    if let Some(path) = header.strip_prefix(ADD) {
        let added: Vec<&str> = lines[1..].iter().map_while(|l| l.strip_prefix('+')).collect();
        let text = added.iter().fold(String::new(), |mut text, l| {
            text.push_str(l);
            text.push('\n');
            text
        });
        return Ok((FileOp::Add { path: path.to_owned(), text }, 1 + added.len()));
    }
    if let Some(path) = header.strip_prefix(DELETE) {
        return Ok((FileOp::Delete { path: path.to_owned() }, 1));
    }
    let Some(path) = header.strip_prefix(UPDATE) else {
        return Err(ParseError::at(
            line,
            format!(
                "`{header}` is not a file header; each file starts with `{ADD}PATH`, `{DELETE}PATH` or `{UPDATE}PATH`"
            ),
        ));
    };
    let mut used = 1;
    let move_to = lines.get(1).and_then(|l| l.strip_prefix(MOVE_TO)).map(|to| to.trim_end());
    if move_to.is_some() {
        used += 1;
    }
    let mut hunks = Vec::new();
    while used < lines.len() {
        let rest = &lines[used..];
        if rest[0].trim().is_empty() {
            // Blank lines between hunks.
            used += 1;
            continue;
        }
        if rest[0].starts_with('*') {
            break;
        }
        let (hunk, taken) = hunk(rest, line + used, hunks.is_empty())?;
        hunks.push(hunk);
        used += taken;
    }
    if hunks.is_empty() {
        return Err(ParseError::at(
            line,
            format!("`{UPDATE}{path}` has no hunk; add the changed lines, or leave the file out"),
        ));
    }
    Ok((FileOp::Update { path: path.to_owned(), move_to: move_to.map(str::to_owned), hunks }, used))
}

/// One hunk at the start of `lines` and how many lines it took. Only a file's first hunk may
/// leave out its `@@` line.
fn hunk(lines: &[&str], line: usize, first: bool) -> Result<(Hunk, usize), ParseError> {
    let header = lines[0];
    let (context, start) = if header.trim_end() == "@@" {
        (None, 1)
    } else if let Some(context) = header.strip_prefix("@@ ") {
        (Some(context.to_owned()), 1)
    } else if first {
        (None, 0)
    } else {
        return Err(ParseError::at(
            line,
            format!("expected a hunk header (`@@` or `@@ CONTEXT`), got `{header}`"),
        ));
    };
    let mut hunk = Hunk {
        context,
        old: Vec::new(),
        new: Vec::new(),
        kept: Vec::new(),
        end_of_file: false,
        line,
    };
    let mut taken = 0;
    for text in &lines[start..] {
        if text.trim_end() == END_OF_FILE {
            if taken == 0 {
                return Err(ParseError::at(
                    line + start,
                    "the hunk has no lines before `*** End of File`",
                ));
            }
            hunk.end_of_file = true;
            taken += 1;
            break;
        }
        match text.chars().next() {
            // An empty line is an empty context line: editors strip the lone space.
            None => hunk.context_line(""),
            Some(' ') => hunk.context_line(&text[1..]),
            Some('-') => hunk.old.push(text[1..].to_owned()),
            Some('+') => {
                hunk.new.push(text[1..].to_owned());
                hunk.kept.push(None);
            }
            Some(_) if taken == 0 => {
                return Err(ParseError::at(
                    line + start,
                    format!(
                        "unexpected line `{text}` in a hunk; every line starts with ` ` (context), `-` (removed) or `+` (added)"
                    ),
                ));
            }
            // The next hunk's header or the next file's.
            Some(_) => break,
        }
        taken += 1;
    }
    if taken == 0 {
        return Err(ParseError::at(line, "the hunk has no lines"));
    }
    Ok((hunk, start + taken))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, expect: &str) {
        let got = match parse(text) {
            Ok(patch) => format!("{:?}", patch.ops),
            Err(err) => format!("line {}: {}", err.line, err.message),
        };
        assert_eq!(got, expect);
    }

    #[test]
    fn every_section() {
        check(
            "*** Begin Patch\n*** Add File: a\n+x\n+\n*** Delete File: b\n*** Update File: c\n*** Move to: d\n@@ fn f\n ctx\n-old\n+new\n\n*** End of File\n*** End Patch\n",
            r#"[Add { path: "a", text: "x\n\n" }, Delete { path: "b" }, Update { path: "c", move_to: Some("d"), hunks: [Hunk { context: Some("fn f"), old: ["ctx", "old", ""], new: ["ctx", "new", ""], kept: [Some(0), None, Some(2)], end_of_file: true, line: 8 }] }]"#,
        );
    }

    #[test]
    fn padding_heredoc_and_a_first_hunk_without_header() {
        check(
            " *** Begin Patch \n  *** Update File: f\n x\n-y\n *** End Patch",
            r#"[Update { path: "f", move_to: None, hunks: [Hunk { context: None, old: ["x", "y"], new: ["x"], kept: [Some(0)], end_of_file: false, line: 3 }] }]"#,
        );
        check(
            "<<'EOF'\n*** Begin Patch\n*** Delete File: f\n*** End Patch\nEOF\n",
            r#"[Delete { path: "f" }]"#,
        );
        check(
            "*** Begin Patch\r\n*** Delete File: f\r\n*** End Patch\r\n",
            r#"[Delete { path: "f" }]"#,
        );
    }

    #[test]
    fn rejections_name_the_line() {
        check("hello", "line 1: the first line of the patch must be `*** Begin Patch`");
        check(
            "*** Begin Patch\n*** Delete File: f",
            "line 2: the last line of the patch must be `*** End Patch`",
        );
        check(
            "*** Begin Patch\n*** Frobnicate File: f\n*** End Patch",
            "line 2: `*** Frobnicate File: f` is not a file header; each file starts with `*** Add File: PATH`, `*** Delete File: PATH` or `*** Update File: PATH`",
        );
        check(
            "*** Begin Patch\n*** Update File: f\n*** End Patch",
            "line 2: `*** Update File: f` has no hunk; add the changed lines, or leave the file out",
        );
        check(
            "*** Begin Patch\n*** Update File: f\n@@\n-a\nzzz\n*** End Patch",
            "line 5: expected a hunk header (`@@` or `@@ CONTEXT`), got `zzz`",
        );
        check("*** Begin Patch\n*** End Patch", "[]");
    }
}
