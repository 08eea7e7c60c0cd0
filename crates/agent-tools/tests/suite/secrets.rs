//! Secret files through the built-in tools: `grep` in every output mode and `bash`
//! under every permission mode reveal no byte of `.env`, unless a `Read(./.env)` allow rule says so.
//! The check is the effect: the secret bytes are absent from what the model would read.

use std::sync::Arc;

use agent_exec::{
    PermissionMode, PolicyBuilder, RuleAction, Workspace, sandbox::SandboxConfig,
    secret::SecretFiles, secrets_for_rules,
};
use agent_tools::{BashConfig, BuiltinConfig};
use serde_json::json;

use super::{Fixture, sandbox_missing};

const TOKEN: &str = "API_TOKEN=tok-5e0b77";

/// A workspace holding `.env`, a key and a source file, with tools whose sandbox and boundary
/// hide what the policy of `mode` and `allow` hides, wired the way a session does it.
fn fixture(mode: PermissionMode, allow: &[&str]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = PolicyBuilder::new(Workspace::new(dir.path()).unwrap(), mode);
    for rule in allow {
        builder.rule(RuleAction::Allow, rule, "test").unwrap();
    }
    let policy = builder.build();
    // A session that builds its tools before its policy derives the same list from the rules.
    let secrets =
        secrets_for_rules(SecretFiles::default(), dir.path(), allow.iter().copied()).unwrap();
    assert_eq!(secrets.files(), policy.secrets().files());
    let sandbox = SandboxConfig::new(dir.path()).with_secrets(secrets);
    let config = BuiltinConfig {
        bash: BashConfig { sandbox, ..BashConfig::default() },
        ..Default::default()
    };
    let mut fx = Fixture::with_config_in(config, dir);
    fx.boundary = Some(Arc::new(policy.workspace().clone()));
    fx.put(".env", format!("{TOKEN}\n"));
    fx.put("config/prod.key", "key-body-31c9d0\n");
    fx.put("src/app.rs", "// reads TOKEN from the environment\n");
    fx
}

#[tokio::test]
async fn grep_skips_secret_files_in_every_output_mode() {
    let fx = fixture(PermissionMode::DontAsk, &[]);
    for mode in ["files_with_matches", "content", "count"] {
        // Patterns are echoed when nothing matches, so none contains a whole secret.
        for pattern in ["TOKEN", "5e0b", "31c9", "."] {
            let args = json!({"pattern": pattern, "output_mode": mode, "include_hidden": true, "include_ignored": true});
            let out = fx.call("grep", args).await;
            assert!(
                !out.contains("tok-5e0b77") && !out.contains("key-body-31c9d0"),
                "{mode}/{pattern}: {out}"
            );
            assert!(!out.lines().any(|line| line.starts_with(".env")), "{mode}/{pattern}: {out}");
            assert!(
                out.contains("Note: skipped 2 secret files (.env, config/prod.key)"),
                "{mode}/{pattern}: {out}"
            );
        }
    }
}

#[tokio::test]
async fn bash_reveals_no_secret_in_any_permission_mode() {
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::Bypass,
    ] {
        let fx = fixture(mode, &[]);
        for command in [
            "cat .env",
            "grep -r TOKEN .",
            "python3 -c 'print(open(\".env\").read())'",
            "tar c . | base64 -w0 | base64 -d",
        ] {
            let out = fx.call("bash", json!({"command": command})).await;
            if sandbox_missing(&out) {
                return;
            }
            assert!(!out.contains("tok-5e0b77"), "BREACH in {mode}: `{command}` printed {out}");
        }
        let out = fx.call("bash", json!({"command": "cat .env"})).await;
        assert!(
            out.ends_with(
                "note: `.env` is hidden from commands; an allow rule `Read(./.env)` exposes it"
            ),
            "{out}"
        );
    }
}

#[tokio::test]
async fn a_read_allow_rule_exposes_the_file_to_bash() {
    let fx = fixture(PermissionMode::DontAsk, &["Read(./.env)"]);
    let out = fx.call("bash", json!({"command": "cat .env config/prod.key"})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert!(out.contains(TOKEN), "{out}");
    assert!(!out.contains("key-body"), "only what the rule names: {out}");
}

#[tokio::test]
async fn a_read_allow_rule_lets_grep_search_the_file() {
    let fx = fixture(PermissionMode::DontAsk, &["Read(./.env)"]);
    for mode in ["files_with_matches", "content", "count"] {
        let args = json!({"pattern": "TOKEN", "output_mode": mode, "include_hidden": true});
        let out = fx.call("grep", args).await;
        assert!(out.lines().any(|line| line.starts_with(".env")), "{mode}: {out}");
        assert!(out.contains("Note: skipped 1 secret file (config/prod.key)"), "{mode}: {out}");
    }
    let out = fx
        .call("grep", json!({"pattern": "TOKEN", "output_mode": "content", "include_hidden": true}))
        .await;
    assert!(out.contains(TOKEN), "{out}");
}
