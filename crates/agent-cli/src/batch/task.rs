//! One line of TASKS.jsonl: what to run, where, and within which limits, checked before any task
//! starts so a typo is reported with its line number instead of failing a task halfway.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    str::FromStr,
    time::Duration,
};

use agent_exec::PermissionMode;
use serde::Deserialize;

/// The longest id: ids name files and directories under the batch directory.
const MAX_ID: usize = 100;
/// The longest task file line read; a longer line is reported, not parsed.
const MAX_LINE: usize = 1024 * 1024;

/// A task as written on its line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    id: String,
    prompt: String,
    /// A directory, copied for the task.
    workspace: Option<PathBuf>,
    /// A git repository, checked out at `commit` in a worktree of its own.
    repo: Option<PathBuf>,
    commit: Option<String>,
    profile: Option<String>,
    model: Option<String>,
    permission_mode: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    limits: Limits,
}

/// The bounds of one task; absent ones fall back to the batch's flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Limits {
    /// Model turns (`--max-turns`).
    pub(crate) turns: Option<usize>,
    /// Input plus output tokens, as the `usage` events count them; the task is ended past it.
    pub(crate) tokens: Option<u64>,
    /// Wall time in seconds; the task's processes are killed at it.
    pub(crate) wall_secs: Option<u64>,
}

/// Where a task's isolated copy comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A directory, copied file by file.
    Directory(PathBuf),
    /// A git repository at a commit, checked out with `git worktree add`.
    Git { repo: PathBuf, commit: String },
}

/// A checked task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) prompt: String,
    pub(crate) source: Source,
    pub(crate) profile: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) permission_mode: Option<PermissionMode>,
    pub(crate) allow: Vec<String>,
    pub(crate) limits: Limits,
}

impl Task {
    /// The wall limit, the batch's default when the task names none.
    pub(crate) fn wall(&self, default: Duration) -> Duration {
        self.limits.wall_secs.map_or(default, Duration::from_secs)
    }
}

/// A line that is not a task, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    pub(crate) line: usize,
    pub(crate) problem: Problem,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.line, self.problem)
    }
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    TooLong,
    /// Not JSON, or not a task's fields (serde's words: an unknown field, a missing one).
    NotATask(String),
    BadId(String),
    DuplicateId(String),
    EmptyPrompt,
    BadCommit(String),
    RepoWithoutCommit,
    BothWorkspaces,
    NoWorkspace,
    /// The permission mode, and why it is not one.
    BadMode(String),
    BadName(String),
    ZeroLimit,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLong => write!(f, "longer than {MAX_LINE} bytes"),
            Self::NotATask(why) => f.write_str(why),
            Self::BadId(id) => write!(
                f,
                "the id `{id}` must be 1 to {MAX_ID} letters, digits, `-`, `_` or `.`, not \
                 starting with `.`"
            ),
            Self::DuplicateId(id) => write!(f, "the id `{id}` is used by an earlier line"),
            Self::EmptyPrompt => f.write_str("the prompt is empty"),
            Self::BadCommit(commit) => write!(f, "`{commit}` is not a commit"),
            Self::RepoWithoutCommit => f.write_str("`repo` needs a `commit`"),
            Self::BothWorkspaces => {
                f.write_str("give either `workspace` or `repo` and `commit`, not both")
            }
            Self::NoWorkspace => {
                f.write_str("no `workspace` (a directory) nor `repo` and `commit`")
            }
            Self::BadMode(why) => f.write_str(why),
            Self::BadName(name) => write!(f, "`{name}` is not a profile or model name"),
            Self::ZeroLimit => f.write_str("a limit of 0 would end the task before it starts"),
        }
    }
}

/// Parses every line of a task file; paths are relative to `base` (the file's directory). Blank
/// lines are skipped. Returns the tasks, or every bad line (not only the first).
pub(crate) fn parse(text: &str, base: &Path) -> Result<Vec<Task>, Vec<LineError>> {
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        match parse_line(raw, base) {
            Ok(task) if !seen.insert(task.id.clone()) => {
                errors.push(LineError { line, problem: Problem::DuplicateId(task.id) });
            }
            Ok(task) => tasks.push(task),
            Err(problem) => errors.push(LineError { line, problem }),
        }
    }
    if errors.is_empty() { Ok(tasks) } else { Err(errors) }
}

fn parse_line(raw: &str, base: &Path) -> Result<Task, Problem> {
    if raw.len() > MAX_LINE {
        return Err(Problem::TooLong);
    }
    let line: Line = serde_json::from_str(raw).map_err(|err| Problem::NotATask(err.to_string()))?;
    check_id(&line.id)?;
    if line.prompt.trim().is_empty() {
        return Err(Problem::EmptyPrompt);
    }
    let source = match (line.workspace, line.repo, line.commit) {
        (Some(dir), None, None) => Source::Directory(base.join(dir)),
        (None, Some(repo), Some(commit)) => {
            if commit.is_empty() || commit.starts_with('-') {
                return Err(Problem::BadCommit(commit));
            }
            Source::Git { repo: base.join(repo), commit }
        }
        (None, Some(_), None) => return Err(Problem::RepoWithoutCommit),
        (Some(_), Some(_), _) => return Err(Problem::BothWorkspaces),
        _ => return Err(Problem::NoWorkspace),
    };
    let permission_mode = line
        .permission_mode
        .map(|mode| {
            PermissionMode::from_str(&mode).map_err(|err| Problem::BadMode(err.to_string()))
        })
        .transpose()?;
    for name in [&line.profile, &line.model].into_iter().flatten() {
        if name.is_empty() || name.starts_with('-') {
            return Err(Problem::BadName(name.clone()));
        }
    }
    if line.limits.wall_secs == Some(0) || line.limits.turns == Some(0) {
        return Err(Problem::ZeroLimit);
    }
    Ok(Task {
        id: line.id,
        prompt: line.prompt,
        source,
        profile: line.profile,
        model: line.model,
        permission_mode,
        allow: line.allow,
        limits: line.limits,
    })
}

/// Ids name a directory, a patch file and a result file, so they are kept to a safe alphabet.
fn check_id(id: &str) -> Result<(), Problem> {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if id.is_empty() || id.len() > MAX_ID || !id.chars().all(safe) || id.starts_with('.') {
        return Err(Problem::BadId(id.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The problem reported for a one-line file.
    fn check(line: &str, problem: &str) {
        let errors = parse(line, Path::new("/base")).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let said = errors[0].problem.to_string();
        assert!(said.contains(problem), "{said:?} lacks {problem:?}");
    }

    #[test]
    fn bad_lines_are_named_with_their_problem() {
        check("not json", "expected");
        check(r#"{"id":"a","prompt":"p","workspace":"w","promt":"x"}"#, "unknown field `promt`");
        check(r#"{"id":"../x","prompt":"p","workspace":"w"}"#, "the id `../x` must be");
        check(r#"{"id":"a","prompt":" ","workspace":"w"}"#, "the prompt is empty");
        check(r#"{"id":"a","prompt":"p"}"#, "no `workspace`");
        check(r#"{"id":"a","prompt":"p","repo":"r"}"#, "`repo` needs a `commit`");
        check(r#"{"id":"a","prompt":"p","repo":"r","commit":"--x"}"#, "is not a commit");
        check(r#"{"id":"a","prompt":"p","workspace":"w","repo":"r","commit":"c"}"#, "not both");
        check(r#"{"id":"a","prompt":"p","workspace":"w","permission_mode":"yolo"}"#, "yolo");
        check(r#"{"id":"a","prompt":"p","workspace":"w","model":"--base-url"}"#, "not a profile");
        check(r#"{"id":"a","prompt":"p","workspace":"w","limits":{"wall_secs":0}}"#, "limit of 0");
        check(r#"{"id":"a","prompt":"p","workspace":"w","limits":{"hours":1}}"#, "unknown field");
    }

    #[test]
    fn every_bad_line_is_reported_and_duplicates_too() {
        let text = "{\"id\":\"a\",\"prompt\":\"p\",\"workspace\":\"w\"}\n\nbroken\n\
                    {\"id\":\"a\",\"prompt\":\"q\",\"workspace\":\"w\"}\n";
        let errors = parse(text, Path::new("/base")).unwrap_err();
        let lines: Vec<usize> = errors.iter().map(|error| error.line).collect();
        assert_eq!(lines, [3, 4]);
        assert_eq!(errors[1].problem, Problem::DuplicateId("a".to_owned()));
    }

    #[test]
    fn a_good_line_resolves_paths_against_the_file() {
        let text = r#"{"id":"t-1","prompt":"p","repo":"r","commit":"abc","permission_mode":"acceptEdits","allow":["Bash(ls *)"],"limits":{"turns":3,"tokens":10,"wall_secs":5}}"#;
        let tasks = parse(text, Path::new("/base")).unwrap();
        let source = Source::Git { repo: PathBuf::from("/base/r"), commit: "abc".to_owned() };
        assert_eq!(tasks[0].source, source);
        assert_eq!(tasks[0].permission_mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(
            tasks[0].limits,
            Limits { turns: Some(3), tokens: Some(10), wall_secs: Some(5) }
        );
        assert_eq!(tasks[0].wall(Duration::from_secs(9)), Duration::from_secs(5));
    }
}
