//! `agent tools`: the tool list, the exact schemas a model receives, and direct calls.

use serde_json::Value;

use crate::suite::{agent, stderr, stdout};

fn schema(api: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["tools", "schema", "--api", api]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// Checks OpenAI's strict rules on one schema node and everything below it.
fn assert_strict(node: &Value, path: &str) {
    let Some(map) = node.as_object() else { panic!("{path}: schema is not an object") };
    let allowed = [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$defs",
        "$ref",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    ];
    for key in map.keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "{path}: keyword `{key}` is not allowed in strict mode"
        );
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        assert_eq!(
            map.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{path}: object not closed"
        );
        let required: Vec<&str> =
            map["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let keys: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(required, keys, "{path}: every property must be required");
        for (key, child) in properties {
            assert_strict(child, &format!("{path}.{key}"));
        }
    }
    for key in ["items"] {
        if let Some(child) = map.get(key) {
            assert_strict(child, &format!("{path}.{key}"));
        }
    }
    for key in ["anyOf"] {
        for (i, child) in map.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            assert_strict(child, &format!("{path}.{key}[{i}]"));
        }
    }
    for (name, child) in map.get("$defs").and_then(Value::as_object).into_iter().flatten() {
        assert_strict(child, &format!("{path}.$defs.{name}"));
    }
}

#[test]
fn chat_schema_is_pinned_and_strict() {
    let tools = schema("chat");
    for tool in tools.as_array().unwrap() {
        let function = &tool["function"];
        assert_eq!(tool["type"], "function");
        assert_eq!(function["strict"], true, "{}", function["name"]);
        assert_strict(&function["parameters"], function["name"].as_str().unwrap());
    }
    insta::assert_json_snapshot!("tools_schema_chat", tools);
}

#[test]
fn responses_schema_is_pinned_and_strict() {
    let tools = schema("responses");
    for tool in tools.as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["strict"], true, "{}", tool["name"]);
        assert_strict(&tool["parameters"], tool["name"].as_str().unwrap());
    }
    insta::assert_json_snapshot!("tools_schema_responses", tools);
}

#[test]
fn both_apis_offer_the_same_tools_in_the_same_order() {
    let chat: Vec<Value> =
        schema("chat").as_array().unwrap().iter().map(|t| t["function"]["name"].clone()).collect();
    let responses: Vec<Value> =
        schema("responses").as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(chat, responses);
}

#[test]
fn list_names_every_builtin_tool_with_its_effects() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["tools", "list", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let list: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = list.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "uppercase",
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "grep",
            "glob",
            "view_image",
            "web_fetch",
            "execute_code",
            "update_plan",
            "task"
        ]
    );
    let bash = list.iter().find(|t| t["name"] == "bash").unwrap();
    assert!(bash["effects"].as_array().unwrap().contains(&Value::from("runs-processes")));
}

#[track_caller]
fn check_call(name: &str, arguments: &str, code: i32, expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let output = agent(dir.path(), &["tools", "call", name, arguments]);
    assert_eq!(output.status.code(), Some(code), "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains(expect), "{} does not contain {expect}", stdout(&output));
}

#[test]
fn direct_calls_print_the_observation_and_exit_by_outcome() {
    check_call("uppercase", r#"{"text":"straße"}"#, 0, "STRASSE");
    check_call("read_file", r#"{"path":"notes.txt"}"#, 0, "beta");
    check_call("nope", "{}", 1, r#""error":"unknown_tool""#);
    check_call("uppercase", r#"{"text":"a","x":1}"#, 1, r#""error":"invalid_arguments""#);
    check_call("read_file", r#"{"path":"../../etc/passwd"}"#, 1, r#""error":"outside_workspace""#);
}

/// D13: a capped direct call names the file holding its full output, and that file is there, whole,
/// after the command has exited (its scratch directory is kept only then, and said on stderr).
#[test]
fn a_capped_direct_call_names_a_saved_output_that_outlives_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let args = r#"{"command":"head -c 30000 /dev/zero | tr '\\0' x"}"#;
    let output = agent(dir.path(), &["tools", "call", "bash", args]);
    let out = stdout(&output);
    if out.contains("sandbox_unavailable") {
        agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {out}"));
        return;
    }
    let saved = out.split("full output saved to ").nth(1).and_then(|rest| rest.split(';').next());
    let saved = std::path::PathBuf::from(saved.unwrap_or_else(|| panic!("no saved file in {out}")));
    let text = std::fs::read_to_string(&saved).unwrap_or_else(|err| panic!("{saved:?}: {err}"));
    assert!(text.contains(&"x".repeat(30_000)), "{text}");
    let kept = saved.parent().and_then(std::path::Path::parent).unwrap();
    assert!(stderr(&output).contains(&kept.display().to_string()), "{}", stderr(&output));
    std::fs::remove_dir_all(kept).unwrap();
}

#[test]
fn a_bad_permission_mode_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["--permission-mode", "yolo", "tools", "list"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("yolo"), "{}", stderr(&output));
}

#[test]
fn an_outside_allow_rule_opens_exactly_that_path() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let allowed = outside.path().join("allowed.txt");
    std::fs::write(&allowed, "opened by the rule\n").unwrap();
    std::fs::write(outside.path().join("other.txt"), "never shown\n").unwrap();
    let rule = format!("Read(/{})", allowed.display());
    let read = |path: &std::path::Path| {
        let args = serde_json::json!({ "path": path }).to_string();
        agent(dir.path(), &["--allow", &rule, "tools", "call", "read_file", &args])
    };
    let output = read(&allowed);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains("opened by the rule"), "{}", stdout(&output));
    let output = read(&outside.path().join("other.txt"));
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains(r#""error":"outside_workspace""#), "{}", stdout(&output));
    assert!(!stdout(&output).contains("never shown"));
}

#[test]
fn a_direct_edit_changes_an_existing_file_and_keeps_its_line_endings() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), "fn main() {\r\n    old();\r\n}\r\n").unwrap();
    let args = r#"{"path":"main.rs","old_string":"old();","new_string":"new();"}"#;
    let output = agent(dir.path(), &["tools", "call", "edit_file", args]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let text = std::fs::read_to_string(dir.path().join("main.rs")).unwrap();
    assert_eq!(text, "fn main() {\r\n    new();\r\n}\r\n");
    let args = r#"{"path":"main.rs","content":"replaced\n"}"#;
    let output = agent(dir.path(), &["tools", "call", "write_file", args]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    // write_file keeps the line endings the file had.
    assert_eq!(std::fs::read_to_string(dir.path().join("main.rs")).unwrap(), "replaced\r\n");
}

#[test]
fn a_deny_rule_in_the_config_file_holds_for_direct_calls() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[permissions]\ndeny = [\"Bash(touch *)\"]\n").unwrap();
    let config = config.to_str().unwrap();
    let args = r#"{"command":"touch made-by-bash"}"#;
    let output = agent(dir.path(), &["--config", config, "tools", "call", "bash", args]);
    assert_eq!(output.status.code(), Some(1), "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains(r#""error":"permission_denied""#), "{}", stdout(&output));
    assert!(!dir.path().join("made-by-bash").exists(), "the denied command ran");
}

#[test]
fn tools_limits_the_offered_tools_and_rejects_unknown_names() {
    let dir = tempfile::tempdir().unwrap();
    let output = agent(dir.path(), &["--tools", "read_file,grep", "tools", "list", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let list: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = list.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["read_file", "grep"]);
    let output = agent(dir.path(), &["--tools", "read_file,cat", "tools", "list"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no tool named `cat`"), "{}", stderr(&output));
}

#[test]
fn commands_see_a_secret_file_only_when_an_allow_rule_exposes_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "API_TOKEN=tok-5ecret-value\n").unwrap();
    let args = r#"{"command":"cat .env; grep -r API_TOKEN . || true"}"#;
    let hidden = agent(dir.path(), &["tools", "call", "bash", args]);
    assert!(!stdout(&hidden).contains("tok-5ecret-value"), "{}", stdout(&hidden));
    let shown = agent(dir.path(), &["--allow", "Read(./.env)", "tools", "call", "bash", args]);
    assert!(stdout(&shown).contains("tok-5ecret-value"), "{}{}", stdout(&shown), stderr(&shown));
}

/// `execute_code`'s Python hides what bash and read_file hide. The workspace is a virtualenv, so
/// the interpreter may read it (it is the interpreter's prefix): `.env` in it reads as nothing,
/// unless a `Read(./.env)` allow rule exposes it, and then the snippet prints its bytes.
#[test]
fn python_sees_a_secret_file_only_when_an_allow_rule_exposes_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let venv = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&workspace)
        .output();
    if !venv.is_ok_and(|out| out.status.success()) {
        agent_test_support::skipped("python3 -m venv does not work here");
        return;
    }
    std::fs::write(workspace.join(".env"), "API_TOKEN=tok-9ython-value\n").unwrap();
    let env = workspace.join(".env").display().to_string();
    let code = format!("import pathlib\nprint(repr(pathlib.Path({env:?}).read_bytes()))");
    let args = serde_json::json!({"language": "python", "code": code}).to_string();
    // The venv's python3 comes first on PATH, so it is the interpreter execute_code finds.
    let path = std::env::join_paths(
        std::iter::once(workspace.join("bin"))
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let run = |rules: &[&str]| {
        let all = [rules, &["tools", "call", "execute_code", &args]].concat();
        let mut command = crate::suite::command(&workspace, &all);
        command.env("PATH", &path).stdin(std::process::Stdio::null());
        let output = crate::suite::Running::spawn(&mut command).finish("agent tools call");
        (stdout(&output), stderr(&output))
    };
    let (hidden, err) = run(&[]);
    if hidden.contains("sandbox_unavailable") || hidden.contains("runtime_missing") {
        agent_test_support::skipped(&format!("execute_code's Python cannot run here: {hidden}"));
        return;
    }
    assert!(!hidden.contains("tok-9ython-value"), "{hidden}{err}");
    // The file is there but empty to the snippet, so the run itself worked.
    assert!(hidden.contains(r#"b''"#), "{hidden}{err}");
    let (shown, err) = run(&["--allow", "Read(./.env)"]);
    assert!(shown.contains("tok-9ython-value"), "{shown}{err}");
}

#[test]
fn a_read_deny_rule_holds_for_grep_walks_and_read_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/vault.rs"), "// vault-6c1e body\n").unwrap();
    let deny = ["--deny", "Read(src/**)", "tools", "call"];
    for path in [".", "src"] {
        for mode in ["files_with_matches", "content", "count"] {
            let args = format!(r#"{{"pattern":"6c1e","path":"{path}","output_mode":"{mode}"}}"#);
            let output = agent(dir.path(), &[&deny[..], &["grep", &args]].concat());
            let out = stdout(&output);
            assert!(!out.contains("vault"), "{path}/{mode}: {out}{}", stderr(&output));
            assert!(out.contains("No matches"), "{path}/{mode}: {out}{}", stderr(&output));
        }
    }
    let output =
        agent(dir.path(), &[&deny[..], &["read_file", r#"{"path":"src/vault.rs"}"#]].concat());
    assert!(stdout(&output).contains(r#""error":"permission_denied""#), "{}", stdout(&output));
    assert!(!stdout(&output).contains("vault-6c1e"), "{}", stdout(&output));
}

/// `tools list --tokens` counts the instructions the agent really sends: the system message of
/// `exec`'s first request, with the offered tools' guidance and the project's AGENTS.md, estimated
/// the same way. Counting the bare default instructions would come out short, and would not change
/// with `--tools`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_count_is_of_the_instructions_the_agent_sends() {
    let dir = tempfile::tempdir().unwrap();
    let doc = "Run the tests with `make check` before you answer; never push.\n";
    std::fs::write(dir.path().join("AGENTS.md"), doc).unwrap();
    let mut counts = Vec::new();
    for only in [None, Some("read_file")] {
        let flags: Vec<&str> = only.map(|names| vec!["--tools", names]).unwrap_or_default();
        let (body, listed) = crate::suite::token_budget::sent_and_listed(dir.path(), &flags).await;
        let instructions = body["messages"][0]["content"].as_str().unwrap();
        assert!(instructions.contains("make check"), "{instructions}");
        let counted = listed["instructions"].as_u64().unwrap();
        let estimate = agent_model::estimate_tokens(instructions) as u64;
        assert_eq!(counted, estimate, "{flags:?}: {instructions}");
        counts.push(counted);
    }
    // Six guidance lines fewer with only read_file offered: the count follows what is sent.
    assert!(counts[1] < counts[0], "{counts:?}");
    let bare = agent_model::estimate_tokens(agent_exec::DEFAULT_INSTRUCTIONS) as u64;
    assert!(counts[1] > bare, "{counts:?} against {bare}");
}
