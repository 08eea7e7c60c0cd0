//! The permission policy: modes, allow / ask / deny rules, and how one call is judged.
//!
//! A call is judged on what it will touch (its [`Access`] list, reported by the tool's `prepare`):
//! each path, each shell segment and each domain is a target, judged in the order deny rules →
//! workspace boundary → ask rules → protected paths, secrets and opaque commands → allow rules →
//! the mode's default. Any denied target denies the call; any target that asks makes it ask.

mod approver;
mod environment;
mod judge;
mod narrow;
mod paths;
mod rule;
mod safe;
mod secrets;
pub(crate) mod shell;

use std::{
    collections::HashSet,
    fmt,
    str::FromStr,
    sync::{
        RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_core::{Access, ToolError, ToolErrorKind, ToolSpec};
use serde::Serialize;

use self::judge::{Combined, Judged, Target};
pub(crate) use self::rule::{KnownTool, Rule, Specifier, domain_matches};
pub use self::{
    approver::{Approval, ApprovalRequest, Approver},
    rule::{RuleAction, RuleWarning},
    secrets::secrets_for_rules,
};
use crate::{
    error::{Error, Result},
    secret::{SecretFiles, Secrets},
    workspace::Workspace,
};
pub(crate) use agent_sandbox::paths::PathSet;

/// How much runs without asking. See `docs/permissions.md` for the full table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
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
    /// The mode's name: `default`, `accept-edits`, `plan`, `dont-ask` or `bypass`.
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

/// The policy's answer for one call, with what the executor must enforce when the call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Run, ask or refuse.
    pub verdict: Verdict,
    /// For a command allowed only because every segment is a known read-only command (not by a
    /// rule, a grant, the mode or a person): the programs it names (`git`, `ls`; shell built-ins
    /// included). The executor hands them to the tool, which lets the process execute nothing
    /// else ([`agent_core::ToolContext::exec_allowlist`]). `None` otherwise.
    pub read_only_programs: Option<Vec<String>>,
}

/// Why a call needs approval, and what would allow it without asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Why the policy asks, in one line.
    pub reason: String,
    /// What would let such calls run without asking.
    pub remedy: Remedy,
}

/// What would let a call run without asking, as data: each front end words it in its own terms
/// (a command-line flag, a settings entry, a button). Both parts empty means only a person's
/// approval can let it run (protected paths, ask rules, commands no rule can approve).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Remedy {
    /// Allow rules that together cover the call (`Bash(cargo test *)`, `Edit(./src/main.rs)`):
    /// the narrowest that would, never an interpreter prefix or `*`. An "allow for session"
    /// answer adds them. Empty when no rule is safe to suggest.
    pub rules: Vec<String>,
    /// A permission mode in which the call would run without asking, when one is proportionate:
    /// `accept-edits` for an edit, `bypass` for a command no rule can approve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<PermissionMode>,
}

impl Remedy {
    /// A remedy of one rule.
    fn rule(rule: String) -> Self {
        Self { rules: vec![rule], mode: None }
    }

    /// How the user can allow the call, worded for the model without naming any front end's
    /// flags: "the user can allow it with the rule `Bash(cargo test *)`".
    pub fn describe(&self) -> String {
        let rules = match self.rules.as_slice() {
            [] => String::new(),
            [rule] => format!("the rule `{rule}`"),
            rules => {
                let quoted: Vec<String> = rules.iter().map(|rule| format!("`{rule}`")).collect();
                format!("the rules {}", quoted.join(" and "))
            }
        };
        match (self.mode, rules.is_empty()) {
            (None, true) => "only the user can allow it, by approving it when asked".to_owned(),
            (None, false) => format!("the user can allow it with {rules}"),
            (Some(mode), true) => format!(
                "the user can allow it only by approving it when asked or by switching to the {mode} permission mode"
            ),
            (Some(mode), false) => {
                format!(
                    "the user can allow it with {rules}, or by switching to the {mode} permission mode"
                )
            }
        }
    }
}

/// Builds a [`PermissionPolicy`] from a mode and rules.
#[derive(Debug)]
pub struct PolicyBuilder {
    workspace: Workspace,
    secrets: SecretFiles,
    mode: PermissionMode,
    rules: Vec<Rule>,
    known: Vec<KnownTool>,
    warnings: Vec<RuleWarning>,
}

impl PolicyBuilder {
    /// A policy for `workspace` in `mode`, with no rules yet.
    pub fn new(workspace: Workspace, mode: PermissionMode) -> Self {
        Self {
            workspace,
            secrets: SecretFiles::default(),
            mode,
            rules: Vec::new(),
            known: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Sets which files count as secrets (the built-in [`SecretFiles`] by default).
    pub fn secret_files(&mut self, files: SecretFiles) -> &mut Self {
        self.secrets = files;
        self
    }

    /// Declares a rule name besides the built-in ones (`Bash`, `Read`, `Edit`, …) so that rules
    /// naming it do not warn. Call it before adding those rules.
    pub fn known_tool(&mut self, rule_name: &str) -> &mut Self {
        self.known.push(KnownTool { rule_name: rule_name.to_owned(), domains: false });
        self
    }

    /// Declares a registered tool by its spec, as [`AgentBuilder`](crate::AgentBuilder) does for
    /// every tool it registers: its rule name is known, and a network-only tool (effects
    /// [`Effects::NETWORK`](agent_core::Effects::NETWORK), such as web search) takes
    /// `domain:<name>` specifiers, where any other tool's specifier is a path pattern.
    pub fn known_spec(&mut self, spec: &ToolSpec) -> &mut Self {
        let domains = spec.effects == agent_core::Effects::NETWORK;
        self.known.push(KnownTool { rule_name: spec.rule_name.clone(), domains });
        self
    }

    /// Adds a rule such as `Bash(cargo test *)`; `origin` says where it came from (a flag,
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
        let mut revealed = Vec::new();
        let (mut allow, mut ask, mut deny) = (Vec::new(), Vec::new(), Vec::new());
        for rule in self.rules {
            match rule.action {
                RuleAction::Allow => {
                    if let Specifier::Path(set) = &rule.specifier {
                        match rule.tool.as_str() {
                            "Edit" | "Write" => outside_write.push(set.clone()),
                            _ => outside_read.push(set.clone()),
                        }
                        if rule.tool == "Read" {
                            revealed.push(set.clone());
                        }
                    }
                    allow.push(rule);
                }
                RuleAction::Ask => ask.push(rule),
                RuleAction::Deny => deny.push(rule),
            }
        }
        let secrets = Secrets::with_revealed(self.secrets, PathSet::union(revealed));
        let secret_paths = secrets.path_set();
        let workspace = self
            .workspace
            .with_outside(PathSet::union(outside_read), PathSet::union(outside_write))
            .with_secrets(secrets);
        // The policy judges the path a tool names; walks below it consult these instead.
        let read_denied = deny
            .iter()
            .filter_map(|rule: &Rule| match &rule.specifier {
                Specifier::Path(set) if rule.tool == "Read" => {
                    Some((rule.text.clone(), set.clone()))
                }
                _ => None,
            })
            .collect();
        let workspace = workspace.with_read_denied(read_denied);
        // Network tools check some things themselves (a server on loopback, a redirect to
        // another host) and ask the boundary what the domain rules say.
        let domain_rules = deny
            .iter()
            .map(|rule| (true, rule))
            .chain(allow.iter().map(|rule| (false, rule)))
            .filter_map(|(is_deny, rule)| match &rule.specifier {
                Specifier::Domain(domain) => {
                    Some((is_deny, rule.tool.clone(), domain.clone(), rule.text.clone()))
                }
                _ => None,
            })
            .collect();
        let workspace = workspace.with_domain_rules(domain_rules);
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
            secrets: secret_paths,
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

#[derive(Debug, Default, Clone)]
struct Grants {
    rules: Vec<Rule>,
    exact: HashSet<String>,
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

    /// Changes the mode from the next call on (an editor's mode switch); rules and the session's
    /// grants are kept.
    pub fn set_mode(&mut self, mode: PermissionMode) {
        self.mode = mode;
    }

    /// The workspace tools must resolve their paths with: the root, plus the outside paths that
    /// allow rules open.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The session's secret files, with what its `Read(…)` allow rules expose: hand it to the
    /// sandbox ([`crate::sandbox::SandboxConfig::secrets`]) so commands see what the rules expose.
    pub fn secrets(&self) -> &Secrets {
        self.workspace.secrets()
    }

    /// Rules that parsed but can never match.
    pub fn warnings(&self) -> &[RuleWarning] {
        &self.warnings
    }

    /// Whether the tool is offered to the model at all: a bare deny rule removes it, and plan mode
    /// removes tools that write files or run processes.
    pub fn offers(&self, spec: &ToolSpec) -> bool {
        let denied = self.deny.iter().any(|rule| {
            matches!(rule.specifier, Specifier::Any) && rule.names_tool(&spec.rule_name)
        });
        let mutating = spec.effects.writes_files || spec.effects.runs_processes;
        let hidden_by_plan = self.mode == PermissionMode::Plan && mutating;
        !(denied || hidden_by_plan)
    }

    /// Judges one call of `spec` that will touch `access`.
    pub fn evaluate(&self, spec: &ToolSpec, access: &[Access]) -> Verdict {
        self.decide(spec, access).verdict
    }

    /// Judges one call of `spec` that will touch `access`, with what its run must enforce.
    pub fn decide(&self, spec: &ToolSpec, access: &[Access]) -> Decision {
        let mut combined = Combined::default();
        if access.is_empty() {
            // The common case of a pure tool: one target, nothing to combine.
            let verdict = match self.judge(spec, &Target::Whole) {
                Judged::Allow | Judged::ReadOnly(_) => Verdict::Allow,
                Judged::Deny(err) => Verdict::Deny(err),
                judged @ Judged::Ask(..) => {
                    combined.add(judged);
                    return combined.finish();
                }
            };
            return Decision { verdict, read_only_programs: None };
        }
        for item in access {
            match item {
                Access::Read(path) => match self.workspace.resolve(path) {
                    Ok(path) => combined.add(self.judge(spec, &Target::Read(path))),
                    Err(err) => combined.add(self.deny_rules_or(spec, err)),
                },
                Access::Write(path) => match self.workspace.resolve_for_write(path) {
                    Ok(path) => combined.add(self.judge(spec, &Target::Write(path))),
                    Err(err) => combined.add(self.deny_rules_or(spec, err)),
                },
                Access::Command { line, workdir } => {
                    // The shell starts in `workdir`, which the tool resolves the same way.
                    let start = match workdir.as_deref() {
                        None => self.workspace.root().to_path_buf(),
                        Some(dir) => match self.workspace.resolve(dir) {
                            Ok(dir) => dir,
                            Err(err) => {
                                combined.add(self.deny_rules_or(spec, err));
                                continue;
                            }
                        },
                    };
                    match shell::analyze(line) {
                        Ok(segments) => {
                            for segment in &segments {
                                let dirs: Vec<_> = segment
                                    .dirs
                                    .iter()
                                    .map(|dir| shell::join_logical(&start, dir))
                                    .collect();
                                combined.add(self.judge(spec, &Target::Segment(segment, &dirs)));
                            }
                        }
                        Err(error) => {
                            let target = Target::Unparsed { command: line, error: &error };
                            combined.add(self.judge(spec, &target));
                        }
                    }
                }
                Access::Network(domain) => {
                    combined.add(self.judge(spec, &Target::Network(domain.as_deref())));
                }
            }
        }
        let mut decision = combined.finish();
        if matches!(decision.verdict, Verdict::Ask(_))
            && self.has_grants.load(Ordering::Acquire)
            && self
                .grants
                .read()
                .is_ok_and(|grants| grants.exact.contains(&exact_key(spec, access)))
        {
            decision.verdict = Verdict::Allow;
        }
        decision
    }

    /// Records an "allow for session" answer: the suggested rules when there are some, otherwise
    /// this exact tool and access.
    pub fn grant_for_session(&self, spec: &ToolSpec, access: &[Access], ask: &Ask) {
        let Ok(mut grants) = self.grants.write() else { return };
        let mut added = false;
        for text in &ask.remedy.rules {
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

    /// The observation for a call that needs approval when nobody can be asked. It says what
    /// would allow the call in the policy's terms (rules, modes), never in a front end's flags;
    /// front ends show [`Ask::remedy`] to their users in their own words.
    pub fn unanswered(&self, spec: &ToolSpec, ask: &Ask) -> ToolError {
        let why = if self.mode == PermissionMode::DontAsk {
            "the permission mode is dont-ask"
        } else {
            "this run is non-interactive"
        };
        ToolError::new(
            ToolErrorKind::PermissionDenied,
            format!(
                "`{}` needs approval ({}) and {why}, so it was not run; {}. Do not retry this call unchanged",
                spec.name,
                ask.reason,
                ask.remedy.describe()
            ),
        )
    }
}

fn exact_key(spec: &ToolSpec, access: &[Access]) -> String {
    format!("{}\u{0}{access:?}", spec.name)
}
