//! What this kernel can enforce: Landlock ABI, seccomp, user namespaces, the process limit, and
//! therefore which policies can run here.

#![allow(unsafe_code)]

use std::fmt;

use super::{ProcessLimit, SandboxPolicy};

/// The sandboxing features of the running kernel, as seen by this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The kernel's Landlock ABI version (`None` when Landlock is missing or disabled).
    pub landlock_abi: Option<u32>,
    /// Whether seccomp filters (`SECCOMP_MODE_FILTER`) can be installed.
    pub seccomp: bool,
    /// Whether an unprivileged process can create a user namespace.
    pub user_namespaces: bool,
    /// Whether a private mount namespace can be made for a child (as root, or inside a user
    /// namespace), which keeps `.git` read-only under `workspace-write` and hides secret files.
    pub mount_namespaces: bool,
    /// Whether this process runs as root (uid 0).
    pub root: bool,
    /// How the process-count limit is enforced.
    pub process_limit: ProcessLimit,
}

/// Whether one policy can be enforced, and what is missing when not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySupport {
    /// The policy.
    pub policy: SandboxPolicy,
    /// `None` when enforceable; otherwise what is missing and how to get it.
    pub missing: Option<super::SandboxError>,
    /// Guarantees that hold only partly on this kernel (enforceable all the same).
    pub gaps: Vec<&'static str>,
}

/// Probes the kernel. Cheap after the first call (about a millisecond for the first).
pub fn probe() -> Capabilities {
    Capabilities {
        landlock_abi: landlock_abi().filter(|_| !landlock_disabled_for_tests()),
        seccomp: seccomp_available(),
        user_namespaces: user_namespaces(true),
        mount_namespaces: mount_namespaces(),
        // SAFETY: `geteuid` has no preconditions.
        root: unsafe { libc::geteuid() } == 0,
        process_limit: ProcessLimit::current().clone(),
    }
}

impl Capabilities {
    /// Whether `policy` can be enforced, for every policy.
    pub fn policies(&self) -> Vec<PolicySupport> {
        SandboxPolicy::ALL.into_iter().map(|policy| self.support(policy)).collect()
    }

    /// Whether `policy` can be enforced here.
    pub fn support(&self, policy: SandboxPolicy) -> PolicySupport {
        let mut gaps = Vec::new();
        if !policy.is_restricted() {
            return PolicySupport { policy, missing: None, gaps };
        }
        let missing = self.missing();
        if missing.is_some() {
            // Gaps of a policy that cannot run at all would only bury the reason.
            return PolicySupport { policy, missing, gaps };
        }
        let abi = self.landlock_abi.unwrap_or(0);
        if abi < 3 {
            gaps.push("truncating files outside writable roots is not blocked (Landlock ABI < 3)");
        }
        if abi < 4 {
            gaps.push("TCP is blocked by seccomp only (Landlock ABI < 4 has no network rules)");
        }
        if abi < 6 {
            gaps.push(
                "signals to processes outside the sandbox are not blocked (Landlock ABI < 6)",
            );
        }
        if policy == SandboxPolicy::WorkspaceWrite && !self.mount_namespaces {
            gaps.push(".git inside the workspace stays writable (needs a mount namespace: root or user namespaces)");
        }
        if !self.mount_namespaces {
            gaps.push("secret files cannot be hidden (needs a mount namespace), so commands refuse to run while any exists");
        }
        if let ProcessLimit::Unavailable(_) = self.process_limit {
            gaps.push("the process-count limit is not enforced (see `process limit`)");
        }
        PolicySupport { policy, missing, gaps }
    }

    /// The error a restricted policy fails with here, if any.
    pub(crate) fn missing(&self) -> Option<super::SandboxError> {
        if self.landlock_abi.is_none() {
            return Some(super::SandboxError::unavailable(super::KernelFeature::Landlock));
        }
        if !self.seccomp {
            return Some(super::SandboxError::unavailable(super::KernelFeature::Seccomp));
        }
        None
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        let landlock = match self.landlock_abi {
            Some(abi) => format!("yes (ABI {abi})"),
            None => "no".to_owned(),
        };
        let process_limit = match &self.process_limit {
            ProcessLimit::PidsCgroup(base) => format!("pids cgroup under {}", base.display()),
            ProcessLimit::UserNamespace => "user namespace + RLIMIT_NPROC".to_owned(),
            ProcessLimit::Unavailable(reason) => format!("not enforced: {reason}"),
        };
        writeln!(f, "kernel feature                 available")?;
        writeln!(f, "landlock                       {landlock}")?;
        writeln!(f, "seccomp filters                {}", yes_no(self.seccomp))?;
        writeln!(f, "unprivileged user namespaces   {}", yes_no(self.user_namespaces))?;
        writeln!(f, "mount namespaces               {}", yes_no(self.mount_namespaces))?;
        writeln!(f, "running as root                {}", yes_no(self.root))?;
        writeln!(f, "process limit                  {process_limit}")?;
        // Landlock's execute right exists from ABI 1, so the list holds wherever Landlock does;
        // `danger-full-access` has no ruleset and so no list.
        let exec = if self.landlock_abi.is_some() {
            "yes (commands approved as read-only run only the programs they name)"
        } else {
            "no (it needs Landlock)"
        };
        writeln!(f, "execute allow-list             {exec}")?;
        writeln!(f)?;
        writeln!(f, "policy               enforceable")?;
        for support in self.policies() {
            let verdict = match &support.missing {
                None if support.policy.is_restricted() => "yes".to_owned(),
                None => "yes (no sandbox: full access)".to_owned(),
                Some(err) => format!("no: {err}"),
            };
            writeln!(f, "{:<20} {verdict}", support.policy.as_str())?;
            for gap in &support.gaps {
                writeln!(f, "{:<20}   note: {gap}", "")?;
            }
        }
        Ok(())
    }
}

/// The variable that makes a test build see no Landlock, so a test run can prove that losing the
/// sandbox turns CI red (see `docs/sandbox.md`, "Testing without the sandbox").
#[cfg(debug_assertions)]
const DISABLE_LANDLOCK_FOR_TESTS: &str = "AGENT_TEST_DISABLE_LANDLOCK";

/// Whether [`DISABLE_LANDLOCK_FOR_TESTS`] is set in a debug build. It can only take a feature
/// away, and a restricted policy without Landlock fails closed, so at worst it stops commands from
/// running.
#[cfg(debug_assertions)]
fn landlock_disabled_for_tests() -> bool {
    std::env::var_os(DISABLE_LANDLOCK_FOR_TESTS).is_some()
}

/// Release builds have no such switch: the name is not even in the binary (tidy's
/// `switches.rs` checks that no test switch is).
#[cfg(not(debug_assertions))]
fn landlock_disabled_for_tests() -> bool {
    false
}

/// The kernel's Landlock ABI version. The `landlock` crate keeps its own query private (it wants
/// callers to rely on best-effort rules), so the probe asks the kernel directly.
fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer and size 0 this flag only returns the ABI version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|v| *v > 0)
}

/// Seccomp filter support: `PR_SET_SECCOMP` with a null program fails with `EFAULT` when filters
/// are supported and `EINVAL` when they are not, without installing anything.
fn seccomp_available() -> bool {
    // SAFETY: a null filter pointer is rejected by the kernel before any state changes.
    let rc = unsafe {
        libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, std::ptr::null::<u8>(), 0, 0)
    };
    rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
}

/// Whether a user namespace can be created, tested in a forked child. With `as_unprivileged`,
/// root first drops to `nobody` so the answer is the one an ordinary user would get.
pub(crate) fn user_namespaces(as_unprivileged: bool) -> bool {
    // SAFETY: the child only makes async-signal-safe system calls and leaves with `_exit`.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return false;
        }
        if pid == 0 {
            if as_unprivileged && libc::geteuid() == 0 {
                libc::setgroups(0, std::ptr::null());
                if libc::setresgid(65534, 65534, 65534) != 0
                    || libc::setresuid(65534, 65534, 65534) != 0
                {
                    libc::_exit(2);
                }
            }
            libc::_exit(if libc::unshare(libc::CLONE_NEWUSER) == 0 { 0 } else { 1 });
        }
        wait_ok(pid)
    }
}

/// Whether a child can get a private mount namespace: directly as root, else inside a new user
/// namespace. Tested in a forked child, like [`user_namespaces`].
fn mount_namespaces() -> bool {
    // SAFETY: the child only makes async-signal-safe system calls and leaves with `_exit`.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return false;
        }
        if pid == 0 {
            let flags = if libc::geteuid() == 0 {
                libc::CLONE_NEWNS
            } else {
                libc::CLONE_NEWUSER | libc::CLONE_NEWNS
            };
            libc::_exit(if libc::unshare(flags) == 0 { 0 } else { 1 });
        }
        wait_ok(pid)
    }
}

/// Reaps `pid` and reports whether it exited with status 0.
fn wait_ok(pid: libc::pid_t) -> bool {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer; `pid` is our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn machine(
        landlock_abi: Option<u32>,
        seccomp: bool,
        process_limit: ProcessLimit,
    ) -> Capabilities {
        Capabilities {
            landlock_abi,
            seccomp,
            user_namespaces: false,
            mount_namespaces: landlock_abi.is_some(),
            root: true,
            process_limit,
        }
    }

    #[test]
    fn table_for_a_full_kernel() {
        let caps =
            machine(Some(7), true, ProcessLimit::PidsCgroup(PathBuf::from("/sys/fs/cgroup/pids")));
        insta::assert_snapshot!(caps.to_string());
    }

    #[test]
    fn table_for_a_kernel_without_landlock_fails_closed() {
        let caps =
            machine(None, true, ProcessLimit::Unavailable("no writable pids cgroup".to_owned()));
        insta::assert_snapshot!(caps.to_string());
        let missing =
            caps.support(SandboxPolicy::WorkspaceWrite).missing.map(|err| err.to_string());
        assert!(missing.is_some_and(|m| m.contains("Landlock") && !m.contains("--")));
        assert_eq!(caps.support(SandboxPolicy::DangerFullAccess).missing, None);
    }

    #[test]
    fn old_landlock_is_enforced_with_gaps() {
        let caps = machine(Some(2), true, ProcessLimit::UserNamespace);
        let support = caps.support(SandboxPolicy::ReadOnly);
        assert_eq!(support.missing, None);
        assert_eq!(support.gaps.len(), 3, "{:?}", support.gaps);
    }
}
