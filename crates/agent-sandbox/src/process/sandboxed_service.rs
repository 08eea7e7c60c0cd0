//! Long-running helpers that run under the OS sandbox (language servers): the same policy,
//! limits, supervisor and process group as a tool's command, with stdin and stdout kept open as
//! pipes for as long as the helper lives.

use std::process::Stdio;

use super::{Group, Launch, ProcessSpec, SpawnError, Spawned, Until, resolve, spawn};
use crate::sandbox::{MaskDir, SandboxConfig};

/// Starts `spec` under `config` as a long-lived service: the file-system rules, network switch,
/// resource limits (the process count included) and hidden secrets of a tool's command, below a
/// supervisor of its own (so nothing of it outlives this process, by any death), with stdin and
/// stdout as pipes and stderr to `stderr` (a log file).
///
/// Unlike [`super::spawn_service`] (MCP servers, which the user trusts with their own rights), a
/// service started here runs code the model may have written (a language server loads the
/// project's configuration and plugins), so it gets the sandbox. A caller that wants it to write
/// only its own cache passes a configuration whose workspace is that cache.
pub fn spawn_sandboxed_service(
    spec: &ProcessSpec,
    config: &SandboxConfig,
    stderr: std::fs::File,
) -> Result<SandboxedService, SpawnError> {
    let resolved = resolve(spec, config)?;
    let launch = Launch {
        rules: resolved.rules.as_ref(),
        read_only: resolved.read_only.as_deref(),
        hide: &resolved.hide,
        env: &resolved.env,
        cwd: &resolved.cwd,
    };
    let stdio = [Stdio::piped(), Stdio::piped(), Stdio::from(stderr)];
    let Spawned { mut child, group, masks, started: _ } =
        spawn(spec, config, &launch, stdio, Until::Command)?;
    let missing = || SpawnError::Io(std::io::Error::other("the child has no stdio pipe"));
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    Ok(SandboxedService {
        pid: child.id(),
        child,
        group,
        stdin: Some(stdin),
        stdout: Some(stdout),
        _keep: (masks, resolved.temp),
    })
}

/// A running service started by [`spawn_sandboxed_service`]. Dropping it kills its whole
/// process group (and, for root, its pids cgroup).
pub struct SandboxedService {
    pid: Option<u32>,
    child: tokio::process::Child,
    group: Group,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: Option<tokio::process::ChildStdout>,
    /// The masks over secrets and the private temp dir, kept while the service runs.
    _keep: (Option<MaskDir>, Option<tempfile::TempDir>),
}

impl std::fmt::Debug for SandboxedService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxedService").field("pid", &self.pid).finish_non_exhaustive()
    }
}

impl SandboxedService {
    /// Takes the pipes to the service: (its stdout to read, its stdin to write).
    pub fn take_stdio(
        &mut self,
    ) -> Option<(tokio::process::ChildStdout, tokio::process::ChildStdin)> {
        Some((self.stdout.take()?, self.stdin.take()?))
    }

    /// The process id of its supervisor, which is also the process group of the service.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the service has exited.
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the whole group now (dropping does the same).
    pub fn kill(&self) {
        self.group.signal(libc::SIGKILL);
    }
}
