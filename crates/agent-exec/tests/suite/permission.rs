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
    check(Dflt, &[], "bash", &bash("timeout 5 env A=1 git log --oneline"), "allow");
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
    check(Dflt, &rules, "bash", &bash("RUST_LOG=debug timeout 60 cargo test"), "allow");
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
