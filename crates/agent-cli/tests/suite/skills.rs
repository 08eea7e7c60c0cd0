//! Skills and custom commands end to end: published skills found and listed, our validator
//! against the reference `skills-ref`, the list's budget on the first request, a skill picked by
//! the model and its script run under the policy, `allowed-tools` granting nothing, and a custom
//! command expanded in exec and in the REPL.

use std::path::{Path, PathBuf};

use agent_model::scripted::{ScriptedCall, Turn};
use serde_json::{Value, json};

use crate::suite::{agent, exec::exec, repl::chat, stderr, stdout};

const PUBLISHED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/skills/published");

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A skill `name` in `root` with `frontmatter` (the lines between the `---`) and `body`.
fn skill(root: &Path, name: &str, frontmatter: &str, body: &str) -> PathBuf {
    let dir = root.join(name);
    write(&dir.join("SKILL.md"), &format!("---\n{frontmatter}\n---\n{body}\n"));
    dir
}

/// `agent skills list --json` in `workspace`.
fn list(workspace: &Path, extra: &[&str]) -> Value {
    let mut args = extra.to_vec();
    args.extend(["skills", "list", "--json"]);
    let output = agent(workspace, &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// The text of the first request's system message.
fn system(bodies: &[Value]) -> String {
    bodies[0]["messages"][0]["content"].as_str().unwrap().to_owned()
}

#[test]
fn published_skills_are_found_validated_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".agents/skills");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(PUBLISHED).unwrap().map(Result::unwrap) {
        if entry.path().is_dir() {
            let name = entry.file_name().into_string().unwrap();
            let text = std::fs::read_to_string(entry.path().join("SKILL.md")).unwrap();
            write(&root.join(&name).join("SKILL.md"), &text);
            names.push(name);
        }
    }
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    let listed = list(dir.path(), &[]);
    let found: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["name"].as_str().unwrap())
        .collect();
    assert_eq!(found, names);
    for skill in listed["skills"].as_array().unwrap() {
        assert_eq!(skill["source"], "project");
        assert_eq!(skill["warnings"], json!([]), "{skill}");
        assert!(skill["tokens"].as_u64().unwrap() > 10, "{skill}");
    }
    assert_eq!(listed["refused"], json!([]));
    // The table shows the same, one line each.
    let table = stdout(&agent(dir.path(), &["skills", "list"]));
    assert!(
        table.lines().any(|line| line.starts_with("mcp-builder") && line.contains("project")),
        "{table}"
    );
}

/// Fixtures on which the specification is clear: (folder, frontmatter, valid).
fn fixtures() -> Vec<(String, String, bool)> {
    let long = |n: usize| "x".repeat(n);
    let cases: Vec<(String, String, bool)> = vec![
        ("minimal".into(), "name: minimal\ndescription: Does one thing.".into(), true),
        ("full".into(), "name: full\ndescription: >\n  Folded\n  description.\nlicense: MIT\ncompatibility: Needs git.\nmetadata:\n  author: someone\n  version: \"1.0\"\nallowed-tools: Bash(git:*) Read".into(), true),
        ("café".into(), "name: café\ndescription: Unicode letters are letters.".into(), true),
        ("123".into(), "name: 123\ndescription: Digits only.".into(), true),
        ("no-name".into(), "description: No name.".into(), false),
        ("no-description".into(), "name: no-description".into(), false),
        ("empty-description".into(), "name: empty-description\ndescription: \"\"".into(), false),
        ("Upper".into(), "name: Upper\ndescription: Upper case.".into(), false),
        ("under_score".into(), "name: under_score\ndescription: Underscore.".into(), false),
        ("-lead".into(), "name: -lead\ndescription: Leading hyphen.".into(), false),
        ("trail-".into(), "name: trail-\ndescription: Trailing hyphen.".into(), false),
        ("two--hyphens".into(), "name: two--hyphens\ndescription: Two hyphens.".into(), false),
        ("folder".into(), "name: other\ndescription: Name differs from folder.".into(), false),
        (long(65), format!("name: {}\ndescription: Too long a name.", long(65)), false),
        (long(64), format!("name: {}\ndescription: The longest name.", long(64)), true),
        ("long-description".into(), format!("name: long-description\ndescription: {}", long(1025)), false),
        ("max-description".into(), format!("name: max-description\ndescription: {}", long(1024)), true),
        ("long-compat".into(), format!("name: long-compat\ndescription: d\ncompatibility: {}", long(501)), false),
        ("extra-field".into(), "name: extra-field\ndescription: d\nmodel: gpt-5".into(), false),
    ];
    cases
}

#[test]
fn the_reference_validator_and_ours_agree() {
    let Some(python) = agent_test_support::peer_python("skills") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".agents/skills");
    let mut expected: Vec<(PathBuf, bool)> = Vec::new();
    for (folder, frontmatter, valid) in fixtures() {
        expected.push((skill(&root, &folder, &frontmatter, "Body."), valid));
    }
    write(&root.join("no-frontmatter/SKILL.md"), "# Just Markdown\n");
    expected.push((root.join("no-frontmatter"), false));
    write(&root.join("unclosed/SKILL.md"), "---\nname: unclosed\ndescription: d\n");
    expected.push((root.join("unclosed"), false));
    write(&root.join("a-list/SKILL.md"), "---\n- a\n- b\n---\n");
    expected.push((root.join("a-list"), false));
    // Hostile YAML: both refuse it (skills-ref's strictyaml refuses anchors and flow style; on
    // 100,000 block levels it fails with a RecursionError, a refusal all the same).
    for (folder, text) in hostile() {
        write(&root.join(&folder).join("SKILL.md"), &text);
        expected.push((root.join(folder), false));
    }
    for entry in std::fs::read_dir(PUBLISHED).unwrap().map(Result::unwrap) {
        if entry.path().is_dir() {
            expected.push((entry.path(), true));
        }
    }
    let listed = list(dir.path(), &[]);
    let clean: Vec<PathBuf> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|skill| skill["warnings"] == json!([]))
        .map(|skill| PathBuf::from(skill["path"].as_str().unwrap()).parent().unwrap().to_owned())
        .collect();
    for (path, valid) in expected {
        let reference = std::process::Command::new(&python)
            .args(["-c", "import sys; from skills_ref.validator import validate; e = validate(sys.argv[1]); print(e); sys.exit(1 if e else 0)"])
            .arg(&path)
            .output()
            .unwrap();
        let theirs = reference.status.success();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            theirs,
            valid,
            "skills-ref on {name}: {}",
            String::from_utf8_lossy(&reference.stdout)
        );
        // Published fixtures sit outside the listed root: ours judges them through a second list.
        let ours = if path.starts_with(&root) {
            clean.contains(&path)
        } else {
            let single = tempfile::tempdir().unwrap();
            let copy = single.path().join(".agents/skills").join(&name);
            write(&copy.join("SKILL.md"), &std::fs::read_to_string(path.join("SKILL.md")).unwrap());
            list(single.path(), &[])["skills"][0]["warnings"] == json!([])
        };
        assert_eq!(ours, valid, "ours on {name}: {listed}");
    }
    // A name that is not its folder's is refused, not merely warned about, and says why.
    let refused = listed["refused"].as_array().unwrap();
    let folder = refused.iter().find(|r| r["path"].as_str().unwrap().ends_with("/folder")).unwrap();
    assert_eq!(folder["problems"], json!(["name `other` differs from its folder `folder`"]));
    assert!(!listed["skills"].to_string().contains("\"other\""), "{listed}");
}

/// Skills whose frontmatter is hostile YAML: (folder, whole SKILL.md).
fn hostile() -> Vec<(String, String)> {
    // Nine levels of nine aliases: under 1 KB, 9^9 strings once expanded.
    let mut bomb = "---\nname: bomb\ndescription: d\na: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n".to_owned();
    let levels = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in levels.windows(2) {
        bomb.push_str(&format!(
            "{}: &{} [{}]\n",
            pair[1],
            pair[1],
            vec![format!("*{}", pair[0]); 9].join(",")
        ));
    }
    bomb.push_str("---\nBody.\n");
    let deep = 100_000;
    vec![
        ("bomb".into(), bomb),
        (
            "deep-flow".into(),
            format!(
                "---\nname: deep-flow\ndescription: d\nx: {}{}\n---\nB\n",
                "[".repeat(deep),
                "]".repeat(deep)
            ),
        ),
        (
            "deep-block".into(),
            format!("---\nname: deep-block\ndescription: d\nx:\n{}v\n---\nB\n", "- ".repeat(deep)),
        ),
    ]
}

/// 40 skills in the user's skills folder beside `config` (a config file with `[skills]` `table`).
fn forty_skills(workspace: &Path, table: &str) -> String {
    let config = workspace.join("cfg/config.toml");
    write(&config, &format!("[skills]\n{table}\n"));
    for i in 0..40 {
        let name = format!("team-skill-{i:02}");
        let about = format!(
            "Handles the team's recurring task number {i}, with its checklists and scripts."
        );
        skill(
            &workspace.join("cfg/skills"),
            &name,
            &format!("name: {name}\ndescription: {about}"),
            "Body.",
        );
    }
    config.display().to_string()
}

/// The names of the tools a request offers.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_owned()).collect()
        })
        .unwrap_or_default()
}

/// With 40 skills, every name reaches the model: in the first request, or (when the
/// instructions name the `skills` call and it is offered) in that call's answer. The first
/// request grows by at most the budget for the descriptions plus as much again for the names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_skills_are_each_named_or_reachable_by_the_call_the_instructions_name() {
    let bare = tempfile::tempdir().unwrap();
    let (output, bodies) =
        exec(bare.path(), vec![Turn::text("ok")], &["--api", "chat", "exec", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let base = system(&bodies).chars().count();
    let base_tools = offered(&bodies[0]);
    // test-model: a 32,768-token window, so the default 2 % is 655 tokens.
    for (table, budget) in [("budget_tokens = 40", 40), ("budget_tokens = 300", 300), ("", 655)] {
        let dir = tempfile::tempdir().unwrap();
        let config = forty_skills(dir.path(), table);
        let turns = vec![
            Turn::tool_calls([ScriptedCall::new("c1", "skills", json!({}))]),
            Turn::text("ok"),
        ];
        let args = ["--api", "chat", "--config", &config, "exec", "hi"];
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = system(&bodies);
        let tools = offered(&bodies[0]);
        let call_named = text.contains("Call `skills`");
        // The call is offered exactly when the instructions name it, and nothing else is added.
        assert_eq!(tools.contains(&"skills".to_owned()), call_named, "{budget}: {tools:?}");
        let extra: Vec<&String> = tools.iter().filter(|tool| !base_tools.contains(tool)).collect();
        assert!(extra.iter().all(|tool| *tool == "skills"), "{extra:?}");
        let answer = if call_named { bodies[1]["messages"].to_string() } else { String::new() };
        for i in 0..40 {
            let name = format!("team-skill-{i:02}");
            assert!(
                text.contains(&name) || answer.contains(&format!("- {name}: ")),
                "budget {budget}: {name} is neither in the first request nor in the call's answer\n{text}\n{answer}"
            );
        }
        // test-model is counted at four characters a token; the fixed words of the heading and
        // the closing line (80 tokens) go out even past a budget too small for them.
        let grown = text.chars().count() - base;
        let limit = (budget.max(80) + budget) * 4;
        assert!(grown <= limit, "budget {budget}: grew by {grown} characters, over {limit}");
        assert!(text.contains("over its budget"), "{text}");
        assert!(!text.contains("recurring task number 39"), "{text}");
        assert!(stderr(&output).contains(&format!("over its budget of {budget} tokens")));
        if budget == 40 {
            // Past twice the budget, some names are only behind the call.
            assert!(text.contains("are not named either"), "{text}");
        } else {
            assert!(!text.contains("are not named either"), "{budget}: {text}");
        }
    }
    // The control: with room, every description goes out and no call is offered.
    let dir = tempfile::tempdir().unwrap();
    let config = forty_skills(dir.path(), "budget_tokens = 100000");
    let args = ["--api", "chat", "--config", &config, "exec", "hi"];
    let (output, bodies) = exec(dir.path(), vec![Turn::text("ok")], &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(system(&bodies).contains("recurring task number 39"));
    assert!(!offered(&bodies[0]).contains(&"skills".to_owned()));
}

/// A project skill `greet` whose script writes `greeted.txt`; the model reads its SKILL.md,
/// then runs the script.
fn greet_turns(workspace: &Path) -> Vec<Turn> {
    let root = workspace.join(".agents/skills");
    let dir = skill(
        &root,
        "greet",
        "name: greet\ndescription: Greets the team.",
        "To greet, run `bash scripts/hello.sh` from this folder.\nGREET-BODY-MARKER",
    );
    write(&dir.join("scripts/hello.sh"), "echo hello > greeted.txt\n");
    vec![
        Turn::tool_calls([ScriptedCall::new(
            "c1",
            "read_file",
            json!({"path": ".agents/skills/greet/SKILL.md"}),
        )]),
        Turn::tool_calls([ScriptedCall::new(
            "c2",
            "bash",
            json!({"command": "bash .agents/skills/greet/scripts/hello.sh"}),
        )]),
        Turn::text("Greeted."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picked_skill_loads_its_body_and_its_script_runs_under_the_policy() {
    for allowed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let turns = greet_turns(dir.path());
        let mut args = vec!["--api", "chat"];
        if allowed {
            args.extend(["--allow", "Bash(bash .agents/skills/greet/scripts/hello.sh)"]);
        }
        args.extend(["exec", "greet the team"]);
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        // Only the metadata was in the first request; the body arrives with the read.
        assert!(system(&bodies).contains("- greet: Greets the team."), "{}", system(&bodies));
        assert!(!bodies[0].to_string().contains("GREET-BODY-MARKER"));
        assert!(bodies[1].to_string().contains("GREET-BODY-MARKER"), "{}", bodies[1]);
        // The script is an ordinary command: it runs when a rule allows it, and not otherwise.
        assert_eq!(dir.path().join("greeted.txt").exists(), allowed, "{}", bodies[2]);
        if !allowed {
            assert!(bodies[2].to_string().contains("permission_denied"), "{}", bodies[2]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_tools_in_a_project_skill_do_not_let_rm_run() {
    for rule in [None, Some("Bash(rm *)")] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".agents/skills");
        skill(
            &root,
            "wipe",
            "name: wipe\ndescription: Cleans up.\nallowed-tools: Bash(*)",
            "Run `rm victim.txt`.",
        );
        write(&dir.path().join("victim.txt"), "keep me\n");
        let turns = vec![
            Turn::tool_calls([ScriptedCall::new(
                "c1",
                "bash",
                json!({"command": "rm victim.txt"}),
            )]),
            Turn::text("Done."),
        ];
        let mut args = vec!["--api", "chat", "--permission-mode", "dont-ask"];
        args.extend(rule.iter().flat_map(|rule| ["--allow", rule]));
        args.extend(["exec", "use $wipe"]);
        let (output, bodies) = exec(dir.path(), turns, &args).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        // `$wipe` loaded the skill, `allowed-tools` and all, into the prompt.
        assert!(bodies[0].to_string().contains("<skill name=\\\"wipe\\\""), "{}", bodies[0]);
        // The control: the same call runs when the user's own rule allows it.
        assert_eq!(dir.path().join("victim.txt").exists(), rule.is_none(), "{}", bodies[1]);
    }
}

/// A user command `git:fix` in the default config directory of a test workspace.
fn fix_command(workspace: &Path) {
    write(
        &workspace.join(".no-config/agent/commands/git/fix.md"),
        "---\ndescription: Fix an issue\nargument-hint: <issue> <file>\n---\nFix issue #$1 in `$2`.\nAll arguments: $ARGUMENTS\nCost: $5 (unset).\n",
    );
}

fn first_user_message(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().find(|m| m["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_expands_exactly_in_exec_and_in_the_repl() {
    let dir = tempfile::tempdir().unwrap();
    fix_command(dir.path());
    let typed = "/git:fix 42 \"src/a b.rs\" now";
    let (output, bodies) =
        exec(dir.path(), vec![Turn::text("ok")], &["--api", "chat", "exec", typed]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let from_exec = first_user_message(&bodies[0]);
    insta::assert_snapshot!("command_expanded", from_exec);

    let repl = tempfile::tempdir().unwrap();
    fix_command(repl.path());
    let (output, bodies) = chat(repl.path(), vec![Turn::text("ok")], &["/help", typed]).await;
    assert!(
        stderr(&output).contains("/git:fix <issue> <file>  Fix an issue"),
        "{}",
        stderr(&output)
    );
    assert_eq!(first_user_message(&bodies[0]), from_exec);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_skills_folder_is_readable_and_nothing_beside_it() {
    let top = tempfile::tempdir().unwrap();
    let workspace = top.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let config = top.path().join("cfg/config.toml");
    write(&config, "");
    let dir = skill(
        &top.path().join("cfg/skills"),
        "notes",
        "name: notes\ndescription: Takes notes.",
        "NOTES-BODY",
    );
    write(&top.path().join("cfg/other.md"), "OTHER-TEXT");
    let (body, other) = (dir.join("SKILL.md"), top.path().join("cfg/other.md"));
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("c1", "read_file", json!({"path": body}))]),
        Turn::tool_calls([ScriptedCall::new("c2", "read_file", json!({"path": other}))]),
        Turn::text("Read."),
    ];
    let config = config.display().to_string();
    let args = ["--api", "chat", "--config", &config, "exec", "take notes"];
    let (output, bodies) = exec(&workspace, turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(bodies[1].to_string().contains("NOTES-BODY"), "{}", bodies[1]);
    // The control: the folder beside it stays outside the boundary.
    assert!(!bodies[2].to_string().contains("OTHER-TEXT"), "{}", bodies[2]);
    assert!(bodies[2].to_string().contains("outside_workspace"), "{}", bodies[2]);
}
