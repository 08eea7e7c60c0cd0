//! Test modules and the helpers they share: running the binary and a scripted model server.

mod exec;
mod help;
mod interrupt;
mod mcp;
mod repl;
mod replay;
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

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
