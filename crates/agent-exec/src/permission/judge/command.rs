//! Shell segments: the constructs no rule can approve, the paths a segment writes, and what the
//! mode answers for a command no rule names.

use std::path::{Path, PathBuf};

use agent_core::{ToolError, ToolErrorKind};

use super::{Judged, approval_only, plan_deny, rule_ask};
use crate::permission::{
    Ask, PermissionMode, PermissionPolicy, Remedy, environment, safe,
    shell::{self, Segment},
};

/// Programs whose non-option arguments are paths they create or change. Protected paths and
/// `Edit(…)` rules apply to these arguments in every mode.
const FILE_CHANGERS: &[&str] = &[
    "mkdir", "touch", "mv", "cp", "rm", "rmdir", "ln", "chmod", "chown", "chgrp", "truncate",
    "tee", "install",
];

impl PermissionPolicy {
    /// Segments no rule can approve: opaque constructs, a directory known only at run time,
    /// redirections out of the workspace, and writes to protected paths.
    pub(super) fn judge_opaque(
        &self,
        segment: &Segment,
        dirs: &[PathBuf],
        bypass: bool,
    ) -> Option<Judged> {
        let opaque_ask = |reason: String| {
            Judged::Ask(Ask {
                reason,
                remedy: Remedy { rules: Vec::new(), mode: Some(PermissionMode::Bypass) },
            })
        };
        let lenient = bypass && !self.has_command_denies;
        if let Some(danger) = segment.danger
            && !lenient
        {
            return Some(opaque_ask(format!(
                "the command uses {danger}, which no rule can approve"
            )));
        }
        if segment.dir_unknown && !lenient {
            return Some(opaque_ask(format!(
                "`{}` runs after a `cd` whose target is known only at run time, so no rule can approve it",
                segment.text()
            )));
        }
        let protected = |path: &Path| {
            Some(approval_only(format!(
                "the command writes to {}, a protected path, which always asks",
                path.display()
            )))
        };
        let unknown_dir = |written: &str| {
            Some(approval_only(format!(
                "the command writes to `{written}` in a directory known only at run time, which may be a protected path"
            )))
        };
        for target in &segment.writes {
            if is_device(&target.path) {
                continue;
            }
            if target.expands {
                if bypass {
                    continue;
                }
                return Some(opaque_ask(format!(
                    "the command redirects output to `{}`, a path computed at run time",
                    target.path
                )));
            }
            if segment.dir_unknown {
                return unknown_dir(&target.path);
            }
            for dir in dirs {
                match self.resolve_write_in(dir, &target.path) {
                    Ok(path) if self.protected.matches(&path) => return protected(&path),
                    Ok(_) => {}
                    Err(_) if bypass => {}
                    Err(err) => {
                        return Some(opaque_ask(format!(
                            "the command redirects output out of the workspace ({})",
                            err.message
                        )));
                    }
                }
            }
        }
        for arg in file_arguments(segment) {
            if segment.dir_unknown {
                return unknown_dir(arg);
            }
            for dir in dirs {
                if let Ok(path) = self.resolve_write_in(dir, arg)
                    && self.protected.matches(&path)
                {
                    return protected(&path);
                }
            }
        }
        None
    }

    /// `path` as the shell in `dir` opens it for writing, resolved against the boundary.
    fn resolve_write_in(&self, dir: &Path, path: &str) -> Result<PathBuf, ToolError> {
        match dir.join(path).to_str() {
            Some(joined) => self.workspace.resolve_for_write(joined),
            None => Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("the path `{path}` is not valid UTF-8"),
            )),
        }
    }

    /// The canonical paths a segment writes (redirections and the arguments of file-changing
    /// programs) in each directory it may run in; paths computed at run time are left out, as
    /// [`Self::judge_opaque`] handles them.
    pub(super) fn written_paths(&self, segment: &Segment, dirs: &[PathBuf]) -> Vec<PathBuf> {
        let redirects = segment
            .writes
            .iter()
            .filter(|target| !target.expands && !is_device(&target.path))
            .map(|target| target.path.as_str());
        let args = file_arguments(segment).filter(|_| !segment.expands);
        let mut out = Vec::new();
        for written in redirects.chain(args) {
            for dir in dirs {
                if let Ok(path) = self.resolve_write_in(dir, written) {
                    out.push(path);
                }
            }
        }
        out
    }

    /// What the mode answers for a segment no rule names: a known read-only command runs, a
    /// file operation is an edit, and anything else asks (or is refused in plan mode).
    pub(super) fn segment_default(&self, segment: &Segment, dirs: &[PathBuf]) -> Judged {
        use PermissionMode as M;
        let mode = self.mode;
        // A variable that is not inert changes what the command does, so the segment is
        // neither a known read-only command nor a plain file operation.
        let variable = segment.assigns.iter().find(|a| !environment::is_inert(&a.name));
        let writes = segment.writes.iter().any(|target| !is_device(&target.path));
        let safe = variable.is_none() && safe::is_safe(&segment.words);
        if safe && !writes && !self.mentions_secret(segment, dirs) {
            // In bypass the user allowed everything; elsewhere the command runs unasked
            // only because it reads, so it may execute only what it names.
            return match mode {
                M::Bypass => Judged::Allow,
                _ => Judged::ReadOnly(segment.words.first().cloned()),
            };
        }
        let edit_like =
            variable.is_none() && (self.is_file_operation(segment, dirs) || (writes && safe));
        let what = match variable {
            Some(assign) => format!(
                "`{}` would run with `{}` set, which {}",
                segment.text(),
                assign.name,
                environment::why(&assign.name)
            ),
            None => format!("`{}` is not a known read-only command", segment.text()),
        };
        match mode {
            M::Bypass => Judged::Allow,
            M::AcceptEdits if edit_like => Judged::Allow,
            M::Plan if variable.is_some() => plan_deny(&what),
            M::Plan => plan_deny(&format!("`{}` may change things", segment.text())),
            M::Default | M::AcceptEdits | M::DontAsk => match suggest_command_rule(segment) {
                Some(rule) => rule_ask(what, rule),
                None => approval_only(what),
            },
        }
    }

    /// Whether an argument of the segment names a secret file (`cat .env`) in a directory it
    /// may run in, which keeps an otherwise safe command from running unasked.
    fn mentions_secret(&self, segment: &Segment, dirs: &[PathBuf]) -> bool {
        segment.words.iter().skip(1).filter(|word| !word.starts_with('-')).any(|word| {
            dirs.iter().any(|dir| self.secrets.matches(&shell::join_logical(dir, word)))
        })
    }

    /// `mkdir`, `touch`, `mv`, `cp` whose path arguments all stay inside the workspace and off
    /// protected paths, in every directory the segment may run in: what accept-edits mode lets
    /// through as an edit.
    fn is_file_operation(&self, segment: &Segment, dirs: &[PathBuf]) -> bool {
        let Some(program) = segment.words.first() else { return false };
        if !matches!(program.as_str(), "mkdir" | "touch" | "mv" | "cp")
            || segment.expands
            || segment.dir_unknown
        {
            return false;
        }
        file_arguments(segment).all(|word| {
            dirs.iter().all(|dir| {
                self.resolve_write_in(dir, word).is_ok_and(|path| !self.protected.matches(&path))
            })
        })
    }
}

/// The non-option arguments of a program that creates or changes the paths it is given
/// (`touch a b`, `rm -rf x`, `cp -- a b`).
fn file_arguments(segment: &Segment) -> impl Iterator<Item = &str> {
    let changes = segment.words.first().is_some_and(|p| FILE_CHANGERS.contains(&p.as_str()));
    let args = if changes { &segment.words[1..] } else { &[] };
    let mut options = true;
    args.iter().map(String::as_str).filter(move |arg| {
        if options && *arg == "--" {
            options = false;
            return false;
        }
        !(options && arg.starts_with('-'))
    })
}

/// The narrowest useful rule for a command: `Bash(cargo test *)` for `cargo test -p x`, but the
/// exact command for interpreters and shells, where a prefix would allow any code. Variables
/// that are not inert are named with their exact values (`Bash(RUST_LOG=debug cargo test *)`);
/// `None` when a value cannot be written in a rule (spaces, `*`) or there is no program.
fn suggest_command_rule(segment: &Segment) -> Option<String> {
    let words = &segment.words;
    let program = words.first()?;
    let mut prefix = String::new();
    for assign in segment.assigns.iter().filter(|a| !environment::is_inert(&a.name)) {
        if assign.value.is_empty() || assign.value.contains(|c: char| c.is_whitespace() || c == '*')
        {
            return None;
        }
        prefix.push_str(&format!("{}={} ", assign.name, assign.value));
    }
    if shell::INTERPRETERS.contains(&program.as_str()) {
        return Some(format!("Bash({prefix}{})", segment.text()));
    }
    Some(match words.get(1) {
        Some(sub)
            if !sub.starts_with('-')
                && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            format!("Bash({prefix}{program} {sub} *)")
        }
        _ => format!("Bash({prefix}{program} *)"),
    })
}

fn is_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
}
