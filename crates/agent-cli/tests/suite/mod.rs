//! Test modules and the helpers they share: running the binary and a scripted model server.

mod exec;
mod help;
mod hooks;
mod interrupt;
mod mcp;
mod output;
mod repl;
mod replay;
mod stream;
mod tools;

use std::{
    path::Path,
    process::{Command, Output},
};

/// Runs the `agent` binary with `args` in `workspace`, with a clean environment (no key, no
/// config file, sessions under the workspace's parent) so the host never leaks into a test.
pub(crate) fn agent(workspace: &Path, args: &[&str]) -> Output {
    command(workspace, args).output().expect("the agent binary runs")
}

/// The `agent` command [`agent`] runs, for tests that feed stdin or signal the process.
pub(crate) fn command(workspace: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent"));
    command
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("AGENT_DATA_DIR", data_dir(workspace))
        .env("XDG_CONFIG_HOME", workspace.join(".no-config"));
    command
}

/// Where [`agent`] keeps sessions for `workspace`.
pub(crate) fn data_dir(workspace: &Path) -> std::path::PathBuf {
    workspace.parent().unwrap_or(workspace).join("agent-data")
}

/// The session id a non-JSON run printed on stderr.
pub(crate) fn session_id(output: &Output) -> String {
    stderr(output)
        .lines()
        .find_map(|line| line.split("--resume ").nth(1))
        .map(|rest| rest.trim_end_matches(')').to_owned())
        .unwrap_or_else(|| panic!("no session id in {}", stderr(output)))
}

/// The JSON lines of a session's transcript.
pub(crate) fn transcript(workspace: &Path, id: &str) -> Vec<serde_json::Value> {
    let path = data_dir(workspace).join("sessions").join(id).join("transcript.jsonl");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The `--json` events of a run, each validated against `docs/exec-events.schema.json`, with the
/// stream's promises checked: `run.started` with the schema version first, and exactly one
/// `run.completed` or `run.failed` last, carrying the process's exit code.
pub(crate) fn json_events(output: &Output) -> Vec<serde_json::Value> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/exec-events.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let text = stdout(output);
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect();
    for event in &events {
        if let Err(err) = validator.validate(event) {
            panic!("event does not fit the schema: {err}\n{event}");
        }
    }
    assert_eq!(events.first().map(|e| &e["type"]), Some(&"run.started".into()), "{text}");
    assert_eq!(events[0]["schema_version"], 1);
    let terminal =
        |e: &serde_json::Value| e["type"] == "run.completed" || e["type"] == "run.failed";
    assert_eq!(events.iter().filter(|e| terminal(e)).count(), 1, "{text}");
    let last = events.last().unwrap();
    assert!(terminal(last), "the stream did not end with its terminal event: {text}");
    assert_eq!(last["exit_code"].as_i64(), output.status.code().map(i64::from), "{text}");
    events
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
