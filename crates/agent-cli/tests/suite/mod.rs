//! Test modules and the helpers they share: running the binary and a scripted model server.

mod exec;
mod tools;

use std::{
    path::Path,
    process::{Command, Output},
};

/// Runs the `agent` binary with `args` in `workspace`, with a clean environment (no key, no
/// config file, sessions under the workspace's parent) so the host never leaks into a test.
pub(crate) fn agent(workspace: &Path, args: &[&str]) -> Output {
    let data = workspace.parent().unwrap_or(workspace).join("agent-data");
    Command::new(env!("CARGO_BIN_EXE_agent"))
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("AGENT_DATA_DIR", data)
        .env("XDG_CONFIG_HOME", workspace.join(".no-config"))
        .output()
        .expect("the agent binary runs")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
