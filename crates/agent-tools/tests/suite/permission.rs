//! The permission policy judging the real tools' `access()`, not test doubles: what a built-in
//! tool reports (bash's `workdir`, web_search's provider host) is what the policy sees.

use agent_exec::{PermissionMode, PolicyBuilder, RuleAction, Verdict, Workspace};
use agent_tools::{BuiltinConfig, EditTool, ProviderKind, WebSearchConfig};
use serde_json::{Value, json};

use super::Fixture;

use PermissionMode::{AcceptEdits as Edits, Bypass, Default as Dflt};
use RuleAction::{Allow, Deny};

/// Judges the real `tool(arguments)` under `mode` and `rules`; `expect` is `allow`, `ask` or
/// `deny:<code>`.
#[track_caller]
fn check(
    mode: PermissionMode,
    rules: &[(RuleAction, &str)],
    tool: &str,
    args: Value,
    expect: &str,
) {
    let search =
        WebSearchConfig::new(ProviderKind::Searxng).with_base_url("http://search.test:8888");
    let edit_tool = if tool == "apply_patch" { EditTool::ApplyPatch } else { EditTool::EditFile };
    let fx = Fixture::with_config(BuiltinConfig {
        web_search: Some(search),
        edit_tool,
        ..BuiltinConfig::default()
    });
    for dir in [".git/hooks", ".agent", "src"] {
        std::fs::create_dir_all(fx.root().join(dir)).unwrap();
    }
    let mut builder = PolicyBuilder::new(Workspace::new(fx.root()).unwrap(), mode);
    for (action, text) in rules {
        builder.rule(*action, text, "test").unwrap();
    }
    let policy = builder.build();
    let tool = fx.tools.iter().find(|t| t.spec().name == tool).expect("tool exists");
    let prepared = tool.prepare(&args.to_string()).unwrap();
    let got = match policy.evaluate(tool.spec(), prepared.access()) {
        Verdict::Allow => "allow".to_owned(),
        Verdict::Ask(_) => "ask".to_owned(),
        Verdict::Deny(err) => format!("deny:{}", err.kind),
    };
    assert_eq!(got, expect, "{mode} {rules:?} {tool}({args})", tool = tool.spec().name);
}

#[test]
fn bash_writes_are_judged_where_the_shell_will_be() {
    // Protected paths reached through `cd` or the real tool's `workdir` ask, even where edits
    // inside the workspace are accepted.
    check(Edits, &[], "bash", json!({"command": "cd .agent && touch config.toml"}), "ask");
    check(
        Edits,
        &[],
        "bash",
        json!({"command": "touch hooks/pre-commit", "workdir": ".git"}),
        "ask",
    );
    check(
        Bypass,
        &[],
        "bash",
        json!({"command": "touch pre-commit", "workdir": ".git/hooks"}),
        "ask",
    );
    check(Edits, &[], "bash", json!({"command": "touch new.rs", "workdir": "src"}), "allow");
    check(Edits, &[], "bash", json!({"command": "cd src && touch new.rs"}), "allow");
    check(Dflt, &[], "bash", json!({"command": "ls", "workdir": "src"}), "allow");
    let deny_src = [(Deny, "Edit(src/**)")];
    check(
        Edits,
        &deny_src,
        "bash",
        json!({"command": "touch x.rs", "workdir": "src"}),
        "deny:permission_denied",
    );
}

#[test]
fn file_tools_report_the_paths_they_touch() {
    check(Dflt, &[], "read_file", json!({"path": "src/lib.rs"}), "allow");
    check(Dflt, &[], "write_file", json!({"path": "src/new.rs", "content": "x"}), "ask");
    check(Edits, &[], "write_file", json!({"path": "src/new.rs", "content": "x"}), "allow");
    check(
        Edits,
        &[],
        "write_file",
        json!({"path": ".agent/settings.json", "content": "{}"}),
        "ask",
    );
    check(
        Edits,
        &[],
        "write_file",
        json!({"path": ".git/hooks/pre-commit", "content": "x"}),
        "ask",
    );
    check(
        Dflt,
        &[(Allow, "Edit(src/**)")],
        "write_file",
        json!({"path": "src/a.rs", "content": "x"}),
        "allow",
    );
    check(
        Edits,
        &[],
        "edit_file",
        json!({"path": ".agent/x.toml", "old_string": "a", "new_string": "b"}),
        "ask",
    );
    check(
        Dflt,
        &[(Deny, "Read(src)")],
        "grep",
        json!({"pattern": "x", "path": "src"}),
        "deny:permission_denied",
    );
    check(Dflt, &[], "read_file", json!({"path": "../outside.txt"}), "deny:outside_workspace");
}

#[test]
fn apply_patch_is_judged_on_every_path_it_touches() {
    let patch = |body: &str| json!({ "patch": format!("*** Begin Patch\n{body}*** End Patch") });
    let moving =
        |to: &str| patch(&format!("*** Update File: src/a.rs\n*** Move to: {to}\n@@\n-a\n+b\n"));
    check(Edits, &[], "apply_patch", moving("src/b.rs"), "allow");
    check(Dflt, &[], "apply_patch", moving("src/b.rs"), "ask");
    // The destination of a move is judged, not only its source.
    check(Edits, &[], "apply_patch", moving(".git/hooks/pre-commit"), "ask");
    check(Bypass, &[], "apply_patch", moving(".agent/settings.json"), "ask");
    check(Edits, &[], "apply_patch", patch("*** Delete File: .git/hooks/pre-push\n"), "ask");
    check(Edits, &[], "apply_patch", patch("*** Add File: ../x\n+x\n"), "deny:outside_workspace");
    let deny_docs = [(Deny, "Edit(docs/**)")];
    let both = patch("*** Add File: src/ok.rs\n+x\n*** Add File: docs/no.md\n+x\n");
    check(Edits, &deny_docs, "apply_patch", both, "deny:permission_denied");
}

#[test]
fn web_search_is_judged_on_the_provider_host() {
    // The model's domain filters are not where the request goes: the rule names the provider.
    let query = json!({"query": "rust", "allowed_domains": ["docs.rs"]});
    check(Dflt, &[], "web_search", query.clone(), "ask");
    check(Dflt, &[(Allow, "WebSearch(domain:search.test)")], "web_search", query.clone(), "allow");
    check(Dflt, &[(Allow, "WebSearch(domain:docs.rs)")], "web_search", query.clone(), "ask");
    check(
        Bypass,
        &[(Deny, "WebSearch(domain:search.test)")],
        "web_search",
        query,
        "deny:permission_denied",
    );
}
