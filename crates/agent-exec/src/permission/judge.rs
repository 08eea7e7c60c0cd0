//! How one target of a call (a path, a shell segment, a domain) is judged, and how the
//! verdicts of all targets combine into the call's verdict. Rules and protected paths apply to
//! every kind here; what the mode answers for each kind when no rule does lives in its module.

mod command;
mod effects;
mod network;
mod path;

use std::{path::PathBuf, sync::atomic::Ordering};

use agent_core::{ToolError, ToolErrorKind, ToolSpec};

use super::{
    Ask, Decision, PermissionMode, PermissionPolicy, Remedy, Verdict,
    rule::{self, Rule, RuleAction, Specifier},
    shell::{AnalysisError, Segment},
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

/// Plan mode's refusal of a call that would do `what`.
fn plan_deny(what: &str) -> Judged {
    Judged::Deny(ToolError::new(
        ToolErrorKind::PermissionDenied,
        format!(
            "plan mode is read-only and {what}; describe the change in your plan instead, or ask the user to leave plan mode"
        ),
    ))
}

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
                return self.judge_secret(spec, target, path);
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

    /// What the mode answers for a target no rule or grant decides; each kind's answer lives in
    /// the kind's module.
    fn mode_default(&self, spec: &ToolSpec, target: &Target<'_>) -> Judged {
        match target {
            Target::Whole => self.effects_default(spec),
            Target::Read(_) => Judged::Allow,
            Target::Write(path) => self.write_default(spec, target, path),
            Target::Segment(segment, dirs) => self.segment_default(segment, dirs),
            // Only reachable in bypass mode, where the opaque checks let it through.
            Target::Unparsed { .. } => Judged::Allow,
            Target::Network(domain) => self.network_default(spec, *domain),
        }
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
