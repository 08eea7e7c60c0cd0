//! `agent doctor`: a broken config file, a dead model server, a dead MCP server and a refused
//! skill each named with a fix; a live scripted server answering; secrets never printed.

use std::path::Path;

use agent_model::scripted::{Script, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{Running, command, stderr, stdout};

/// The key in the environment and the MCP server's `env` value: neither may be printed.
const KEY: &str = "sk-doctor-secret-4242";
const TOKEN: &str = "mcp-token-secret-9999";

/// `agent doctor --json` in `workspace` against `base_url`, with [`KEY`] in the environment;
/// the exit code and the report, checked to hold neither secret in any output.
fn check(workspace: &Path, base_url: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["--base-url", base_url, "--model", "test-model"];
    args.extend(extra);
    args.extend(["doctor", "--json", "--timeout", "20"]);
    let mut command = command(workspace, &args);
    command.env("OPENAI_API_KEY", KEY).stdin(std::process::Stdio::null());
    let output = Running::spawn(&mut command).finish("agent doctor");
    for secret in [KEY, TOKEN] {
        assert!(!stdout(&output).contains(secret), "{secret} printed:\n{}", stdout(&output));
        assert!(!stderr(&output).contains(secret), "{secret} on stderr:\n{}", stderr(&output));
    }
    let report = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|err| panic!("{err}: {}\n{}", stdout(&output), stderr(&output)));
    (output.status.code(), report)
}

/// The one check of `area` about `subject` (ending with it), or panics showing the report.
fn find<'a>(report: &'a Value, area: &str, subject: &str) -> &'a Value {
    let checks = report["checks"].as_array().unwrap();
    checks
        .iter()
        .find(|c| c["area"] == area && c["subject"].as_str().unwrap().ends_with(subject))
        .unwrap_or_else(|| panic!("no {area} check of {subject}: {report:#}"))
}

/// A loopback port nothing listens on: bound, then let go.
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_broken_config_a_dead_mcp_server_and_a_refused_skill_are_named_with_their_fixes() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    let skill = workspace.join(".agents/skills/folder");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), "---\nname: other\ndescription: x\n---\nbody\n")
        .unwrap();
    let config = dir.path().join("config.toml");
    let text = format!(
        "[limits]\ntool_timeout_secs = 0\n\n[mcp_servers.dead]\ncommand = \"{}\"\nenv = {{ TOKEN \
         = \"{TOKEN}\" }}\n",
        dir.path().join(format!("no-such-server-{TOKEN}")).display()
    );
    std::fs::write(&config, text).unwrap();
    let port = dead_port();
    // Both secrets sit where a report quotes them (a key in the URL's path, the token in the
    // server's program name), so only the masking keeps them out.
    let url = format!("http://127.0.0.1:{port}/{KEY}/v1");
    let (code, report) = check(&workspace, &url, &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["status"], "fail");

    let broken = find(&report, "config", "config.toml");
    assert_eq!(broken["status"], "fail");
    assert!(broken["message"].as_str().unwrap().contains("tool_timeout_secs = 0"), "{broken}");
    assert!(broken["fix"].as_str().unwrap().contains(config.to_str().unwrap()), "{broken}");
    // The broken file's MCP servers are still started and checked.
    let dead = find(&report, "mcp", "dead");
    assert_eq!(dead["status"], "fail");
    assert!(dead["message"].as_str().unwrap().contains("no-such-server-*****"), "{dead}");
    assert!(dead["fix"].as_str().unwrap().contains("[mcp_servers.dead]"), "{dead}");
    let refused = find(&report, "skills", "/folder");
    assert_eq!(refused["status"], "warn");
    assert!(refused["message"].as_str().unwrap().contains("differs from its folder"));
    assert!(refused["fix"].as_str().unwrap().contains("SKILL.md"), "{refused}");
    let model = find(&report, "model", "/*****/v1");
    assert_eq!(model["status"], "fail");
    assert!(model["fix"].as_str().unwrap().contains("--base-url"), "{model}");

    // The shape, with what differs by machine and run left out.
    let root = dir.path().to_str().unwrap();
    let text = report.to_string().replace(root, "[dir]").replace(&port.to_string(), "[port]");
    let mut shape: Value = serde_json::from_str(&text).unwrap();
    shape["versions"] = json!("[versions]");
    for check in shape["checks"].as_array_mut().unwrap() {
        if check["area"] == "sandbox" {
            *check = json!({"area": "sandbox", "subject": check["subject"], "status": "[kernel]"});
        }
    }
    insta::assert_json_snapshot!("doctor_broken", shape);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_server_answers_the_tiny_request() {
    let server = ScriptedServer::start(Script::new(vec![Turn::text("ok")])).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let (code, report) =
        tokio::task::spawn_blocking(move || check(&workspace, &url, &[])).await.unwrap();
    let model = find(&report, "model", &server.url());
    assert_eq!(model["status"], "ok", "{report:#}");
    assert!(model["message"].as_str().unwrap().starts_with("answered"), "{model}");
    assert_eq!(server.requests().len(), 1, "one tiny request, no retry");
    // Nothing else is configured, so only the kernel can fail this machine.
    let sandbox = find(&report, "sandbox", "workspace-write");
    assert_eq!(code == Some(1), sandbox["status"] == "fail", "{report:#}");
    assert_eq!(find(&report, "config", "config.toml")["status"], "ok");
}

#[test]
fn language_servers_are_started_and_one_that_cannot_start_fails_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-lsp/tests/peers/fake_lsp.py");
    let server = |language: &str, mode: &str| {
        format!(
            "[lsp.{language}]\ncommand = [\"python3\", {:?}, \"{mode}\"]\nfile_types = [\"{language}\"]\n",
            fake.display()
        )
    };
    let config = dir.path().join("config.toml");
    std::fs::write(&config, server("quiet", "quiet") + &server("gone", "exit")).unwrap();
    let url = format!("http://127.0.0.1:{}/v1", dead_port());
    let (code, report) = check(&workspace, &url, &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{report:#}");
    let quiet = find(&report, "lsp", "quiet");
    assert_eq!(quiet["status"], "ok", "{quiet}");
    assert!(quiet["message"].as_str().unwrap().ends_with("started and initialized"), "{quiet}");
    let gone = find(&report, "lsp", "gone");
    assert_eq!(gone["status"], "fail", "{gone}");
    assert!(gone["message"].as_str().unwrap().starts_with("python3 did not start: "), "{gone}");
    assert!(gone["fix"].as_str().unwrap().contains("[lsp.gone]"), "{gone}");
}
