//! Tests of the shell analysis: segments, dangers, and what travels between segments.

use agent_core::{Access, ToolSpec};

use super::*;

/// Renders segments as `words|danger|writes` lines, one per segment.
#[track_caller]
fn check(command: &str, expect: &[&str]) {
    let got: Vec<String> = match analyze(command) {
        Ok(segments) => segments
            .iter()
            .map(|seg| {
                let writes: Vec<&str> = seg.writes.iter().map(|t| t.path.as_str()).collect();
                format!("{}|{}|{}", seg.text(), seg.danger.unwrap_or(""), writes.join(","))
            })
            .collect(),
        Err(_) => vec!["<parse error>".to_owned()],
    };
    assert_eq!(got, expect, "{command}");
}

#[test]
fn compound_commands_split_into_segments() {
    check("git status && rm -rf x", &["git status||", "rm -rf x||"]);
    check("ls | wc -l; echo done", &["ls||", "wc -l||", "echo done||"]);
    check("a || b & c", &["a||", "b||", "c||"]);
    check("(cd src && ls)", &["cd src||", "ls||"]);
    check("if true; then rm x; fi", &["true||", "rm x||"]);
    check("for f in a b; do cat $f; done", &["cat $f||"]);
}

#[test]
fn quotes_are_removed() {
    check(r#"git commit -m "it's done""#, &["git commit -m it's done||"]);
    check("echo 'a  b' c\\ d", &["echo a  b c d||"]);
}

#[test]
fn wrappers_are_stripped() {
    check("env RUST_LOG=1 cargo test", &["cargo test||"]);
    check("timeout 5 cargo test", &["cargo test||"]);
    check("timeout -s KILL 5s nice -n 10 time -p ls", &["ls||"]);
    check("FOO=1 BAR=2 ls", &["ls||"]);
}

#[test]
fn opaque_constructs_are_dangers() {
    check("echo $(rm -rf /)", &["echo $(rm -rf /)|command substitution|"]);
    check("echo `id`", &["echo `id`|command substitution|"]);
    check("eval ls", &["eval ls|`eval`|"]);
    check("bash -c 'rm x'", &["bash -c rm x|a shell running a `-c` string|"]);
    check("sh -lc ls", &["sh -lc ls|a shell running a `-c` string|"]);
    check("find . -exec rm {} \\;", &["find . -exec rm {} ;|`find -exec`|"]);
    check("ls | xargs rm", &["ls||", "xargs rm|`xargs`|"]);
    check("diff <(ls) b", &["diff b|process substitution|"]);
    check("python3 <<EOF\nprint(1)\nEOF\n", &["python3|a here-document fed to an interpreter|"]);
    check("X=$(id) ls", &["ls|command substitution|"]);
    check("$CMD x", &["$CMD x|a program name computed at run time|"]);
}

/// Renders segments as `assigns|words|dirs` lines: what each segment inherits.
#[track_caller]
fn check_context(command: &str, expect: &[&str]) {
    let segments = analyze(command).unwrap();
    let got: Vec<String> = segments
        .iter()
        .map(|seg| {
            let assigns: Vec<String> =
                seg.assigns.iter().map(|a| format!("{}={}", a.name, a.value)).collect();
            let dirs: Vec<String> = seg.dirs.iter().map(|d| d.display().to_string()).collect();
            let unknown = if seg.dir_unknown { "?" } else { "" };
            let set = if seg.sets_only { "set " } else { "" };
            format!("{}|{set}{}|{}{unknown}", assigns.join(" "), seg.text(), dirs.join(","))
        })
        .collect();
    assert_eq!(got, expect, "{command}");
}

#[test]
fn variables_travel_with_the_segments_they_reach() {
    check_context("LANG=C ls", &["LANG=C|ls|"]);
    check_context("env GIT_DIR=x git status", &["GIT_DIR=x|git status|"]);
    check_context(
        "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch PWNED'\" git status",
        &["GIT_CONFIG_PARAMETERS='core.fsmonitor=touch PWNED'|git status|"],
    );
    check_context(
        "export PATH=./bin:$PATH; ls",
        &["|set export PATH=./bin:$PATH|", "PATH=./bin:$PATH|ls|"],
    );
    check_context("X=1; Y=2 ls", &["|set X=1|", "X=1 Y=2|ls|"]);
    check_context("declare -x A=1 B; ls", &["|set declare -x A=1 B|", "A=1|ls|"]);
    check_context("ls; export A=1", &["|ls|", "|set export A=1|"]);
    check_context(
        "for i in 1 2; do ls; export P=1; done",
        &["|ls|", "|set export P=1|", "P=1|ls|", "P=1|set export P=1|"],
    );
}

#[test]
fn directory_changes_reach_later_segments() {
    check_context("cd src && touch a", &["|cd src|", "|touch a|,src"]);
    check_context("cd a; cd ../b; ls", &["|cd a|", "|cd ../b|,a", "|ls|,a,../b,b"]);
    check_context("pushd .agent && touch x", &["|pushd .agent|", "|touch x|,.agent"]);
    check_context("cd /tmp/x && ls", &["|cd /tmp/x|", "|ls|,/tmp/x"]);
    check_context("cd \"$HOME\" && touch x", &["|cd $HOME|", "|touch x|?"]);
    check_context("cd && ls", &["|cd|", "|ls|?"]);
    check_context("cd - && ls", &["|cd -|", "|ls|?"]);
    check_context("popd; ls", &["|popd|", "|ls|?"]);
    check_context("cd -P -- src; ls", &["|cd -P -- src|", "|ls|,src"]);
    check_context(
        "for d in a; do touch x; cd sub; done",
        &["|touch x|", "|cd sub|", "|touch x|,sub?", "|cd sub|,sub?"],
    );
}

#[test]
fn redirections_are_recorded() {
    check("ls > out.txt 2>&1", &["ls||out.txt"]);
    check("echo x >> /etc/passwd", &["echo x||/etc/passwd"]);
    check("cat < in.txt", &["cat||"]);
    check("{ ls; } > log", &["ls||", "||log"]);
}

/// The policy a user writes to let `ls` and `make` run unasked, in `dont-ask` mode (where what no
/// rule allows is refused), and the `bash` tool's spec as the registry would declare it.
fn ls_and_make_allowed() -> (tempfile::TempDir, crate::permission::PermissionPolicy, ToolSpec) {
    use crate::permission::{PermissionMode, PolicyBuilder, RuleAction};
    let dir = tempfile::tempdir().unwrap();
    let workspace = crate::Workspace::new(dir.path()).unwrap();
    let mut builder = PolicyBuilder::new(workspace, PermissionMode::DontAsk);
    for rule in ["Bash(ls *)", "Bash(make *)"] {
        builder.rule(RuleAction::Allow, rule, "test").unwrap();
    }
    let spec = ToolSpec {
        name: "bash".to_owned(),
        description: String::new(),
        parameters: serde_json::json!({}),
        strict: true,
        aliases: Vec::new(),
        effects: agent_core::Effects::RUNS_PROCESSES,
        rule_name: "Bash".to_owned(),
        text_input: None,
        shape: agent_core::ToolShape::Function,
    };
    (dir, builder.build(), spec)
}

/// Shell text with no quote, backslash or comment, so whatever follows it is live syntax.
const PLAIN: &str = "[a-z0-9./ -]{0,8}";
/// Anything after the construct: quotes, unbalanced brackets, separators, newlines.
const AFTER: &str = r#"[a-z $()`'"|&;<>{}\\\n=*-]{0,24}"#;

/// A command line an `ls *` or `make *` rule seems to cover, with a construct whose effect is
/// known only when it runs: a command or process substitution anywhere in a word (also inside
/// double quotes), or `eval` / `source` / `.` in command position after a separator.
fn smuggled() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let program = proptest::sample::select(vec!["ls", "make"]);
    let substitution = proptest::sample::select(vec!["$(", "`", "<(", "\"$(", "\"`"]);
    let runner = proptest::sample::select(vec!["eval ", "source ", ". "]);
    let separator = proptest::sample::select(vec!["; ", " && ", " || ", " | ", "\n", " & "]);
    prop_oneof![
        (program.clone(), PLAIN, substitution, AFTER)
            .prop_map(|(p, a, s, c)| format!("{p} {a}{s}{c}")),
        (program, PLAIN, separator, runner, AFTER)
            .prop_map(|(p, a, sep, r, c)| format!("{p} {a}{sep}{r}{c}")),
    ]
}

proptest::proptest! {
    /// However it is dressed, a construct that runs code the analyzer cannot see is never
    /// allowed by a rule written for the visible command (and the analyzer never panics on it).
    #[test]
    fn smuggled_code_is_never_allowed_by_a_command_rule(command in smuggled()) {
        let (_dir, policy, spec) = ls_and_make_allowed();
        let verdict = policy.evaluate(&spec, &[Access::command(command.as_str())]);
        proptest::prop_assert!(
            !matches!(verdict, crate::permission::Verdict::Allow),
            "auto-allowed: {command:?}"
        );
    }

    /// The control: the same rules do allow the plain command, so the property above cannot pass
    /// because the rules never allow anything. `make` is not a safe read-only command, so only
    /// the rule can allow it.
    #[test]
    fn the_rules_allow_the_plain_commands(word in "[a-z0-9][a-z0-9._/-]{0,12}") {
        let (_dir, policy, spec) = ls_and_make_allowed();
        for command in [format!("ls {word}"), format!("make {word}")] {
            let verdict = policy.evaluate(&spec, &[Access::command(command.as_str())]);
            proptest::prop_assert!(
                matches!(verdict, crate::permission::Verdict::Allow),
                "refused: {command:?}: {verdict:?}"
            );
        }
    }

    #[test]
    fn arbitrary_command_lines_never_panic(command in r#"[a-z $()`'"|&;<>{}\\\n=*-]{0,40}"#) {
        let _ = analyze(&command);
    }
}

/// Without the rule, `make` is refused in `dont-ask` mode: the control above shows the rule's
/// effect, not a command that runs anyway.
#[test]
fn make_needs_its_rule() {
    use crate::permission::{PermissionMode, PolicyBuilder, Verdict};
    let dir = tempfile::tempdir().unwrap();
    let workspace = crate::Workspace::new(dir.path()).unwrap();
    let policy = PolicyBuilder::new(workspace, PermissionMode::DontAsk).build();
    let (_other, _, spec) = ls_and_make_allowed();
    let verdict = policy.evaluate(&spec, &[Access::command("make all")]);
    assert!(!matches!(verdict, Verdict::Allow), "{verdict:?}");
}

#[test]
fn deep_nesting_and_huge_commands_are_refused() {
    assert!(analyze(&"(".repeat(10_000)).is_err());
    assert!(analyze(&"$(".repeat(100)).is_err());
    assert!(analyze(&"ls ".repeat(30_000)).is_err());
}

/// The fuzz finding `regression-shell-parens-hang` (fuzz/corpus/shell): a line of unclosed
/// parentheses kept the parser busy for seconds (29 of them, 18 s), exponentially in their number,
/// inside the permission check. Such a line is refused at once; 16 levels still parse.
#[test]
fn regression_shell_parens_hang() {
    let started = std::time::Instant::now();
    assert!(analyze(&"(".repeat(29)).is_err());
    assert!(analyze("(^F(&(((((()(((((((1((((((((((").is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    assert!(analyze(&format!("{}ls{}", "(".repeat(16), ")".repeat(16))).is_ok());
}

#[test]
fn bad_input_is_a_parse_error() {
    check("echo 'unterminated", &["<parse error>"]);
    check("if then fi", &["<parse error>"]);
    check("", &["<parse error>"]);
}
