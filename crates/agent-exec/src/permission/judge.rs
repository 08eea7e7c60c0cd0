//! How one target of a call (a path, a shell segment, a domain) is judged, and how the
//! verdicts of all targets combine into the call's verdict.

use std::{
    path::{Path, PathBuf},
    sync::atomic::Ordering,
};

use agent_core::{ToolError, ToolErrorKind, ToolSpec};

use super::{
    Ask, PermissionMode, PermissionPolicy, Verdict,
    rule::{self, Rule, RuleAction, Specifier},
    safe,
    shell::{self, Segment},
};

/// One thing a call touches, ready to be judged.
pub(super) enum Target<'a> {
    /// A call with no access list: judged by the tool's effects.
    Whole,
    Read(PathBuf),
    Write(PathBuf),
    Segment(&'a Segment),
    Unparsed {
        command: &'a str,
        error: &'a str,
    },
    Network(&'a str),
}

/// A target's verdict before they are combined.
pub(super) enum Judged {
    Allow,
    Ask(Ask, bool),
    Deny(ToolError),
}

impl PermissionPolicy {
    /// A path outside the workspace is denied by the boundary, unless a deny rule says it first.
    pub(super) fn deny_rules_or(&self, spec: &ToolSpec, err: ToolError) -> Judged {
        match self
            .deny
            .iter()
            .find(|rule| rule.tool == spec.rule_name && matches!(rule.specifier, Specifier::Any))
        {
            Some(rule) => Judged::Deny(denied_by(rule)),
            None => Judged::Deny(err),
        }
    }

    pub(super) fn judge(&self, spec: &ToolSpec, target: &Target<'_>) -> Judged {
        if let Some(rule) = self.deny.iter().find(|rule| applies(rule, spec, target)) {
            return Judged::Deny(denied_by(rule));
        }
        // Plan mode never writes, whatever rules or answers say.
        if let (PermissionMode::Plan, Target::Write(_)) = (self.mode, target) {
            return self.mode_default(spec, target);
        }
        if let Some(rule) = self.ask.iter().find(|rule| applies(rule, spec, target)) {
            let ask = Ask {
                reason: format!("ask rule `{}` ({}) matches", rule.text, rule.origin),
                hint: format!(
                    "approve it in an interactive session (the ask rule `{}` always asks)",
                    rule.text
                ),
                suggested_rules: Vec::new(),
            };
            return Judged::Ask(ask, false);
        }
        let bypass = self.mode == PermissionMode::Bypass;
        match target {
            Target::Write(path) if self.protected.matches(path) => {
                return Judged::Ask(
                    Ask {
                        reason: format!("{} is a protected path", path.display()),
                        hint: "approve it in an interactive session (protected paths always ask)"
                            .to_owned(),
                        suggested_rules: Vec::new(),
                    },
                    false,
                );
            }
            Target::Read(path) | Target::Write(path) if !bypass && self.secrets.matches(path) => {
                let path_rule = self.allow.iter().any(|rule| {
                    matches!(rule.specifier, Specifier::Path(_)) && applies(rule, spec, target)
                });
                if path_rule {
                    return Judged::Allow;
                }
                let rule = self.path_rule(target, path);
                return Judged::Ask(
                    Ask {
                        reason: format!("{} may hold secrets", path.display()),
                        hint: format!("rerun with --allow '{rule}'"),
                        suggested_rules: vec![rule],
                    },
                    true,
                );
            }
            Target::Segment(segment) => {
                if let Some(judged) = self.judge_opaque(segment, bypass) {
                    return judged;
                }
            }
            Target::Unparsed { error, .. } if !bypass || self.has_command_denies => {
                return Judged::Ask(
                    Ask {
                        reason: format!("the command could not be parsed ({error})"),
                        hint: "approve it in an interactive session (a command that does not parse is never approved by a rule)".to_owned(),
                        suggested_rules: Vec::new(),
                    },
                    false,
                );
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

    /// Segments no rule can approve: opaque constructs and redirections out of the workspace.
    fn judge_opaque(&self, segment: &Segment, bypass: bool) -> Option<Judged> {
        let opaque_ask = |reason: String| {
            Judged::Ask(
                Ask {
                    reason,
                    hint: "approve it in an interactive session or rerun with --permission-mode bypass (no rule can approve this command)".to_owned(),
                    suggested_rules: Vec::new(),
                },
                false,
            )
        };
        if let Some(danger) = segment.danger
            && (!bypass || self.has_command_denies)
        {
            return Some(opaque_ask(format!(
                "the command uses {danger}, which no rule can approve"
            )));
        }
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
            match self.workspace.resolve_for_write(&target.path) {
                Ok(path) if self.protected.matches(&path) => {
                    return Some(Judged::Ask(
                        Ask {
                            reason: format!(
                                "the command writes to {}, a protected path",
                                path.display()
                            ),
                            hint:
                                "approve it in an interactive session (protected paths always ask)"
                                    .to_owned(),
                            suggested_rules: Vec::new(),
                        },
                        false,
                    ));
                }
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
        None
    }

    fn mode_default(&self, spec: &ToolSpec, target: &Target<'_>) -> Judged {
        use PermissionMode as M;
        let mode = self.mode;
        let plan_deny = |what: &str| {
            Judged::Deny(ToolError::new(
                ToolErrorKind::PermissionDenied,
                format!(
                    "plan mode is read-only and {what}; describe the change in your plan instead, or ask the user to switch with --permission-mode default"
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
                    M::Default | M::AcceptEdits | M::DontAsk => Judged::Ask(
                        Ask {
                            reason: format!("`{}` has side effects", spec.name),
                            hint: format!("rerun with --allow '{}'", spec.rule_name),
                            suggested_rules: vec![spec.rule_name.clone()],
                        },
                        true,
                    ),
                }
            }
            Target::Read(_) => Judged::Allow,
            Target::Write(path) => match mode {
                M::AcceptEdits | M::Bypass => Judged::Allow,
                M::Plan => plan_deny(&format!("`{}` would change {}", spec.name, path.display())),
                M::Default | M::DontAsk => {
                    let rule = self.path_rule(target, path);
                    Judged::Ask(
                        Ask {
                            reason: format!(
                                "it would change {} and {mode} mode asks before edits",
                                path.display()
                            ),
                            hint: format!(
                                "rerun with --permission-mode accept-edits or --allow '{rule}'"
                            ),
                            suggested_rules: vec![rule],
                        },
                        true,
                    )
                }
            },
            Target::Segment(segment) => {
                let writes = segment.writes.iter().any(|target| !is_device(&target.path));
                if !writes && !self.mentions_secret(segment) && safe::is_safe(&segment.words) {
                    return Judged::Allow;
                }
                let edit_like =
                    self.is_file_operation(segment) || (writes && safe::is_safe(&segment.words));
                match mode {
                    M::Bypass => Judged::Allow,
                    M::AcceptEdits if edit_like => Judged::Allow,
                    M::Plan => plan_deny(&format!("`{}` may change things", segment.text())),
                    M::Default | M::AcceptEdits | M::DontAsk => {
                        let rule = suggest_command_rule(segment);
                        Judged::Ask(
                            Ask {
                                reason: format!(
                                    "`{}` is not a known read-only command",
                                    segment.text()
                                ),
                                hint: format!("rerun with --allow '{rule}'"),
                                suggested_rules: vec![rule],
                            },
                            true,
                        )
                    }
                }
            }
            // Only reachable in bypass mode, where the opaque checks let it through.
            Target::Unparsed { .. } => Judged::Allow,
            Target::Network(domain) => match mode {
                M::Bypass => Judged::Allow,
                M::Default | M::AcceptEdits | M::Plan | M::DontAsk => {
                    let rule = if domain.is_empty() {
                        spec.rule_name.clone()
                    } else {
                        format!("{}(domain:{domain})", spec.rule_name)
                    };
                    let what = if domain.is_empty() { "the network" } else { domain };
                    Judged::Ask(
                        Ask {
                            reason: format!("`{}` contacts {what}", spec.name),
                            hint: format!("rerun with --allow '{rule}'"),
                            suggested_rules: vec![rule],
                        },
                        true,
                    )
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

    /// Whether an argument of the segment names a secret file (`cat .env`), which keeps an
    /// otherwise safe command from running unasked.
    fn mentions_secret(&self, segment: &Segment) -> bool {
        segment.words.iter().skip(1).any(|word| {
            !word.starts_with('-') && self.secrets.matches(&self.workspace.root().join(word))
        })
    }

    /// `mkdir`, `touch`, `mv`, `cp` whose path arguments all stay inside the workspace and off
    /// protected paths: what accept-edits mode lets through as an edit.
    fn is_file_operation(&self, segment: &Segment) -> bool {
        let Some(program) = segment.words.first() else { return false };
        if !matches!(program.as_str(), "mkdir" | "touch" | "mv" | "cp") || segment.expands {
            return false;
        }
        segment.words[1..].iter().filter(|word| !word.starts_with('-')).all(|word| {
            self.workspace.resolve_for_write(word).is_ok_and(|path| !self.protected.matches(&path))
        })
    }
}

/// Combines target verdicts: any deny wins, then any ask.
#[derive(Default)]
pub(super) struct Combined {
    deny: Option<ToolError>,
    asks: Vec<(Ask, bool)>,
}

impl Combined {
    pub(super) fn add(&mut self, judged: Judged) {
        match judged {
            Judged::Allow => {}
            Judged::Ask(ask, suggestable) => self.asks.push((ask, suggestable)),
            Judged::Deny(err) => {
                if self.deny.is_none() {
                    self.deny = Some(err);
                }
            }
        }
    }

    pub(super) fn finish(self) -> Verdict {
        if let Some(err) = self.deny {
            return Verdict::Deny(err);
        }
        let mut asks = self.asks.into_iter();
        let Some((mut first, mut all_suggestable)) = asks.next() else { return Verdict::Allow };
        for (ask, suggestable) in asks {
            all_suggestable &= suggestable;
            if !first.hint.contains(&ask.hint) {
                first.hint = format!("{} and {}", first.hint, ask.hint);
            }
            for rule in ask.suggested_rules {
                if !first.suggested_rules.contains(&rule) {
                    first.suggested_rules.push(rule);
                }
            }
        }
        if !all_suggestable {
            first.suggested_rules.clear();
        }
        Verdict::Ask(first)
    }
}

/// Whether a rule applies to a target of a call of `spec`.
fn applies(rule: &Rule, spec: &ToolSpec, target: &Target<'_>) -> bool {
    let same_tool = rule.tool == spec.rule_name;
    match (&rule.specifier, target) {
        (Specifier::Any, _) => same_tool,
        (Specifier::Never, _) => false,
        (Specifier::Command(pattern), Target::Segment(segment)) => {
            (same_tool || rule.tool == "Bash") && rule::command_matches(pattern, &segment.text())
        }
        // A deny or ask rule sees an unparsed command as its raw text.
        (Specifier::Command(pattern), Target::Unparsed { command, .. }) => {
            rule.action != RuleAction::Allow
                && (same_tool || rule.tool == "Bash")
                && rule::command_matches(pattern, command.trim())
        }
        (Specifier::Path(set), Target::Read(path)) => {
            (same_tool || rule.tool == "Read") && set.matches(path)
        }
        (Specifier::Path(set), Target::Write(path)) => {
            (same_tool || rule.tool == "Edit" || rule.tool == "Write") && set.matches(path)
        }
        (Specifier::Domain(domain), Target::Network(target)) => {
            same_tool && rule::domain_matches(domain, target)
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
/// exact command for interpreters and shells, where a prefix would allow any code.
fn suggest_command_rule(segment: &Segment) -> String {
    let words = &segment.words;
    let Some(program) = words.first() else { return "Bash".to_owned() };
    if shell::INTERPRETERS.contains(&program.as_str()) {
        return format!("Bash({})", segment.text());
    }
    match words.get(1) {
        Some(sub)
            if !sub.starts_with('-')
                && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            format!("Bash({program} {sub} *)")
        }
        _ => format!("Bash({program} *)"),
    }
}

fn is_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
}
