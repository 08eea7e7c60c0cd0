//! Every tool's spec is strict-valid, and pinned as the model receives it.

use agent_tools::{BuiltinConfig, builtin};

#[test]
fn every_spec_is_strict_and_pinned() {
    let tools = builtin(&BuiltinConfig::default()).expect("every schema converts to strict");
    for tool in &tools {
        let spec = tool.spec();
        assert!(spec.strict, "{} is not strict", spec.name);
        assert_eq!(spec.parameters["additionalProperties"], false, "{}", spec.name);
        // Strict mode: every property is listed as required (optional ones are nullable).
        let properties: Vec<&String> =
            spec.parameters["properties"].as_object().unwrap().keys().collect();
        let required: Vec<&str> = spec.parameters["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(properties, required, "{}", spec.name);
        insta::assert_json_snapshot!(format!("spec_{}", spec.name), spec);
    }
}

#[test]
fn rule_names_match_the_permission_vocabulary() {
    let tools = builtin(&BuiltinConfig::default()).unwrap();
    let names: Vec<(String, String)> =
        tools.iter().map(|t| (t.spec().name.clone(), t.spec().rule_name.clone())).collect();
    let expected = [
        ("read_file", "Read"),
        ("view_image", "Read"),
        ("write_file", "Edit"),
        ("edit_file", "Edit"),
        ("uppercase", "Uppercase"),
        ("bash", "Bash"),
        ("job", "Job"),
        ("grep", "Grep"),
        ("glob", "Glob"),
        ("list_dir", "ListDir"),
        ("web_search", "WebSearch"),
        ("web_fetch", "WebFetch"),
        ("execute_code", "ExecuteCode"),
    ];
    assert_eq!(names.len(), expected.len(), "{names:?}");
    for (name, rule) in expected {
        assert!(
            names.contains(&(name.to_owned(), rule.to_owned())),
            "{name} → {rule} in {names:?}"
        );
    }
}

/// The tools that `builtin` does not build (they need the session's plan or its front end),
/// pinned the same way.
#[test]
fn update_plan_apply_patch_and_ask_user_specs_are_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let book = std::sync::Arc::new(agent_exec::plan::PlanBook::open(dir.path()));
    let plan = agent_core::Typed::new(agent_tools::UpdatePlan::new(book)).unwrap();
    let patch =
        agent_core::Typed::new(agent_tools::ApplyPatch::new(agent_tools::FileTracker::new()))
            .unwrap();
    let ask = agent_core::Typed::new(agent_tools::AskUser::new(None)).unwrap();
    for tool in [&plan as &dyn agent_core::Tool, &patch, &ask] {
        let spec = tool.spec();
        assert!(spec.strict, "{} is not strict", spec.name);
        insta::assert_json_snapshot!(format!("spec_{}", spec.name), spec);
    }
}
