//! The permission policy: modes, allow / ask / deny rules, and how one call is judged.
//!
//! A call is judged on what it will touch (its [`Access`] list, reported by the tool's `prepare`):
//! each path, each shell segment and each domain is a target, judged in the order deny rules →
//! workspace boundary → ask rules → protected paths, secrets and opaque commands → allow rules →
//! the mode's default. Any denied target denies the call; any target that asks makes it ask.

mod approver;
mod paths;
mod rule;
mod safe;
mod shell;

use std::{
    collections::HashSet,
    fmt,
    path::{Path, PathBuf},
    str::FromStr,
    sync::{
        RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_core::{Access, ToolError, ToolErrorKind, ToolSpec};

pub(crate) use self::paths::PathSet;
pub use self::{
    approver::{Approval, ApprovalRequest, Approver},
    rule::{RuleAction, RuleWarning},
};
use self::{
    rule::{Rule, Specifier},
    shell::Segment,
};
use crate::{
    error::{Error, Result},
    workspace::Workspace,
};

/// How much runs without asking. See `docs/permissions.md` for the full table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PermissionMode {
    /// Reads and safe read-only commands run; edits, other commands and network ask.
    #[default]
    Default,
    /// Like `Default`, plus edits and file-moving commands inside the workspace.
    AcceptEdits,
    /// Read-only: anything that would change state is denied.
    Plan,
    /// Non-interactive: what rules and the safe list do not allow is denied, never asked.
    DontAsk,
    /// Everything runs, except deny rules and protected paths (which still ask).
    Bypass,
}

impl PermissionMode {
    /// The mode's name as the `--permission-mode` flag spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dont-ask",
            PermissionMode::Bypass => "bypass",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "default" => Ok(PermissionMode::Default),
            "accept-edits" | "acceptEdits" => Ok(PermissionMode::AcceptEdits),
            "plan" => Ok(PermissionMode::Plan),
            "dont-ask" | "dontAsk" => Ok(PermissionMode::DontAsk),
            "bypass" | "bypassPermissions" => Ok(PermissionMode::Bypass),
            other => Err(Error::Mode(other.to_owned())),
        }
    }
}

/// The policy's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the approver.
    Ask(Ask),
    /// Refuse, with the observation the model reads.
    Deny(ToolError),
}

/// Why a call needs approval, and what would allow it without asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Why the policy asks, in one line.
    pub reason: String,
    /// The flag or rule that would allow the call (`--allow 'Bash(cargo test *)'`).
    pub hint: String,
    /// Rules an "allow for session" answer adds; empty when none is safe to suggest.
    pub suggested_rules: Vec<String>,
}

/// Builds a [`PermissionPolicy`] from a mode and rules.
#[derive(Debug)]
pub struct PolicyBuilder {
    workspace: Workspace,
    mode: PermissionMode,
    rules: Vec<Rule>,
    known: Vec<String>,
    warnings: Vec<RuleWarning>,
}

impl PolicyBuilder {
    /// A policy for `workspace` in `mode`, with no rules yet.
    pub fn new(workspace: Workspace, mode: PermissionMode) -> Self {
        Self { workspace, mode, rules: Vec::new(), known: Vec::new(), warnings: Vec::new() }
    }

    /// Declares a rule name besides the built-in ones (`Bash`, `Read`, `Edit`, …) so that rules
    /// naming it do not warn. Call it before adding those rules.
    pub fn known_tool(&mut self, rule_name: &str) -> &mut Self {
        self.known.push(rule_name.to_owned());
        self
    }

    /// Adds a rule such as `Bash(cargo test *)`; `origin` says where it came from (`--allow`,
    /// a settings file) and appears in messages. A rule that does not parse is an error; a rule
    /// that can never match is kept inert and reported by [`PermissionPolicy::warnings`].
    pub fn rule(&mut self, action: RuleAction, text: &str, origin: &str) -> Result<&mut Self> {
        let (rule, warning) =
            Rule::parse(action, text, origin, self.workspace.root(), &self.known)?;
        self.warnings.extend(warning);
        self.rules.push(rule);
        Ok(self)
    }

    /// The policy. Allow rules with absolute path specifiers also open those paths in the
    /// workspace the policy hands to tools ([`PermissionPolicy::workspace`]).
    pub fn build(self) -> PermissionPolicy {
        let mut outside_read = Vec::new();
        let mut outside_write = Vec::new();
        let (mut allow, mut ask, mut deny) = (Vec::new(), Vec::new(), Vec::new());
        for rule in self.rules {
            match rule.action {
                RuleAction::Allow => {
                    if let Specifier::Path(set) = &rule.specifier {
                        match rule.tool.as_str() {
                            "Edit" | "Write" => outside_write.push(set.clone()),
                            _ => outside_read.push(set.clone()),
                        }
                    }
                    allow.push(rule);
                }
                RuleAction::Ask => ask.push(rule),
                RuleAction::Deny => deny.push(rule),
            }
        }
        let workspace = self
            .workspace
            .with_outside(PathSet::union(outside_read), PathSet::union(outside_write));
        let has_command_denies =
            deny.iter().any(|rule| matches!(rule.specifier, Specifier::Command(_)));
        PermissionPolicy {
            mode: self.mode,
            workspace,
            allow,
            ask,
            deny,
            has_command_denies,
            warnings: self.warnings,
            protected: paths::builtin(paths::PROTECTED),
            secrets: paths::builtin(paths::SECRETS),
            grants: RwLock::default(),
            has_grants: AtomicBool::new(false),
        }
    }
}

/// The permission policy of a session: mode, rules, workspace, and what the user allowed for the
/// session.
#[derive(Debug)]
pub struct PermissionPolicy {
    mode: PermissionMode,
    workspace: Workspace,
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    has_command_denies: bool,
    warnings: Vec<RuleWarning>,
    protected: PathSet,
    secrets: PathSet,
    grants: RwLock<Grants>,
    has_grants: AtomicBool,
}

#[derive(Debug, Default)]
struct Grants {
    rules: Vec<Rule>,
    exact: HashSet<String>,
}

/// One thing a call touches, ready to be judged.
enum Target<'a> {
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
enum Judged {
    Allow,
    Ask(Ask, bool),
    Deny(ToolError),
}

impl PermissionPolicy {
    /// A policy with no rules.
    pub fn new(workspace: Workspace, mode: PermissionMode) -> Self {
        PolicyBuilder::new(workspace, mode).build()
    }

    /// The mode.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// The workspace tools must resolve their paths with: the root, plus the outside paths that
    /// allow rules open.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Rules that parsed but can never match.
    pub fn warnings(&self) -> &[RuleWarning] {
        &self.warnings
    }

    /// Whether the tool is offered to the model at all: a bare deny rule removes it, and plan mode
    /// removes tools that write files or run processes.
    pub fn offers(&self, spec: &ToolSpec) -> bool {
        let denied = self
            .deny
            .iter()
            .any(|rule| matches!(rule.specifier, Specifier::Any) && rule.tool == spec.rule_name);
        let mutating = spec.effects.writes_files || spec.effects.runs_processes;
        let hidden_by_plan = self.mode == PermissionMode::Plan && mutating;
        !(denied || hidden_by_plan)
    }

    /// Judges one call of `spec` that will touch `access`.
    pub fn evaluate(&self, spec: &ToolSpec, access: &[Access]) -> Verdict {
        let mut combined = Combined::default();
        if access.is_empty() {
            // The common case of a pure tool: one target, nothing to combine.
            match self.judge(spec, &Target::Whole) {
                Judged::Allow => return Verdict::Allow,
                Judged::Deny(err) => return Verdict::Deny(err),
                judged @ Judged::Ask(..) => combined.add(judged),
            }
        }
        for item in access {
            match item {
                Access::Read(path) => match self.workspace.resolve(path) {
                    Ok(path) => combined.add(self.judge(spec, &Target::Read(path))),
                    Err(err) => combined.add(self.deny_rules_or(spec, err, path)),
                },
                Access::Write(path) => match self.workspace.resolve_for_write(path) {
                    Ok(path) => combined.add(self.judge(spec, &Target::Write(path))),
                    Err(err) => combined.add(self.deny_rules_or(spec, err, path)),
                },
                Access::Command(command) => match shell::analyze(command) {
                    Ok(segments) => {
                        for segment in &segments {
                            combined.add(self.judge(spec, &Target::Segment(segment)));
                        }
                    }
                    Err(error) => {
                        let target = Target::Unparsed { command, error: &error };
                        combined.add(self.judge(spec, &target));
                    }
                },
                Access::Network(domain) => combined.add(self.judge(spec, &Target::Network(domain))),
            }
        }
        match combined.finish() {
            Verdict::Ask(ask) if self.has_grants.load(Ordering::Acquire) => {
                let granted = self
                    .grants
                    .read()
                    .is_ok_and(|grants| grants.exact.contains(&exact_key(spec, access)));
                if granted { Verdict::Allow } else { Verdict::Ask(ask) }
            }
            verdict => verdict,
        }
    }

    /// Records an "allow for session" answer: the suggested rules when there are some, otherwise
    /// this exact tool and access.
    pub fn grant_for_session(&self, spec: &ToolSpec, access: &[Access], ask: &Ask) {
        let Ok(mut grants) = self.grants.write() else { return };
        let mut added = false;
        for text in &ask.suggested_rules {
            if let Ok((rule, None)) =
                Rule::parse(RuleAction::Allow, text, "session", self.workspace.root(), &[])
            {
                grants.rules.push(rule);
                added = true;
            }
        }
        if !added {
            grants.exact.insert(exact_key(spec, access));
        }
        self.has_grants.store(true, Ordering::Release);
    }

    /// The observation for a call that needs approval when nobody can be asked.
    pub fn unanswered(&self, spec: &ToolSpec, ask: &Ask) -> ToolError {
        let why = if self.mode == PermissionMode::DontAsk {
            "the permission mode is dont-ask"
        } else {
            "this run is non-interactive"
        };
        ToolError::new(
            ToolErrorKind::PermissionDenied,
            format!(
                "`{}` needs approval ({}) and {why}, so it was not run; to allow it, {}. Do not retry this call unchanged",
                spec.name, ask.reason, ask.hint
            ),
        )
    }

    /// A path outside the workspace is denied by the boundary, unless a deny rule says it first.
    fn deny_rules_or(&self, spec: &ToolSpec, err: ToolError, _given: &str) -> Judged {
        match self
            .deny
            .iter()
            .find(|rule| rule.tool == spec.rule_name && matches!(rule.specifier, Specifier::Any))
        {
            Some(rule) => Judged::Deny(denied_by(rule)),
            None => Judged::Deny(err),
        }
    }

    fn judge(&self, spec: &ToolSpec, target: &Target<'_>) -> Judged {
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
struct Combined {
    deny: Option<ToolError>,
    asks: Vec<(Ask, bool)>,
}

impl Combined {
    fn add(&mut self, judged: Judged) {
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

    fn finish(self) -> Verdict {
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

fn exact_key(spec: &ToolSpec, access: &[Access]) -> String {
    format!("{}\u{0}{access:?}", spec.name)
}
