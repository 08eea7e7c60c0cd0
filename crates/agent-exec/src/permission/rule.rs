//! Permission rules: `Tool` or `Tool(specifier)`, parsed once and matched per call.
//!
//! The specifier's meaning depends on the tool: a command pattern for `Bash`
//! (`Bash(cargo test *)`), a gitignore-style path for `Read`/`Edit`/`Write` and the file tools
//! (`Edit(src/**)`), a domain for the web tools (`WebSearch(domain:docs.rs)`).

use std::{fmt, path::Path};

use crate::{
    error::{Error, Result},
    permission::{PathSet, environment, shell::Assign},
};

/// What a rule does when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleAction {
    /// Run without asking.
    Allow,
    /// Ask the user (even if an allow rule or the mode would allow).
    Ask,
    /// Refuse (whatever else says).
    Deny,
}

impl RuleAction {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }
}

/// A rule that parsed but can never match, reported when rules are loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleWarning {
    /// The rule text as given.
    pub rule: String,
    /// Where it came from (a command-line flag, a settings file, …).
    pub origin: String,
    /// Why it never matches and how to fix it.
    pub message: String,
}

impl fmt::Display for RuleWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule `{}` ({}) never matches: {}", self.rule, self.origin, self.message)
    }
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) action: RuleAction,
    /// The rule text, for messages.
    pub(crate) text: String,
    /// Where the rule came from, for messages.
    pub(crate) origin: String,
    /// The tool's rule name (`Bash`, `Edit`, `mcp__server__tool`).
    pub(crate) tool: String,
    pub(crate) specifier: Specifier,
}

/// What a rule's parenthesised part matches.
#[derive(Debug, Clone)]
pub(crate) enum Specifier {
    /// No specifier: every call of the tool.
    Any,
    /// A command pattern with `*` wildcards, matched against one segment.
    Command(CommandPattern),
    /// Canonical paths.
    Path(PathSet),
    /// A network domain and its subdomains.
    Domain(String),
    /// A specifier that can never match (already reported as a warning).
    Never,
}

/// The rule names the policy itself reads, whatever tools are registered: Claude Code's `Bash(…)`
/// for the command line of any call, and `Read(…)`, `Edit(…)` and `Write(…)` for the paths any
/// tool reads or writes. Every other known name is a registered tool's, declared by the caller
/// ([`KnownTool`]); the policy names no tool of its own.
pub(crate) const POLICY_NAMES: &[&str] = &["Bash", "Read", "Edit", "Write"];

/// A registered tool as the rule parser sees it: its rule name, and whether its specifier names
/// domains (a network tool, `WebSearch(domain:docs.rs)`) or paths (every other tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnownTool {
    pub(crate) rule_name: String,
    pub(crate) domains: bool,
}

impl Rule {
    /// Whether this rule names the tool whose rule name is `rule_name`: the same name; or, for
    /// MCP tools, a server (`mcp__github` names every `mcp__github__…` tool) or a glob with `*`
    /// (`mcp__github__list_*`).
    pub(crate) fn names_tool(&self, rule_name: &str) -> bool {
        mcp_tool_matches(&self.tool, rule_name)
    }

    /// Parses `text`. Syntax errors are `Err`; a rule that parses but can never match is returned
    /// with [`Specifier::Never`] and a warning.
    pub(crate) fn parse(
        action: RuleAction,
        text: &str,
        origin: &str,
        root: &Path,
        known: &[KnownTool],
    ) -> Result<(Rule, Option<RuleWarning>)> {
        let bad = |reason: &str| Error::Rule { rule: text.to_owned(), reason: reason.to_owned() };
        let trimmed = text.trim();
        let (tool, spec) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => match rest.strip_suffix(')') {
                Some(spec) => (tool.trim(), Some(spec)),
                None => return Err(bad("a `(` without a closing `)` at the end")),
            },
        };
        if tool.is_empty() {
            return Err(bad("the tool name is missing; write `Tool` or `Tool(specifier)`"));
        }
        // `*` is a wildcard in MCP tool names only (`mcp__github__*`); a built-in name is exact.
        let allowed = |c: char| {
            c.is_ascii_alphanumeric()
                || c == '_'
                || c == '-'
                || (c == '*' && tool.starts_with("mcp__"))
        };
        if !tool.chars().all(allowed) {
            return Err(bad("a tool name has only letters, digits, `_` and `-`"));
        }
        let warn = |message: String| RuleWarning {
            rule: text.to_owned(),
            origin: origin.to_owned(),
            message,
        };
        let mut warning = None;
        let declared = known.iter().find(|known| known.rule_name == tool);
        let is_known =
            POLICY_NAMES.contains(&tool) || tool.starts_with("mcp__") || declared.is_some();
        if !is_known {
            let names: Vec<&str> = POLICY_NAMES
                .iter()
                .copied()
                .chain(known.iter().map(|known| known.rule_name.as_str()))
                .collect();
            warning = Some(warn(format!(
                "no tool has the rule name `{tool}`; known names are {}",
                names.join(", ")
            )));
        }
        let domain_tool = declared.is_some_and(|known| known.domains);
        let specifier = match spec.map(str::trim) {
            None => Specifier::Any,
            Some("") => {
                warning = Some(warn(
                    "the specifier is empty; write the bare tool name to match every call"
                        .to_owned(),
                ));
                Specifier::Never
            }
            Some(spec) if tool == "Bash" => Specifier::Command(CommandPattern::new(spec)),
            Some(spec) if spec.starts_with("domain:") || domain_tool => {
                match spec.strip_prefix("domain:").map(str::trim) {
                    Some(domain) if !domain.is_empty() => {
                        Specifier::Domain(domain.trim_start_matches("*.").to_ascii_lowercase())
                    }
                    _ => {
                        warning = Some(warn(format!(
                            "`{tool}` takes `domain:<name>`, as in `{tool}(domain:docs.rs)`"
                        )));
                        Specifier::Never
                    }
                }
            }
            Some(spec) => {
                let home = std::env::home_dir();
                match PathSet::anchored(spec, root, home.as_deref()) {
                    Ok(set) => Specifier::Path(set),
                    Err(err) => {
                        warning = Some(warn(format!("the path pattern is invalid: {err}")));
                        Specifier::Never
                    }
                }
            }
        };
        let rule = Rule {
            action,
            text: text.trim().to_owned(),
            origin: origin.to_owned(),
            tool: tool.to_owned(),
            specifier,
        };
        Ok((rule, warning))
    }
}

/// `Rule::names_tool` on plain strings: the exact name, an MCP server prefix, or an MCP glob.
pub(crate) fn mcp_tool_matches(rule_tool: &str, rule_name: &str) -> bool {
    if rule_tool == rule_name {
        return true;
    }
    if !rule_tool.starts_with("mcp__") || !rule_name.starts_with("mcp__") {
        return false;
    }
    if rule_tool.contains('*') {
        return wildcard_matches(rule_tool, rule_name);
    }
    // `mcp__server` (no second `__`) names the whole server.
    let server_only = !rule_tool["mcp__".len()..].contains("__");
    server_only && rule_name.strip_prefix(rule_tool).is_some_and(|rest| rest.starts_with("__"))
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A `Bash(…)` specifier: variables the rule names (`RUST_LOG=debug` in
/// `Bash(RUST_LOG=debug cargo test *)`) and the pattern for the command's words.
#[derive(Debug, Clone)]
pub(crate) struct CommandPattern {
    /// The whole specifier, normalised; deny and ask rules match it against a command line that
    /// does not parse.
    pub(crate) raw: String,
    /// `NAME=value-pattern` pairs at the start of the specifier.
    assigns: Vec<(String, String)>,
    /// The pattern for the words, with `*` wildcards.
    command: String,
}

impl CommandPattern {
    /// Parses a specifier; the legacy `cmd:*` form means `cmd *`.
    fn new(spec: &str) -> Self {
        let raw = match spec.strip_suffix(":*") {
            Some(prefix) => format!("{prefix} *"),
            None => spec.to_owned(),
        };
        let mut assigns = Vec::new();
        let mut rest = raw.as_str();
        while let Some((word, tail)) = rest.split_once(' ')
            && let Some(assign) = Assign::parse(word)
        {
            assigns.push((assign.name, assign.value));
            rest = tail.trim_start();
        }
        let command = rest.to_owned();
        Self { raw, assigns, command }
    }

    /// Whether the pattern matches a segment's words (`text`) and variables: every variable the
    /// pattern names must be set to a matching value, and, when `all_named` (allow rules), every
    /// other variable the segment sets must be inert. Deny and ask rules match whatever else is
    /// set, so `Bash(git push *)` in deny also stops `GIT_DIR=x git push`.
    pub(crate) fn matches(&self, text: &str, assigns: &[Assign], all_named: bool) -> bool {
        if !command_matches(&self.command, text) {
            return false;
        }
        let named = |assign: &Assign| {
            self.assigns
                .iter()
                .any(|(name, value)| *name == assign.name && wildcard(value, &assign.value))
        };
        let set = |(name, value): &(String, String)| {
            assigns.iter().any(|assign| assign.name == *name && wildcard(value, &assign.value))
        };
        self.assigns.iter().all(set)
            && (!all_named
                || assigns
                    .iter()
                    .all(|assign| environment::is_inert(&assign.name) || named(assign)))
    }
}

/// Whether a command pattern matches a segment's text. `*` matches any characters; a trailing
/// ` *` also matches nothing, on a word boundary (`cargo test *` matches `cargo test` but not
/// `cargo tests`).
pub(crate) fn command_matches(pattern: &str, command: &str) -> bool {
    if let Some(base) = pattern.strip_suffix(" *")
        && wildcard(base, command)
    {
        return true;
    }
    wildcard(pattern, command)
}

/// Whether a domain is `rule_domain` or one of its subdomains.
pub(crate) fn domain_matches(rule_domain: &str, domain: &str) -> bool {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    domain == rule_domain
        || domain.strip_suffix(rule_domain).is_some_and(|head| head.ends_with('.'))
}

/// `*`-only glob matching in linear space, with the classic backtrack to the last star.
fn wildcard(pattern: &str, text: &str) -> bool {
    let pattern = pattern.as_bytes();
    let text = text.as_bytes();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Matches `pattern` as an allow rule against `command`, whose leading `NAME=value` words
    /// are its variables.
    #[track_caller]
    fn check(pattern: &str, command: &str, expect: bool) {
        let mut words: Vec<&str> = command.split(' ').collect();
        let split = words.iter().take_while(|word| Assign::parse(word).is_some()).count();
        let assigns: Vec<Assign> = words.drain(..split).filter_map(Assign::parse).collect();
        let got = CommandPattern::new(pattern).matches(&words.join(" "), &assigns, true);
        assert_eq!(got, expect, "{pattern} vs {command}");
    }

    #[test]
    fn command_patterns() {
        check("cargo test *", "cargo test", true);
        check("cargo test *", "cargo test -p x", true);
        check("cargo test *", "cargo tests", false);
        check("cargo test:*", "cargo test --release", true);
        check("cargo test", "cargo test -p x", false);
        check("git * main", "git push origin main", true);
        check("*", "anything at all", true);
        check("npm run *", "npm run", true);
        check("ls", "ls", true);
    }

    #[test]
    fn rules_name_variables_explicitly() {
        check("cargo test *", "LANG=C cargo test", true);
        check("cargo test *", "RUST_LOG=debug cargo test", false);
        check("RUST_LOG=debug cargo test *", "RUST_LOG=debug cargo test -p x", true);
        check("RUST_LOG=debug cargo test *", "LANG=C RUST_LOG=debug cargo test", true);
        check("RUST_LOG=debug cargo test *", "RUST_LOG=trace cargo test", false);
        check("RUST_LOG=debug cargo test *", "cargo test", false);
        check("RUST_LOG=* cargo test *", "RUST_LOG=trace cargo test", true);
        check("RUST_LOG=* cargo test *", "RUST_LOG=trace PATH=x cargo test", false);
        check("ls *", "./ls", false);
        check("ls *", "bin/ls -la", false);
        check("ls *", "/tmp/x/ls", false);
    }

    #[test]
    fn mcp_rules_name_a_tool_a_server_or_a_glob() {
        let names = |rule: &str, tool: &str| mcp_tool_matches(rule, tool);
        assert!(names("mcp__github__create_issue", "mcp__github__create_issue"));
        assert!(names("mcp__github", "mcp__github__create_issue"));
        assert!(names("mcp__github__*", "mcp__github__create_issue"));
        assert!(names("mcp__*__create_*", "mcp__gitlab__create_mr"));
        assert!(names("mcp__*", "mcp__x__y"));
        // A prefix is not a server: `mcp__git` must not reach `mcp__github__…`.
        assert!(!names("mcp__git", "mcp__github__create_issue"));
        assert!(!names("mcp__github__create", "mcp__github__create_issue"));
        assert!(!names("mcp__github__list_*", "mcp__github__create_issue"));
        // Wildcards and prefixes stay MCP-only: `Bash*` is not a rule, `mcp__*` never names `Bash`.
        assert!(!names("mcp__*", "Bash"));
        check_parse("mcp__github__*", "ok");
        assert!(check_error("Bash*"));
    }

    fn check_error(text: &str) -> bool {
        Rule::parse(RuleAction::Allow, text, "test", Path::new("/ws"), &[]).is_err()
    }

    #[track_caller]
    fn check_parse(text: &str, expect: &str) {
        // Two registered tools, as the builder declares them: a path tool and a network tool.
        let known = [
            KnownTool { rule_name: "Grep".to_owned(), domains: false },
            KnownTool { rule_name: "WebSearch".to_owned(), domains: true },
        ];
        let got = match Rule::parse(RuleAction::Allow, text, "test", Path::new("/ws"), &known) {
            Ok((_, None)) => "ok".to_owned(),
            Ok((_, Some(warning))) => format!("warn: {}", warning.message),
            Err(err) => format!("error: {err}"),
        };
        assert_eq!(got, expect, "{text}");
    }

    #[test]
    fn parsing_reports_rules_that_never_match() {
        check_parse("Bash(cargo test *)", "ok");
        check_parse("Bash", "ok");
        check_parse("Edit(src/**)", "ok");
        check_parse("WebSearch(domain:docs.rs)", "ok");
        check_parse("Grep(src/**)", "ok");
        // No tool of that name is registered here: the policy names no built-in tool itself.
        check_parse(
            "ListDir(src)",
            "warn: no tool has the rule name `ListDir`; known names are Bash, Read, Edit, Write, Grep, WebSearch",
        );
        check_parse("mcp__github__create_issue", "ok");
        check_parse(
            "Bash()",
            "warn: the specifier is empty; write the bare tool name to match every call",
        );
        check_parse(
            "WebSearch(docs.rs)",
            "warn: `WebSearch` takes `domain:<name>`, as in `WebSearch(domain:docs.rs)`",
        );
        check_parse(
            "Edit(src/[)",
            "warn: the path pattern is invalid: error parsing glob '/ws/src/[': unclosed character class; missing ']'",
        );
        check_parse(
            "Bsh(ls)",
            "warn: no tool has the rule name `Bsh`; known names are Bash, Read, Edit, Write, Grep, WebSearch",
        );
        check_parse(
            "Bash(ls",
            "error: invalid permission rule `Bash(ls`: a `(` without a closing `)` at the end",
        );
        check_parse(
            "",
            "error: invalid permission rule ``: the tool name is missing; write `Tool` or `Tool(specifier)`",
        );
    }

    #[test]
    fn domains() {
        assert!(domain_matches("docs.rs", "docs.rs"));
        assert!(domain_matches("docs.rs", "www.docs.rs"));
        assert!(!domain_matches("docs.rs", "evildocs.rs"));
    }
}
