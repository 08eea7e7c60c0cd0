//! One session, assembled once: only agent-session turns configuration into an agent.
//!
//! The CLI's front ends once each built their agent by hand (`exec` and the REPL in one place,
//! `tools call` and `mcp serve` in two more) and drifted apart; ACP prompts skipped the
//! checkpoint turn and every process shared one network proxy. Every front end now opens its
//! session through agent-session, and this rule keeps the binary from growing a second assembly:
//! no file of agent-cli may name the builder or the calls that fill it.

/// What only agent-session may call: the library builder and the steps of an assembly.
const ASSEMBLY: &[&str] = &[
    "AgentBuilder",
    "build_boxed(",
    "build_executor",
    "session_builder(",
    "settings.builder(",
    "agents::wire(",
    "skills::attach(",
    "BuiltinTools::",
];

/// Problems in one source file's text, `shown` being its path relative to the repository.
pub(super) fn check(shown: &str, text: &str, problems: &mut Vec<String>) {
    if !shown.starts_with("crates/agent-cli/src/") {
        return;
    }
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    for (number, line) in code.lines().enumerate() {
        let code = line.split("//").next().unwrap_or(line);
        if let Some(call) = ASSEMBLY.iter().find(|call| code.contains(*call)) {
            problems.push(format!(
                "{shown}:{}: `{call}` assembles an agent outside agent-session; open the session \
                 with agent_session::Session::open (or Toolbox::open for tools without a model)",
                number + 1
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_one(shown: &str, text: &str, expect: usize) {
        let mut problems = Vec::new();
        check(shown, text, &mut problems);
        assert_eq!(problems.len(), expect, "{problems:?}");
    }

    #[test]
    fn only_the_binary_is_held_to_one_assembly() {
        check_one("crates/agent-cli/src/cmd/x.rs", "let b = settings.builder(mode);", 1);
        check_one(
            "crates/agent-cli/src/cmd/x.rs",
            "let a = AgentBuilder::new(m).build_boxed(c);",
            1,
        );
        check_one("crates/agent-cli/src/cmd/x.rs", "// settings.builder( in a comment", 0);
        check_one("crates/agent-session/src/open.rs", "let b = settings.builder(mode);", 0);
        check_one("crates/agent-cli/src/x.rs", "#[cfg(test)]\nfn t() { AgentBuilder::new(); }", 0);
    }
}
