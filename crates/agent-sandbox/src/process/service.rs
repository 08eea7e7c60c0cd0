//! Long-running services the user configured (MCP servers): started outside the sandbox, in a
//! process group of their own, with a secret-free environment.

use std::{ffi::OsString, io, process::Stdio};

use tokio::process::Command;

use super::{ProcessSpec, SpawnError};
use crate::sandbox;

/// A long-running helper the user configured to talk to over its stdin and stdout (an MCP
/// server), as opposed to a command a tool runs.
///
/// It runs outside the OS sandbox, like the MCP servers of Codex and Claude Code: the user chose
/// the program in the config file, and servers need their own network, caches and credentials.
/// What the model can do through it is judged per call by the permission policy instead. It still
/// gets its own process group (so [`ServiceChild`]'s drop kills everything it started), stdin and
/// stdout as pipes, stderr to `stderr` (a log file), and this process's environment without the
/// secrets [`sandbox::host_env`] removes (the model's API key never reaches it), plus `env`,
/// which the user wrote for this server and may name a secret on purpose.
pub fn spawn_service(
    spec: &ProcessSpec,
    env: &[(OsString, OsString)],
    stderr: std::fs::File,
) -> Result<ServiceChild, SpawnError> {
    let base = spec.base_env.clone().unwrap_or_else(|| std::env::vars_os().collect());
    #[expect(
        clippy::disallowed_methods,
        reason = "the sanctioned spawn of a configured service, documented above"
    )]
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(sandbox::host_env(base))
        .envs(env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let program = spec.program.to_string_lossy().into_owned();
    let mut child =
        command.spawn().map_err(|source| SpawnError::Spawn { program: program.clone(), source })?;
    let missing = || SpawnError::Io(io::Error::other("the child has no stdio pipe"));
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    Ok(ServiceChild { pid: child.id(), child, stdin: Some(stdin), stdout: Some(stdout) })
}

/// A running service started by [`spawn_service`]. Dropping it kills its whole process group.
#[derive(Debug)]
pub struct ServiceChild {
    pid: Option<u32>,
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: Option<tokio::process::ChildStdout>,
}

impl ServiceChild {
    /// Takes the pipes to the service: (its stdout to read, its stdin to write).
    pub fn take_stdio(
        &mut self,
    ) -> Option<(tokio::process::ChildStdout, tokio::process::ChildStdin)> {
        Some((self.stdout.take()?, self.stdin.take()?))
    }

    /// The process id (also its process group id) while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the process has exited.
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ServiceChild {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: killpg only sends a signal; the group is the one this child leads.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
}
