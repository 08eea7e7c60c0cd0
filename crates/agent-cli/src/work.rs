//! The session's tool calls as the terminal shows them: a one-line summary when a call starts,
//! a short preview of what it did when it ends (an edit's diff, a command's exit code and last
//! lines, a read's path and line range, a search's match count), the last call in full
//! (`/last`), and every file change of the session (`/diff`).
//!
//! File changes are seen on disk, not taken from the tool's word: the file is read when an
//! edit_file or write_file call starts and again when it ends, and the diff is between the two.

use std::{collections::HashMap, path::PathBuf, sync::Arc};

use agent_core::CallOutput;
use serde_json::Value;

mod diagnostics;

use crate::preview::{Block, Previewer, Style, Tone, short, unified, wrap};

/// Lines a finished call's preview shows before it points at `/last`.
const COLLAPSED: usize = 6;
/// Lines of a command's output the preview shows: its last ones, where errors are.
const TAIL: usize = 3;
/// Files larger than this are not read for diffs.
const MAX_DIFF_BYTES: u64 = 2 * 1024 * 1024;
/// A saved output larger than this is named by `/last`, not printed.
const MAX_SHOWN_BYTES: u64 = 1024 * 1024;

/// What the terminal remembers of the session's calls.
#[derive(Default)]
pub(crate) struct Work {
    previewer: Option<Arc<Previewer>>,
    /// Calls that started and have no output yet, by call id.
    running: HashMap<String, Running>,
    /// The last call with an output.
    last: Option<Done>,
    /// Every file a call of this session changed, with its text before the first change
    /// (`None`: it did not exist), in the order they were first changed.
    files: Vec<(PathBuf, String, Option<String>)>,
    /// Each changed file's text when its last diff was shown.
    reported: HashMap<PathBuf, String>,
}

/// A call between its start and its output.
struct Running {
    name: String,
    arguments: String,
    /// For a file tool: the file, as shown, and its text when the call started.
    file: Option<(PathBuf, String, Option<String>)>,
    /// The status line, once the call finished.
    status: String,
    /// Where the whole output of a capped call was saved.
    output_path: Option<String>,
}

/// A call with its output, for `/last`.
struct Done {
    name: String,
    arguments: String,
    status: String,
    output: String,
    output_path: Option<String>,
    diff: Option<Block>,
}

impl Work {
    /// Lets the previews resolve paths in the session's workspace.
    pub(crate) fn set_previewer(&mut self, previewer: Arc<Previewer>) {
        self.previewer = Some(previewer);
    }

    /// Forgets the calls and changes (a new session).
    pub(crate) fn clear(&mut self) {
        let previewer = self.previewer.take();
        *self = Self { previewer, ..Self::default() };
    }

    /// A call starts: its one-line summary, and a snapshot of the file it may change.
    pub(crate) fn started(&mut self, call_id: &str, name: &str, arguments: &str) -> String {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let file = matches!(name, "edit_file" | "write_file")
            .then(|| self.snapshot(args["path"].as_str()?))
            .flatten();
        self.running.insert(
            call_id.to_owned(),
            Running {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
                file,
                status: String::new(),
                output_path: None,
            },
        );
        summary(name, &args, arguments)
    }

    /// A call finished with `status` (`bash: ok (80 ms)`); its output follows.
    pub(crate) fn finished(&mut self, call_id: &str, status: String, output_path: Option<String>) {
        if let Some(running) = self.running.get_mut(call_id) {
            running.status = status;
            running.output_path = output_path;
        }
    }

    /// A call's output arrived: the short preview of what it did (empty when there is nothing
    /// to add to the status line).
    pub(crate) fn output(&mut self, output: &CallOutput, style: &Style) -> String {
        let Some(running) = self.running.remove(&output.call_id) else { return String::new() };
        let diff = match (&running.file, output.ok) {
            (Some((path, shown, before)), true) => self.changed(path, shown, before.clone()),
            _ => None,
        };
        let block = preview(&running.name, output, diff.as_ref());
        // The errors an edit introduced go under its diff, never collapsed away (docs/lsp.md).
        let mut errors = Block::default();
        if output.ok && matches!(running.name.as_str(), "edit_file" | "write_file" | "apply_patch")
        {
            diagnostics::push(&mut errors, &output.output);
        }
        self.last = Some(Done {
            name: running.name,
            arguments: running.arguments,
            status: running.status,
            output: output.output.clone(),
            output_path: running.output_path,
            diff,
        });
        block.render(style, Some(COLLAPSED), "/last shows all") + &errors.render(style, None, "")
    }

    /// The last call in full: its arguments, status, diff and whole output.
    pub(crate) fn last(&self, style: &Style) -> String {
        let Some(done) = &self.last else { return "  (no tool call yet)\n".to_owned() };
        let mut block = Block::default();
        let arguments: Value = serde_json::from_str(&done.arguments).unwrap_or(Value::Null);
        let pretty = serde_json::to_string_pretty(&arguments).unwrap_or_default();
        block.push(Tone::Header, done.name.clone());
        for line in pretty.lines() {
            block.push(Tone::Plain, line.to_owned());
        }
        block.push(Tone::Dim, done.status.trim().to_owned());
        if let Some(diff) = &done.diff {
            block.extend(diff);
        }
        // A capped output was saved whole; show that rather than what the model read, unless
        // it is too long for a terminal.
        let saved = done.output_path.as_ref().and_then(|path| {
            let size = std::fs::metadata(path).ok()?.len();
            if size > MAX_SHOWN_BYTES {
                block.push(Tone::Dim, format!("the whole output ({size} bytes) is in {path}"));
                return None;
            }
            std::fs::read_to_string(path).ok()
        });
        // Wrapped rather than cut: this is the place to read all of it.
        let width = style.width.saturating_sub(2);
        for line in saved.as_deref().unwrap_or(&done.output).lines() {
            for piece in wrap(line, width) {
                block.push(Tone::Plain, piece);
            }
        }
        block.render(style, None, "")
    }

    /// Every file change of the session: each file from before its first change to now.
    pub(crate) fn diff(&self, style: &Style) -> String {
        let mut block = Block::default();
        for (path, shown, before) in &self.files {
            let now = read(path);
            if now == *before {
                continue;
            }
            let Some(now) = now else {
                block.push(Tone::Header, format!("{shown} (deleted)"));
                continue;
            };
            let label = if before.is_some() { "" } else { " (new file)" };
            block.push(Tone::Header, format!("{shown}{label}"));
            block.extend(&unified(before.as_deref(), &now, 3));
        }
        if block.is_empty() {
            return "  (no file changes in this session)\n".to_owned();
        }
        block.render(style, None, "")
    }

    /// The file `path` names, resolved as the tool resolves it, and its text now.
    fn snapshot(&self, path: &str) -> Option<(PathBuf, String, Option<String>)> {
        let workspace = self.previewer.as_ref()?.workspace();
        let resolved = agent_core::Boundary::resolve_for_write(workspace, path).ok()?;
        let shown = match resolved.strip_prefix(workspace.root()) {
            Ok(relative) => relative.display().to_string(),
            Err(_) => resolved.display().to_string(),
        };
        let before = read(&resolved);
        Some((resolved, shown, before))
    }

    /// Records that a call changed `path` from `before`, and returns the diff of that call.
    fn changed(&mut self, path: &PathBuf, shown: &str, before: Option<String>) -> Option<Block> {
        let now = read(path)?;
        if !self.files.iter().any(|(known, ..)| known == path) {
            self.files.push((path.clone(), shown.to_owned(), before.clone()));
        }
        // Two edits of one file in one turn both start before either runs, so both snapshots
        // hold the text before the first: the first call's diff already shows both changes.
        let shown_already = self.reported.get(path) == Some(&now) && before.as_ref() != Some(&now);
        self.reported.insert(path.clone(), now.clone());
        if shown_already {
            let mut block = Block::default();
            block.push(Tone::Dim, "(this change is in the diff above)".to_owned());
            return Some(block);
        }
        Some(unified(before.as_deref(), &now, 1))
    }
}

/// A file's text, or `None` when it is missing, too large or not readable as text.
fn read(path: &PathBuf) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_DIFF_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The line shown when a call starts: the tool and what it works on.
fn summary(name: &str, args: &Value, raw: &str) -> String {
    if let Some(command) = args["command"].as_str().filter(|_| name == "bash") {
        return format!("{name} $ {}", short(command, 100));
    }
    if let Some(path) = args["path"].as_str() {
        return format!("{name} {}", short(path, 100));
    }
    format!("{name} {}", short(raw, 100))
}

/// The short account of what a finished call did.
fn preview(name: &str, output: &CallOutput, diff: Option<&Block>) -> Block {
    let mut block = Block::default();
    if !output.ok {
        let parsed: Value = serde_json::from_str(&output.output).unwrap_or(Value::Null);
        let message = parsed["message"].as_str().unwrap_or(&output.output);
        for line in message.lines().take(2) {
            block.push(Tone::Error, line.to_owned());
        }
        return block;
    }
    let mut lines = output.output.lines();
    // Every built-in tool's output starts with a summary line: `Edited a.rs: …`,
    // `exit 0 · 0.1 s · workdir .`, `a.rs · lines 1–40 of 90 · …`, `3 files match …`.
    let first = lines.next().unwrap_or_default();
    match name {
        "bash" => {
            let failed = first.starts_with("exit ") && !first.starts_with("exit 0 ");
            block.push(if failed { Tone::Error } else { Tone::Dim }, first.to_owned());
            let rest: Vec<&str> = lines.filter(|line| !line.trim().is_empty()).collect();
            for line in &rest[rest.len().saturating_sub(TAIL)..] {
                block.push(Tone::Plain, (*line).to_owned());
            }
        }
        // A tree's first line is only its root; the count says more.
        "list_dir" => {
            let entries = lines.filter(|line| !line.trim().is_empty()).count();
            block.push(Tone::Dim, format!("{first} ({entries} entries shown)"));
        }
        _ => {
            block.push(Tone::Dim, first.to_owned());
            if let Some(diff) = diff {
                block.extend(diff);
            }
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(ok: bool, text: &str) -> CallOutput {
        CallOutput {
            call_id: "c".to_owned(),
            output: text.to_owned(),
            ok,
            error: None,
            images: Vec::new(),
        }
    }

    #[track_caller]
    fn check(name: &str, ok: bool, text: &str, expect: &str) {
        let shown =
            preview(name, &output(ok, text), None).render(&Style::plain(60), Some(3), "/last");
        assert_eq!(shown, expect);
    }

    #[test]
    fn finished_calls_are_summed_up() {
        check(
            "bash",
            true,
            "exit 0 · 0.1 s · workdir .\na\nb\n\nc\nd\n",
            "  exit 0 · 0.1 s · workdir .\n  b\n  c\n  d\n",
        );
        check(
            "bash",
            true,
            "exit 2 · 0.1 s · workdir .\nerror: no\n",
            "  exit 2 · 0.1 s · workdir .\n  error: no\n",
        );
        check(
            "read_file",
            true,
            "a.rs · lines 1–2 of 9 · utf-8\n     1→x\n     2→y\n",
            "  a.rs · lines 1–2 of 9 · utf-8\n",
        );
        check("list_dir", true, "src/\n  a.rs\n  b/ (2 entries)\n", "  src/ (2 entries shown)\n");
        check(
            "grep",
            false,
            r#"{"ok":false,"error":"invalid_arguments","message":"bad regex"}"#,
            "  bad regex\n",
        );
    }

    #[test]
    fn last_shows_the_saved_whole_output_wrapped() {
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("call.txt");
        std::fs::write(&saved, format!("exit 0 · 1 s\n{}\nlast line\n", "x".repeat(70))).unwrap();
        let mut work = Work::default();
        assert_eq!(work.started("c", "bash", r#"{"command":"make"}"#), "bash $ make");
        let path = Some(saved.display().to_string());
        work.finished("c", "  bash: ok (5 ms, output capped)".to_owned(), path);
        work.output(&output(true, "[output truncated: …]"), &Style::plain(40));
        let last = work.last(&Style::plain(40));
        let wrapped = format!("  {}\n  {}\n  last line\n", "x".repeat(38), "x".repeat(32));
        assert!(last.ends_with(&wrapped), "{last}");
        assert!(!last.contains("truncated"), "{last}");
    }

    #[test]
    fn an_edit_shows_its_diff_then_last_and_diff_show_all() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let workspace = agent_exec::Workspace::new(dir.path()).unwrap();
        let previewer = Previewer::new(workspace, agent_tools::FileTracker::new(), String::new());
        let mut work = Work::default();
        work.set_previewer(Arc::new(previewer));
        let style = Style::plain(60);
        let line = work.started("c", "write_file", r#"{"path":"a.txt","content":"one\n2\n"}"#);
        assert_eq!(line, "write_file a.txt");
        std::fs::write(dir.path().join("a.txt"), "one\n2\n").unwrap();
        work.finished("c", "write_file: ok (1 ms)".to_owned(), None);
        let shown = work.output(&output(true, "Overwrote a.txt: 2 → 2 lines (+1 −1)"), &style);
        assert_eq!(
            shown,
            "  Overwrote a.txt: 2 → 2 lines (+1 −1)\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +2\n"
        );
        assert!(work.last(&style).contains("write_file: ok (1 ms)\n  @@ -1,2 +1,2 @@"));
        assert_eq!(work.diff(&style), "  a.txt\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +2\n");
        // Two writes in one turn: both start, both run, then both outputs arrive.
        work.started("d", "write_file", r#"{"path":"a.txt","content":"x"}"#);
        work.started("e", "write_file", r#"{"path":"a.txt","content":"y"}"#);
        std::fs::write(dir.path().join("a.txt"), "one\n2\nthree\n").unwrap();
        let of =
            |id: &str| CallOutput { call_id: id.to_owned(), ..output(true, "Overwrote a.txt") };
        let first = work.output(&of("d"), &style);
        assert!(first.contains("+three"), "{first}");
        let second = work.output(&of("e"), &style);
        assert!(second.ends_with("(this change is in the diff above)\n"), "{second}");
        work.clear();
        assert_eq!(work.diff(&style), "  (no file changes in this session)\n");
    }
}
