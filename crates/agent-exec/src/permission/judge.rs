//! How one target of a call (a path, a shell segment, a domain) is judged, and how the
//! verdicts of all targets combine into the call's verdict.

use std::{
    path::{Path, PathBuf},
    sync::atomic::Ordering,
};

use agent_core::{ToolError, ToolErrorKind, ToolSpec};

use super::{
    Ask, Decision, PermissionMode, PermissionPolicy, Remedy, Verdict, environment,
    rule::{self, Rule, RuleAction, Specifier},
    safe,
    shell::{self, AnalysisError, Segment},
};

/// One thing a call touches, ready to be judged.
pub(super) enum Target<'a> {
    /// A call with no access list: judged by the tool's effects.
    Whole,
    Read(PathBuf),
    Write(PathBuf),
    /// A shell segment and the absolute directories it may run in.
    Segment(&'a Segment, &'a [PathBuf]),
    Unparsed {
        command: &'a str,
        error: &'a AnalysisError,
    },
    Network(Option<&'a str>),
}

/// A target's verdict before they are combined.
pub(super) enum Judged {
    /// Allowed by a rule, a session grant or the mode.
    Allow,
    /// A shell segment allowed only because it is a known read-only command (or only sets
    /// variables): the program it names, if it names one.
    ReadOnly(Option<String>),
    Ask(Ask),
    Deny(ToolError),
}

/// An ask that only a person's approval answers: no rule may approve it.
fn approval_only(reason: String) -> Judged {
    Judged::Ask(Ask { reason, remedy: Remedy::default() })
}

/// An ask that the rule `rule` (or a session grant of it) would answer.
fn rule_ask(reason: String, rule: String) -> Judged {
    Judged::Ask(Ask { reason, remedy: Remedy::rule(rule) })
}

/// Programs whose non-option arguments are paths they create or change. Protected paths and
/// `Edit(…)` rules apply to these arguments in every mode.
const FILE_CHANGERS: &[&str] = &[
    "mkdir", "touch", "mv", "cp", "rm", "rmdir", "ln", "chmod", "chown", "chgrp", "truncate",
    "tee", "install",
];

impl PermissionPolicy {
    /// A path outside the workspace is denied by the boundary, unless a deny rule says it first.
    pub(super) fn deny_rules_or(&self, spec: &ToolSpec, err: ToolError) -> Judged {
        match self.deny.iter().find(|rule| {
            rule.names_tool(&spec.rule_name) && matches!(rule.specifier, Specifier::Any)
        }) {
            Some(rule) => Judged::Deny(denied_by(rule)),
            None => Judged::Deny(err),
        }
    }

    pub(super) fn judge(&self, spec: &ToolSpec, target: &Target<'_>) -> Judged {
        // The paths a shell segment writes, resolved in every directory it may run in, so that
        // `Edit(…)` deny and ask rules see the real targets.
        let written = match target {
            Target::Segment(segment, dirs) => self.written_paths(segment, dirs),
            _ => Vec::new(),
        };
        let on_written = |rule: &&Rule| {
            written.iter().any(|path| applies(rule, spec, &Target::Write(path.clone())))
        };
        if let Some(rule) = self
            .deny
            .iter()
            .find(|rule| applies(rule, spec, target))
            .or_else(|| self.deny.iter().find(on_written))
        {
            return Judged::Deny(denied_by(rule));
        }
        // Plan mode never writes, whatever rules or answers say.
        if let (PermissionMode::Plan, Target::Write(_)) = (self.mode, target) {
            return self.mode_default(spec, target);
        }
        if let Some(rule) = self
            .ask
            .iter()
            .find(|rule| applies(rule, spec, target))
            .or_else(|| self.ask.iter().find(on_written))
        {
            return approval_only(format!(
                "ask rule `{}` ({}) matches, and it always asks",
                rule.text, rule.origin
            ));
        }
        let bypass = self.mode == PermissionMode::Bypass;
        match target {
            Target::Write(path) if self.protected.matches(path) => {
                return approval_only(format!(
                    "{} is a protected path, which always asks",
                    path.display()
                ));
            }
            Target::Read(path) | Target::Write(path) if !bypass && self.secrets.matches(path) => {
                let path_rule = self.allow.iter().any(|rule| {
                    matches!(rule.specifier, Specifier::Path(_)) && applies(rule, spec, target)
                });
                if path_rule {
                    return Judged::Allow;
                }
                let rule = self.path_rule(target, path);
                return rule_ask(format!("{} may hold secrets", path.display()), rule);
            }
            Target::Segment(segment, dirs) => {
                if let Some(judged) = self.judge_opaque(segment, dirs, bypass) {
                    // Plan mode refuses a command it would refuse anyway rather than ask.
                    if self.mode == PermissionMode::Plan
                        && let deny @ Judged::Deny(_) = self.mode_default(spec, target)
                    {
                        return deny;
                    }
                    return judged;
                }
                // What a segment that only sets variables sets is judged on the segments after
                // it, which carry the variables.
                if segment.sets_only {
                    return Judged::ReadOnly(None);
                }
            }
            Target::Unparsed { error, .. } if !bypass || self.has_command_denies => {
                return approval_only(format!(
                    "the command could not be parsed ({error}), and no rule approves a command that does not parse"
                ));
            }
            _ => {}
        }
        if self.allow.iter().any(|rule| applies(rule, spec, target)) {
            return Judged::Allow;
        }
        if self.has_grants.load(Ordering::Acquire)
            && self
                .grants
                .read()
                .is_ok_and(|grants| grants.rules.iter().any(|rule| applies(rule, spec, target)))
        {
            return Judged::Allow;
        }
        self.mode_default(spec, target)
    }

    /// Segments no rule can approve: opaque constructs, a directory known only at run time,
    /// redirections out of the workspace, and writes to protected paths.
    fn judge_opaque(&self, segment: &Segment, dirs: &[PathBuf], bypass: bool) -> Option<Judged> {
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
    fn written_paths(&self, segment: &Segment, dirs: &[PathBuf]) -> Vec<PathBuf> {
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

    fn mode_default(&self, spec: &ToolSpec, target: &Target<'_>) -> Judged {
        use PermissionMode as M;
        let mode = self.mode;
        let plan_deny = |what: &str| {
            Judged::Deny(ToolError::new(
                ToolErrorKind::PermissionDenied,
                format!(
                    "plan mode is read-only and {what}; describe the change in your plan instead, or ask the user to leave plan mode"
                ),
            ))
        };
        match target {
            Target::Whole => {
                let effects = spec.effects;
                let edits_only = !effects.runs_processes && !effects.network;
                match mode {
                    _ if effects.read_only || effects == agent_core::Effects::default() => {
                        Judged::Allow
                    }
                    M::Bypass => Judged::Allow,
                    M::AcceptEdits if edits_only => Judged::Allow,
                    M::Plan => plan_deny(&format!("`{}` has side effects", spec.name)),
                    M::Default | M::AcceptEdits | M::DontAsk => rule_ask(
                        format!("`{}` has side effects", spec.name),
                        spec.rule_name.clone(),
                    ),
                }
            }
            Target::Read(_) => Judged::Allow,
            Target::Write(path) => match mode {
                M::AcceptEdits | M::Bypass => Judged::Allow,
                M::Plan => plan_deny(&format!("`{}` would change {}", spec.name, path.display())),
                M::Default | M::DontAsk => Judged::Ask(Ask {
                    reason: format!(
                        "it would change {} and {mode} mode asks before edits",
                        path.display()
                    ),
                    remedy: Remedy {
                        rules: vec![self.path_rule(target, path)],
                        mode: Some(M::AcceptEdits),
                    },
                }),
            },
            Target::Segment(segment, dirs) => {
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
                let edit_like = variable.is_none()
                    && (self.is_file_operation(segment, dirs) || (writes && safe));
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
                    M::Default | M::AcceptEdits | M::DontAsk => match suggest_command_rule(segment)
                    {
                        Some(rule) => rule_ask(what, rule),
                        None => approval_only(what),
                    },
                }
            }
            // Only reachable in bypass mode, where the opaque checks let it through.
            Target::Unparsed { .. } => Judged::Allow,
            Target::Network(domain) => match mode {
                M::Bypass => Judged::Allow,
                M::Default | M::AcceptEdits | M::Plan | M::DontAsk => {
                    let (what, rule) = match domain {
                        None => ("the network", spec.rule_name.clone()),
                        Some(domain) => (*domain, format!("{}(domain:{domain})", spec.rule_name)),
                    };
                    rule_ask(format!("`{}` contacts {what}", spec.name), rule)
                }
            },
        }
    }

    /// The `Read(…)`/`Edit(…)` rule naming exactly this path.
    fn path_rule(&self, target: &Target<'_>, path: &Path) -> String {
        let tool = if matches!(target, Target::Write(_)) { "Edit" } else { "Read" };
        match path.strip_prefix(self.workspace.root()) {
            Ok(relative) => format!("{tool}(./{})", relative.display()),
            Err(_) => format!("{tool}(/{})", path.display()),
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

/// Combines target verdicts: any deny wins, then any ask.
#[derive(Default)]
pub(super) struct Combined {
    deny: Option<ToolError>,
    asks: Vec<Ask>,
    /// The programs of segments allowed only as read-only commands.
    read_only: Vec<String>,
    /// Whether some segment was allowed only as read-only.
    saw_read_only: bool,
    /// Whether some target was allowed by a rule, a grant or the mode.
    saw_allow: bool,
}

impl Combined {
    pub(super) fn add(&mut self, judged: Judged) {
        match judged {
            Judged::Allow => self.saw_allow = true,
            Judged::ReadOnly(program) => {
                self.saw_read_only = true;
                if let Some(program) = program
                    && !self.read_only.contains(&program)
                {
                    self.read_only.push(program);
                }
            }
            Judged::Ask(ask) => self.asks.push(ask),
            Judged::Deny(err) => {
                if self.deny.is_none() {
                    self.deny = Some(err);
                }
            }
        }
    }

    /// The call's verdict. An ask's remedy holds only what would allow every target: the rules
    /// of all targets when each has some, and a mode when each names one (the most permissive).
    pub(super) fn finish(self) -> Decision {
        let decided = |verdict| Decision { verdict, read_only_programs: None };
        if let Some(err) = self.deny {
            return decided(Verdict::Deny(err));
        }
        let mut asks = self.asks.into_iter();
        let Some(mut first) = asks.next() else {
            let programs = (self.saw_read_only && !self.saw_allow).then_some(self.read_only);
            return Decision { verdict: Verdict::Allow, read_only_programs: programs };
        };
        let mut all_rules = !first.remedy.rules.is_empty();
        for ask in asks {
            all_rules &= !ask.remedy.rules.is_empty();
            for rule in ask.remedy.rules {
                if !first.remedy.rules.contains(&rule) {
                    first.remedy.rules.push(rule);
                }
            }
            first.remedy.mode = match (first.remedy.mode, ask.remedy.mode) {
                (Some(a), Some(b)) => Some(if rank(a) >= rank(b) { a } else { b }),
                _ => None,
            };
        }
        if !all_rules {
            first.remedy.rules.clear();
        }
        decided(Verdict::Ask(first))
    }
}

/// How much a mode lets through without asking, for combining remedies.
fn rank(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Plan => 0,
        PermissionMode::Default | PermissionMode::DontAsk => 1,
        PermissionMode::AcceptEdits => 2,
        PermissionMode::Bypass => 3,
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

/// Whether a rule applies to a target of a call of `spec`.
fn applies(rule: &Rule, spec: &ToolSpec, target: &Target<'_>) -> bool {
    let same_tool = rule.names_tool(&spec.rule_name);
    match (&rule.specifier, target) {
        (Specifier::Any, _) => same_tool,
        (Specifier::Never, _) => false,
        (Specifier::Command(pattern), Target::Segment(segment, _)) => {
            (same_tool || rule.tool == "Bash")
                && pattern.matches(
                    &segment.text(),
                    &segment.assigns,
                    rule.action == RuleAction::Allow,
                )
        }
        // A deny or ask rule sees an unparsed command as its raw text.
        (Specifier::Command(pattern), Target::Unparsed { command, .. }) => {
            rule.action != RuleAction::Allow
                && (same_tool || rule.tool == "Bash")
                && rule::command_matches(&pattern.raw, command.trim())
        }
        (Specifier::Path(set), Target::Read(path)) => {
            (same_tool || rule.tool == "Read") && set.matches(path)
        }
        (Specifier::Path(set), Target::Write(path)) => {
            (same_tool || rule.tool == "Edit" || rule.tool == "Write") && set.matches(path)
        }
        // A rule naming a domain says nothing about a call that may contact any domain.
        (Specifier::Domain(domain), Target::Network(target)) => {
            same_tool && target.is_some_and(|target| rule::domain_matches(domain, target))
        }
        (Specifier::Command(_) | Specifier::Path(_) | Specifier::Domain(_), _) => false,
    }
}

fn denied_by(rule: &Rule) -> ToolError {
    ToolError::new(
        ToolErrorKind::PermissionDenied,
        format!(
            "blocked by deny rule `{}` ({}); do not retry this call; ask the user or choose another approach",
            rule.text, rule.origin
        ),
    )
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
