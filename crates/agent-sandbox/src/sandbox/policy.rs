//! What a sandboxed process may do: the policy, the network switch, resource limits and roots.

use std::{fmt, path::PathBuf, str::FromStr, time::Duration};

use serde::{Deserialize, Serialize};

use crate::secret::Secrets;

/// How much of the file system a sandboxed process may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxPolicy {
    /// Read everything, write nothing but `/dev/null`.
    ReadOnly,
    /// Read everything, write only the workspace, the private temp dir and configured extra roots.
    /// `.git` inside the workspace stays read-only where the kernel allows it.
    WorkspaceWrite,
    /// No OS sandbox at all: the process runs with the user's full rights.
    DangerFullAccess,
}

impl SandboxPolicy {
    /// Every policy, strictest first.
    pub const ALL: [SandboxPolicy; 3] =
        [SandboxPolicy::ReadOnly, SandboxPolicy::WorkspaceWrite, SandboxPolicy::DangerFullAccess];

    /// The name used on the command line and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxPolicy::ReadOnly => "read-only",
            SandboxPolicy::WorkspaceWrite => "workspace-write",
            SandboxPolicy::DangerFullAccess => "danger-full-access",
        }
    }

    /// Whether the policy asks the kernel for anything (everything but `danger-full-access`).
    pub fn is_restricted(self) -> bool {
        self != SandboxPolicy::DangerFullAccess
    }
}

impl fmt::Display for SandboxPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy name that is not one of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox policy `{0}`; expected read-only, workspace-write or danger-full-access")]
pub struct UnknownPolicy(pub String);

impl FromStr for SandboxPolicy {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SandboxPolicy::ALL
            .into_iter()
            .find(|policy| policy.as_str() == s)
            .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

/// Resource limits applied to every sandboxed process (`None` leaves a limit as inherited).
///
/// CPU, address space and file size are per-process `setrlimit` values. The process count is
/// enforced per sandboxed command tree, with a mechanism chosen by [`crate::sandbox::probe`]
/// (a pids cgroup for root, a user namespace plus `RLIMIT_NPROC` otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU time per process, in seconds (`RLIMIT_CPU`).
    pub cpu_seconds: Option<u64>,
    /// Virtual address space per process, in bytes (`RLIMIT_AS`).
    pub address_space_bytes: Option<u64>,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: Option<u64>,
    /// Processes alive at once in the command's tree.
    pub processes: Option<u64>,
}

impl Default for Limits {
    /// Generous enough for builds and test suites, tight enough to stop runaway commands:
    /// 10 CPU minutes, 16 GiB of address space (JIT runtimes reserve far more than they use),
    /// 4 GiB files and 512 processes.
    fn default() -> Self {
        Self {
            cpu_seconds: Some(600),
            address_space_bytes: Some(16 << 30),
            file_size_bytes: Some(4 << 30),
            processes: Some(512),
        }
    }
}

impl Limits {
    /// No limit at all.
    pub const NONE: Limits = Limits {
        cpu_seconds: None,
        address_space_bytes: None,
        file_size_bytes: None,
        processes: None,
    };
}

/// Everything the sandbox needs to know to start a process.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// How much of the file system the process may change.
    pub policy: SandboxPolicy,
    /// Whether the process may open network sockets (off by default). `AF_UNIX` is always allowed.
    pub network: bool,
    /// Resource limits.
    pub limits: Limits,
    /// The workspace root (writable under `workspace-write`).
    pub workspace: PathBuf,
    /// A private temp dir, writable under `workspace-write` and exported as `TMPDIR`. `None` makes
    /// [`crate::process::run`] create a fresh one per command and delete it afterwards.
    pub temp_dir: Option<PathBuf>,
    /// More writable roots under `workspace-write` (for example a cache the user allowed).
    pub extra_writable: Vec<PathBuf>,
    /// How long a process group gets between SIGTERM and SIGKILL on timeout or cancellation.
    pub kill_grace: Duration,
    /// The secret files hidden from the process under a restricted policy: the workspace's
    /// secret files and the home directory's credential locations, minus what allow rules
    /// expose. The built-in list by default; a session passes its policy's
    /// (`agent_exec::PermissionPolicy::secrets`) so that `Read(…)` allow rules apply.
    pub secrets: Secrets,
    /// The secrets to hide, already resolved by the caller; when set, they replace what
    /// `secrets` would find. A tool sets it from its call's workspace boundary
    /// (`agent_core::Boundary::hidden_paths`), so a command hides exactly what the session's
    /// policy hides from the file tools.
    pub hide: Option<Vec<crate::secret::Hidden>>,
    /// When set, the process may execute only the program it starts and these programs (as a
    /// command line names them, found on its `PATH` before it starts), with their interpreters:
    /// Landlock's execute right is granted on those files alone. The permission policy sets it
    /// for commands it approved as read-only (docs/sandbox.md). Ignored by `danger-full-access`.
    pub exec_allowlist: Option<Vec<String>>,
    /// The session's private network namespace: with the network off and a restricted policy,
    /// commands join it and reach their own loopback (`127.0.0.1`, `::1`) and nothing else.
    /// `None` keeps the plain rule: no socket but `AF_UNIX`. Ignored with `network` on.
    pub loopback: Option<super::NetNamespace>,
    /// Variables every process gets on top of the sandbox's own: in allow-list mode, the
    /// session proxy's (`HTTP_PROXY`, `NODE_OPTIONS`, …; see
    /// [`crate::network::SessionProxy::env`]), which replace any of the same name.
    pub proxy_env: Vec<(String, String)>,
    /// The session proxy those variables point at, kept alive by this configuration (and so by
    /// the session's tools that hold it): each session has its own, in its own namespace.
    pub proxy: Option<std::sync::Arc<crate::network::SessionProxy>>,
}

impl SandboxConfig {
    /// The default configuration for `workspace`: `workspace-write`, no network, default limits.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            policy: SandboxPolicy::WorkspaceWrite,
            network: false,
            limits: Limits::default(),
            workspace: workspace.into(),
            temp_dir: None,
            extra_writable: Vec::new(),
            kill_grace: Duration::from_secs(2),
            secrets: Secrets::default(),
            hide: None,
            exec_allowlist: None,
            loopback: None,
            proxy_env: Vec::new(),
            proxy: None,
        }
    }

    /// The same configuration with another policy.
    pub fn with_policy(mut self, policy: SandboxPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same configuration with the network switch set.
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// The same configuration with another secret list.
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// The same configuration with the session's private network namespace (see
    /// [`SandboxConfig::loopback`]).
    pub fn with_loopback(mut self, loopback: Option<super::NetNamespace>) -> Self {
        self.loopback = loopback;
        self
    }

    /// The same configuration with the session proxy's variables, holding the proxy.
    pub fn with_proxy(mut self, proxy: std::sync::Arc<crate::network::SessionProxy>) -> Self {
        self.proxy_env = proxy.env();
        self.proxy = Some(proxy);
        self
    }

    /// The same configuration with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, expect: Option<SandboxPolicy>) {
        assert_eq!(name.parse::<SandboxPolicy>().ok(), expect);
    }

    #[test]
    fn policy_names_round_trip() {
        for policy in SandboxPolicy::ALL {
            check(policy.as_str(), Some(policy));
        }
        check("full", None);
        check("Read-Only", None);
    }
}
