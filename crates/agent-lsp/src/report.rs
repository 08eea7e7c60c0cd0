//! The model-visible text of an edit's diagnostics: only what the edit changed, capped, and
//! worded as facts about the edit (never "please fix"), so a model does not chase errors that
//! were there before it started.

use std::{fmt::Write as _, time::Duration};

use crate::diff::Delta;

/// What became of one file's diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Nothing to say (no server for it, a deleted file, a first look without a before).
    Nothing,
    /// The edit's difference.
    Delta(Delta),
    /// The deadline passed first; the report comes with a later observation.
    Pending { waited: Duration },
    /// The server exited while working on it; it restarts with the next edit.
    Crashed,
    /// The server never answered for this version.
    NoAnswer,
    /// The language was just turned off (said once).
    TurnedOff { reason: String },
}

/// What changed the file: the model reads a command's report as the command's doing, not as
/// an edit it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// An edit tool wrote it.
    Edit,
    /// A command (`bash`, `shell`, a job) changed it.
    Command,
}

/// One file's part of an observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileReport {
    pub(crate) shown: String,
    pub(crate) server: String,
    pub(crate) outcome: Outcome,
    /// Delivered after its own observation said it was pending.
    pub(crate) late: bool,
    pub(crate) cause: Cause,
}

/// The lines for every report; empty when no report has anything to say.
pub(crate) fn render(reports: &[FileReport], max_shown: usize) -> String {
    let mut out = String::new();
    for report in reports {
        let FileReport { shown, server, outcome, late, cause } = report;
        // A late report speaks of the edit it belongs to, not the one it arrives with.
        let (subject, place) = match (late, cause) {
            (true, Cause::Edit) => (format!("An earlier edit of {shown}"), String::new()),
            (true, Cause::Command) => {
                (format!("An earlier command's change to {shown}"), String::new())
            }
            (false, Cause::Edit) => ("This edit".to_owned(), format!(" in {shown}")),
            (false, Cause::Command) => ("This command".to_owned(), format!(" in {shown}")),
        };
        match outcome {
            Outcome::Nothing => {}
            Outcome::Delta(delta) if delta.is_empty() => {}
            Outcome::Delta(delta) => {
                let new = delta.introduced.len();
                if new > 0 {
                    let _ = write!(
                        out,
                        "\n{subject} introduced {}{place} ({server}):",
                        plural(new, "error", "errors")
                    );
                    for diag in delta.introduced.iter().take(max_shown) {
                        let code =
                            diag.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
                        let message = diag.message.lines().next().unwrap_or("");
                        let _ = write!(
                            out,
                            "\n  {}:{}: {message}{code}",
                            diag.line + 1,
                            diag.character + 1
                        );
                    }
                    if new > max_shown {
                        let _ = write!(out, "\n  … and {} more", new - max_shown);
                    }
                    if delta.fixed > 0 {
                        let _ =
                            write!(out, "\nIt fixed {}.", plural(delta.fixed, "error", "errors"));
                    }
                } else {
                    let _ = write!(
                        out,
                        "\n{subject} fixed {}{place} ({server}); {} left.",
                        plural(delta.fixed, "error", "errors"),
                        delta.errors_now
                    );
                }
            }
            Outcome::Pending { waited } => {
                let _ = write!(
                    out,
                    "\nDiagnostics for {shown} are pending ({server} did not answer within {:.1} s); the next edit of {shown} brings them.",
                    waited.as_secs_f64()
                );
            }
            Outcome::Crashed => {
                let _ = write!(
                    out,
                    "\nNo diagnostics for {shown}: {server} exited; it restarts with the next edit."
                );
            }
            Outcome::NoAnswer => {}
            Outcome::TurnedOff { reason } => {
                let _ = write!(out, "\nNo diagnostics for {shown}: {reason}.");
            }
        }
    }
    out.trim_start_matches('\n').to_owned()
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{Diag, Severity};

    fn report(outcome: Outcome, late: bool) -> FileReport {
        let cause = Cause::Edit;
        FileReport {
            shown: "src/a.py".into(),
            server: "pyright-langserver".into(),
            outcome,
            late,
            cause,
        }
    }

    #[test]
    fn texts() {
        let diag = |line, message: &str| Diag {
            line,
            character: 4,
            severity: Severity::Error,
            message: message.into(),
            code: Some("reportAssignmentType".into()),
        };
        let introduced: Vec<Diag> =
            (0..7).map(|i| diag(i, "Type \"str\" is not assignable to \"int\"")).collect();
        let reports = [
            report(Outcome::Delta(Delta { introduced, fixed: 1, errors_now: 8 }), false),
            report(Outcome::Delta(Delta { introduced: vec![], fixed: 2, errors_now: 1 }), true),
            report(Outcome::Delta(Delta::default()), false),
            report(Outcome::Pending { waited: Duration::from_millis(1500) }, false),
            report(Outcome::Crashed, false),
            report(
                Outcome::TurnedOff {
                    reason: "x failed 3 times; diagnostics for python are off for this session"
                        .into(),
                },
                false,
            ),
        ];
        insta::assert_snapshot!(render(&reports, 5));
    }

    /// A command's change is reported as the command's, now and late.
    #[test]
    fn a_commands_change_is_named_as_such() {
        let delta = Delta { introduced: vec![], fixed: 1, errors_now: 0 };
        let mut now = report(Outcome::Delta(delta.clone()), false);
        now.cause = Cause::Command;
        let mut late = report(Outcome::Delta(delta), true);
        late.cause = Cause::Command;
        assert_eq!(
            render(&[now, late], 5),
            "This command fixed 1 error in src/a.py (pyright-langserver); 0 left.\n\
             An earlier command's change to src/a.py fixed 1 error (pyright-langserver); 0 left."
        );
    }
}
