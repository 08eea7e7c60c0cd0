//! The permission table: mode × rules × call → allow / ask / deny.

use agent_exec::{PermissionMode, RuleAction, Verdict};

use super::support::{Setup, fixture};

use PermissionMode::{AcceptEdits as Edits, Bypass, Default as Dflt, DontAsk, Plan};
use RuleAction::{Allow, Ask, Deny};

/// Judges `tool(arguments)` under `mode` and `rules`; `expect` is `allow`, `ask` or `deny:<code>`.
#[track_caller]
fn check(
    mode: PermissionMode,
    rules: &[(RuleAction, &str)],
    tool: &str,
    arguments: &str,
    expect: &str,
) {
    let fx = fixture(Setup { mode, rules, ..Setup::default() });
    std::fs::create_dir_all(fx.root().join(".git")).unwrap();
    let tool = fx.exec.registry().get(tool).unwrap();
    let prepared = tool.prepare(arguments).unwrap();
    let got = match fx.exec.policy().evaluate(tool.spec(), prepared.access()) {
        Verdict::Allow => "allow".to_owned(),
        Verdict::Ask(_) => "ask".to_owned(),
        Verdict::Deny(err) => format!("deny:{}", err.kind),
    };
    assert_eq!(got, expect, "{mode} {rules:?} {arguments}");
}

fn bash(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

fn bash_in(command: &str, workdir: &str) -> String {
    serde_json::json!({ "command": command, "workdir": workdir }).to_string()
}

const MODES: [PermissionMode; 5] = [Dflt, Edits, Plan, DontAsk, Bypass];

/// Checks one call in every mode; `expect` lists the verdicts in the order of [`MODES`].
#[track_caller]
fn check_modes(rules: &[(RuleAction, &str)], arguments: &str, expect: [&str; 5]) {
    for (mode, expect) in MODES.into_iter().zip(expect) {
        check(mode, rules, "bash", arguments, expect);
    }
}

/// A new user's first `dont-ask` setup: `git status`, `echo *` and `ls *` allowed.
const ISSUE_RULES: &[(RuleAction, &str)] =
    &[(Allow, "Bash(git status)"), (Allow, "Bash(echo *)"), (Allow, "Bash(ls *)")];

/// What a command that needs approval gets: asked in default, accept-edits and dont-ask (where
/// the executor refuses it), refused in plan, run in bypass.
const NEEDS_APPROVAL: [&str; 5] = ["ask", "ask", "deny:permission_denied", "ask", "allow"];

fn write(path: &str) -> String {
    serde_json::json!({ "path": path, "content": "x" }).to_string()
}

fn read(path: &str) -> String {
    serde_json::json!({ "path": path }).to_string()
}

#[test]
fn pure_tools_run_in_every_mode() {
    for mode in [Dflt, Edits, Plan, DontAsk, Bypass] {
        check(mode, &[], "uppercase", r#"{"text":"a"}"#, "allow");
    }
    check(Dflt, &[(Deny, "Uppercase")], "uppercase", r#"{"text":"a"}"#, "deny:permission_denied");
    check(Dflt, &[(Ask, "Uppercase")], "uppercase", r#"{"text":"a"}"#, "ask");
}

#[test]
fn reads() {
    check(Dflt, &[], "read_file", &read("src/lib.rs"), "allow");
    check(Plan, &[], "read_file", &read("src/lib.rs"), "allow");
    check(DontAsk, &[], "read_file", &read("src/lib.rs"), "allow");
    check(Dflt, &[], "read_file", &read("/etc/hostname"), "deny:outside_workspace");
    check(Bypass, &[], "read_file", &read("/etc/hostname"), "deny:outside_workspace");
    check(Dflt, &[(Allow, "Read(//etc/**)")], "read_file", &read("/etc/hostname"), "allow");
    check(
        Dflt,
        &[(Deny, "Read(./src/**)")],
        "read_file",
        &read("src/lib.rs"),
        "deny:permission_denied",
    );
    check(Dflt, &[(Ask, "Read(*.rs)")], "read_file", &read("src/lib.rs"), "ask");
}

#[test]
fn secrets_ask_unless_a_rule_names_them() {
    check(Dflt, &[], "read_file", &read(".env"), "ask");
    check(Edits, &[], "read_file", &read("config/.env.local"), "ask");
    check(Dflt, &[], "read_file", &read("certs/server.pem"), "ask");
    check(Dflt, &[(Allow, "Read(./.env)")], "read_file", &read(".env"), "allow");
    check(Dflt, &[(Allow, "Read")], "read_file", &read(".env"), "ask");
    check(Dflt, &[(Deny, "Read(./.env)")], "read_file", &read(".env"), "deny:permission_denied");
    check(Bypass, &[], "read_file", &read(".env"), "allow");
    check(Dflt, &[], "bash", &bash("cat .env"), "ask");
}

#[test]
fn edits() {
    check(Dflt, &[], "write_file", &write("src/a.rs"), "ask");
    check(Edits, &[], "write_file", &write("src/a.rs"), "allow");
    check(Plan, &[], "write_file", &write("src/a.rs"), "deny:permission_denied");
    check(DontAsk, &[], "write_file", &write("src/a.rs"), "ask");
    check(Bypass, &[], "write_file", &write("src/a.rs"), "allow");
    check(Dflt, &[(Allow, "Edit(src/**)")], "write_file", &write("src/a.rs"), "allow");
    check(Dflt, &[(Allow, "Edit(src/**)")], "write_file", &write("docs/a.md"), "ask");
    check(
        Edits,
        &[(Deny, "Edit(src/**)")],
        "write_file",
        &write("src/a.rs"),
        "deny:permission_denied",
    );
    check(Edits, &[(Ask, "Edit(*.lock)")], "write_file", &write("Cargo.lock"), "ask");
    check(Edits, &[], "write_file", &write("../elsewhere.txt"), "deny:outside_workspace");
    check(
        Dflt,
        &[(Allow, "Edit(//tmp/agent-out/**)")],
        "write_file",
        &write("/tmp/agent-out/x"),
        "allow",
    );
}

#[test]
fn protected_paths_ask_in_every_mode() {
    for mode in [Dflt, Edits, Bypass] {
        check(mode, &[], "write_file", &write(".git/config"), "ask");
        check(mode, &[], "write_file", &write(".github/workflows/ci.yml"), "ask");
    }
    check(Edits, &[(Allow, "Edit(.git/**)")], "write_file", &write(".git/config"), "ask");
    check(
        Bypass,
        &[(Deny, "Edit(.git/**)")],
        "write_file",
        &write(".git/config"),
        "deny:permission_denied",
    );
    check(Plan, &[], "write_file", &write(".git/config"), "deny:permission_denied");
}

#[test]
fn safe_commands_run_unasked() {
    for mode in [Dflt, Edits, Plan, DontAsk, Bypass] {
        check(mode, &[], "bash", &bash("git status"), "allow");
        check(mode, &[], "bash", &bash("ls -la src | wc -l"), "allow");
    }
    check(Dflt, &[], "bash", &bash("rg -n TODO src && git diff"), "allow");
    check(Dflt, &[], "bash", &bash("timeout 5 env LANG=C git log --oneline"), "allow");
    check(Dflt, &[], "bash", &bash("timeout 5 env A=1 git log --oneline"), "ask");
    check(Dflt, &[], "bash", &bash("./sed -n 1p x"), "ask");
    check(Dflt, &[], "bash", &bash("git push"), "ask");
    check(
        Dflt,
        &[(Deny, "Bash(git status *)")],
        "bash",
        &bash("git status"),
        "deny:permission_denied",
    );
}

#[test]
fn command_rules() {
    let rules = [(Allow, "Bash(cargo test *)")];
    check(Dflt, &rules, "bash", &bash("cargo test"), "allow");
    check(Dflt, &rules, "bash", &bash("cargo test -p agent-exec"), "allow");
    check(Dflt, &rules, "bash", &bash("cargo tests"), "ask");
    check(Dflt, &rules, "bash", &bash("RUST_BACKTRACE=1 timeout 60 cargo test"), "allow");
    check(Dflt, &rules, "bash", &bash("RUST_LOG=debug timeout 60 cargo test"), "ask");
    let named = [(Allow, "Bash(RUST_LOG=debug cargo test *)")];
    check(Dflt, &named, "bash", &bash("RUST_LOG=debug timeout 60 cargo test"), "allow");
    check(Dflt, &named, "bash", &bash("export RUST_LOG=debug; cargo test -p x"), "allow");
    check(Dflt, &named, "bash", &bash("RUST_LOG=trace cargo test"), "ask");
    check(Dflt, &named, "bash", &bash("cargo test"), "ask");
    check(Dflt, &[(Allow, "Bash(npm run:*)")], "bash", &bash("npm run build"), "allow");
    check(Dflt, &[(Allow, "Bash")], "bash", &bash("make all"), "allow");
    check(DontAsk, &rules, "bash", &bash("cargo test"), "allow");
    check(DontAsk, &rules, "bash", &bash("cargo build"), "ask");
    check(Plan, &rules, "bash", &bash("cargo build"), "deny:permission_denied");
    check(Bypass, &[], "bash", &bash("cargo build"), "allow");
    check(
        Dflt,
        &[(Allow, "Bash(cargo *)"), (Ask, "Bash(cargo publish *)")],
        "bash",
        &bash("cargo publish"),
        "ask",
    );
    check(
        Bypass,
        &[(Deny, "Bash(cargo publish *)")],
        "bash",
        &bash("cargo publish"),
        "deny:permission_denied",
    );
}

#[test]
fn compound_commands_are_judged_segment_by_segment() {
    let rules = [(Allow, "Bash(git status *)")];
    check(Dflt, &rules, "bash", &bash("git status && rm -rf x"), "ask");
    check(
        Dflt,
        &[(Deny, "Bash(rm *)")],
        "bash",
        &bash("git status && rm -rf x"),
        "deny:permission_denied",
    );
    check(
        Dflt,
        &[(Deny, "Bash(rm *)")],
        "bash",
        &bash("ls; (cd src && rm -rf .)"),
        "deny:permission_denied",
    );
    check(
        Dflt,
        &[(Allow, "Bash(cargo build *)"), (Allow, "Bash(cargo test *)")],
        "bash",
        &bash("cargo build && cargo test"),
        "allow",
    );
    check(Dflt, &[(Allow, "Bash(cargo build *)")], "bash", &bash("cargo build | tee log"), "ask");
    check(Dflt, &[], "bash", &bash("git status; echo done"), "allow");
    check(Dflt, &[], "bash", &bash("if git diff --quiet; then echo clean; fi"), "allow");
}

#[test]
fn opaque_commands_never_auto_approve() {
    let all = [(Allow, "Bash(*)")];
    for command in [
        "echo $(rm -rf ~)",
        "echo `whoami`",
        "eval ls",
        "bash -c 'ls'",
        "sh -lc ls",
        "ls | xargs rm",
        "find . -exec rm {} \\;",
        "python3 <<EOF\nprint(1)\nEOF",
        "echo 'unterminated",
        "ls > /tmp/out.txt",
        "ls > $OUT",
        "diff <(ls a) <(ls b)",
        "f() { rm -rf x; }; f",
    ] {
        check(Dflt, &all, "bash", &bash(command), "ask");
        check(Edits, &all, "bash", &bash(command), "ask");
        check(DontAsk, &all, "bash", &bash(command), "ask");
    }
    check(Bypass, &[], "bash", &bash("echo $(date)"), "allow");
    check(Bypass, &[(Deny, "Bash(rm *)")], "bash", &bash("bash -c 'rm -rf x'"), "ask");
}

#[test]
fn redirections() {
    check(Dflt, &[], "bash", &bash("ls > /dev/null 2>&1"), "allow");
    check(Dflt, &[], "bash", &bash("ls > listing.txt"), "ask");
    check(Edits, &[], "bash", &bash("ls > listing.txt"), "allow");
    check(Edits, &[], "bash", &bash("echo x > ../outside.txt"), "ask");
    check(Edits, &[], "bash", &bash("echo x >> .git/config"), "ask");
    check(Dflt, &[], "bash", &bash("wc -l < src/lib.rs"), "allow");
}

#[test]
fn accept_edits_lets_file_operations_inside_the_workspace_through() {
    check(Edits, &[], "bash", &bash("mkdir -p src/new && touch src/new/mod.rs"), "allow");
    check(Edits, &[], "bash", &bash("mv a.txt b.txt"), "allow");
    check(Edits, &[], "bash", &bash("cp src/lib.rs /tmp/x"), "ask");
    check(Edits, &[], "bash", &bash("touch .git/hooks/pre-commit"), "ask");
    check(Dflt, &[], "bash", &bash("mkdir x"), "ask");
    check(Edits, &[], "bash", &bash("rm -rf src"), "ask");
}

#[test]
fn network() {
    let search = |domain: &str| serde_json::json!({ "domain": domain }).to_string();
    check(Dflt, &[], "web_search", &search("docs.rs"), "ask");
    check(Plan, &[], "web_search", &search("docs.rs"), "ask");
    check(Dflt, &[(Allow, "WebSearch(domain:docs.rs)")], "web_search", &search("docs.rs"), "allow");
    check(
        Dflt,
        &[(Allow, "WebSearch(domain:docs.rs)")],
        "web_search",
        &search("blog.docs.rs"),
        "allow",
    );
    check(Dflt, &[(Allow, "WebSearch(domain:docs.rs)")], "web_search", &search("evil.com"), "ask");
    check(
        Bypass,
        &[(Deny, "WebSearch(domain:evil.com)")],
        "web_search",
        &search("evil.com"),
        "deny:permission_denied",
    );
    check(Bypass, &[], "web_search", &search("evil.com"), "allow");
}

#[test]
fn rule_warnings_are_reported_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = agent_exec::Workspace::new(dir.path()).unwrap();
    let mut builder = agent_exec::PolicyBuilder::new(workspace, Dflt);
    for text in [
        "Bash(cargo test *)",
        "Bahs(ls)",
        "Edit()",
        "Read(src/[)",
        "Uppercase(x)",
        "WebSearch(docs.rs)",
    ] {
        builder.rule(Allow, text, "settings.json").unwrap();
    }
    builder.known_tool("Deploy");
    builder.rule(Deny, "Deploy", "settings.json").unwrap();
    assert!(builder.rule(Allow, "Bash(ls", "--allow").is_err());
    let policy = builder.build();
    let warned: Vec<&str> = policy.warnings().iter().map(|warning| warning.rule.as_str()).collect();
    assert_eq!(warned, ["Bahs(ls)", "Edit()", "Read(src/[)", "Uppercase(x)", "WebSearch(docs.rs)"]);
    assert_eq!(
        policy.warnings()[1].to_string(),
        "rule `Edit()` (settings.json) never matches: the specifier is empty; write the bare tool name to match every call"
    );
}

#[test]
fn modes_parse_from_their_flag_names() {
    for mode in [Dflt, Edits, Plan, DontAsk, Bypass] {
        assert_eq!(mode.as_str().parse::<PermissionMode>().unwrap(), mode);
    }
    assert_eq!(
        "yolo".parse::<PermissionMode>().unwrap_err().to_string(),
        "unknown permission mode `yolo`; use default, accept-edits, plan, dont-ask or bypass"
    );
}

#[test]
fn variables_that_change_what_runs_need_approval() {
    for command in [
        "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\" git status",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch PWNED' git status",
        "PATH=./bin:$PATH ls",
        "LD_PRELOAD=./x.so ls -la",
        "export PATH=./bin:$PATH; ls",
        "PATH=./bin:$PATH; ls",
        "declare -x LD_PRELOAD=./x.so && ls",
        "env GIT_CONFIG_PARAMETERS=\"'core.pager=touch PWNED'\" git status",
        "env BASH_ENV=./x echo hi",
        "GIT_PAGER='touch PWNED' git log",
        "EDITOR=./x git status",
        "MY_UNKNOWN=1 ls",
    ] {
        check_modes(ISSUE_RULES, &bash(command), NEEDS_APPROVAL);
        check_modes(&[], &bash(command), NEEDS_APPROVAL);
    }
    for command in
        ["LANG=C ls", "NO_COLOR=1 git status", "LC_ALL=C TZ=UTC ls -la", "export LANG=C; ls"]
    {
        check_modes(ISSUE_RULES, &bash(command), ["allow"; 5]);
    }
    check_modes(ISSUE_RULES, &bash("CI=1 echo hi"), ["allow"; 5]);
    check(
        Dflt,
        &[(Deny, "Bash(git status *)")],
        "bash",
        &bash("GIT_DIR=x git status"),
        "deny:permission_denied",
    );
}

#[test]
fn a_program_given_as_a_path_is_not_the_program_a_rule_names() {
    for command in ["./ls", "bin/ls -la", "/tmp/x/ls"] {
        check_modes(ISSUE_RULES, &bash(command), NEEDS_APPROVAL);
    }
}

#[test]
fn writes_are_judged_in_the_directory_the_shell_will_be_in() {
    // Protected paths reached through `cd`, `pushd` or `workdir` ask even in bypass; plan
    // refuses; dont-ask leaves it to the executor to refuse.
    let protected = ["ask", "ask", "deny:permission_denied", "ask", "ask"];
    for arguments in [
        bash("cd .github/workflows && touch x.yml"),
        bash("pushd .agent && touch x"),
        bash_in("touch x.yml", ".github/workflows"),
        bash("cd .github && cd workflows && touch x.yml"),
        bash("cd src; cd ../.github/workflows; touch x.yml"),
        bash("cd .github/workflows && echo x > evil.yml"),
        bash_in("echo x > evil.yml", ".github/workflows"),
        bash_in("cd ../.agent && touch settings.json", "src"),
        bash("cd \"$HOME\" && touch x"),
        bash("cd $(echo .git) && touch x"),
    ] {
        check_modes(&[], &arguments, protected);
    }
    check_modes(
        &[],
        &bash("cd src && touch new.rs"),
        ["ask", "allow", "deny:permission_denied", "ask", "allow"],
    );
    check_modes(
        &[],
        &bash_in("touch new.rs", "src"),
        ["ask", "allow", "deny:permission_denied", "ask", "allow"],
    );
    check_modes(&[], &bash("cd src && ls"), ["allow"; 5]);
    // A directory known only at run time makes the rest of the line need approval.
    check_modes(ISSUE_RULES, &bash("cd \"$X\" && ls"), ["ask", "ask", "ask", "ask", "allow"]);
    check_modes(ISSUE_RULES, &bash("cd - && ls"), ["ask", "ask", "ask", "ask", "allow"]);
    // The workspace boundary applies to the starting directory and to the real targets.
    check_modes(&[], &bash_in("ls", "../.."), ["deny:outside_workspace"; 5]);
    check(Edits, &[], "bash", &bash("cd /tmp && touch x"), "ask");
    check(Edits, &[], "bash", &bash("cd src && touch ../../x"), "ask");
    // Edit rules see the real targets.
    let deny_src = [(Deny, "Edit(src/**)")];
    check(Edits, &deny_src, "bash", &bash("cd src && touch x.rs"), "deny:permission_denied");
    check(Bypass, &deny_src, "bash", &bash_in("echo x > a.rs", "src"), "deny:permission_denied");
    check(Edits, &deny_src, "bash", &bash("touch x.rs"), "allow");
    check(
        Edits,
        &[(Ask, "Edit(docs/**)")],
        "bash",
        &bash("mkdir -p docs && cd docs && touch a.md"),
        "ask",
    );
}

/// The programs a call may execute when the policy allowed it only as read-only; `None` when a
/// rule, the mode or nothing allowed it.
#[track_caller]
fn check_programs(
    mode: PermissionMode,
    rules: &[(RuleAction, &str)],
    command: &str,
    expect: Option<&[&str]>,
) {
    let fx = fixture(Setup { mode, rules, ..Setup::default() });
    let tool = fx.exec.registry().get("bash").unwrap();
    let prepared = tool.prepare(&bash(command)).unwrap();
    let decision = fx.exec.policy().decide(tool.spec(), prepared.access());
    let expect = expect.map(|programs| programs.iter().map(|p| (*p).to_owned()).collect());
    assert_eq!(decision.read_only_programs, expect, "{mode} {rules:?} {command}");
}

#[test]
fn commands_allowed_as_read_only_name_the_programs_they_may_execute() {
    for mode in [Dflt, Edits, Plan, DontAsk] {
        check_programs(mode, &[], "git status", Some(&["git"]));
    }
    check_programs(Dflt, &[], "cd src && ls -la | wc -l", Some(&["cd", "ls", "wc"]));
    check_programs(Dflt, &[], "export LANG=C; ls; ls src", Some(&["ls"]));
    // The user allowed everything, a rule covers the command, or it needs approval: no list.
    check_programs(Bypass, &[], "git status", None);
    check_programs(Dflt, &[(Allow, "Bash(git status)")], "git status", None);
    check_programs(Dflt, &[(Allow, "Bash(echo *)")], "git status && echo done", None);
    check_programs(Dflt, &[], "git status && cargo build", None);
    check_programs(Edits, &[], "ls && touch src/x.rs", None);
}

/// Shell text with no quote, backslash or comment, so what follows it is live syntax.
const PLAIN: &str = "[a-z ]{0,8}";
/// Anything after the construct, including quotes and unbalanced brackets.
const AFTER: &str = r#"[a-z $()`'"|&;<>{}\\\n=*-]{0,24}"#;

fn opaque_command() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let substitution = proptest::sample::select(vec!["$(", "`", "<("]);
    prop_oneof![
        // Substitutions are live anywhere in a word.
        (PLAIN, substitution, AFTER).prop_map(|(a, b, c)| format!("{a}{b}{c}")),
        // `eval` in command position: first, or after a separator.
        ("([a-z]{1,6} (; |&& |\\| ))?", AFTER).prop_map(|(a, c)| format!("{a}eval {c}")),
    ]
}

/// Whatever surrounds it, a construct whose effect is known only at run time (command or process
/// substitution, `eval`) is never run without asking, even under `Allow Bash(*)`.
#[test]
fn opaque_constructs_never_auto_approve_under_allow_all() {
    // One fixture for every generated case: a temporary workspace per case would dominate.
    let fx = fixture(Setup { mode: Dflt, rules: &[(Allow, "Bash(*)")], ..Setup::default() });
    let tool = fx.exec.registry().get("bash").unwrap();
    let mut runner = proptest::test_runner::TestRunner::default();
    let result = runner.run(&opaque_command(), |command| {
        let prepared = tool.prepare(&bash(&command)).unwrap();
        let verdict = fx.exec.policy().evaluate(tool.spec(), prepared.access());
        proptest::prop_assert!(!matches!(verdict, Verdict::Allow), "auto-approved: {command:?}");
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}
