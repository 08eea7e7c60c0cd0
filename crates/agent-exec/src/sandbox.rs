//! The OS sandbox for every process a tool starts: Landlock file-system rules, a seccomp filter,
//! resource limits, a scrubbed environment and `no_new_privs`, all applied between `fork` and
//! `exec` without helper binaries.
//!
//! [`crate::process::run`] is the only way tools start processes; it calls `prepare` in the
//! parent (where allocating is safe) and applies the resulting plan in the child. A restricted
//! policy that the kernel cannot enforce fails closed with [`SandboxError::Unavailable`]; nothing
//! ever runs unsandboxed unless the policy is [`SandboxPolicy::DangerFullAccess`].
//! See `docs/sandbox.md` for the design and what each policy guarantees.

mod child;
mod env;
mod executables;
mod landlock;
mod limits;
mod policy;
mod probe;
mod seccomp;

use std::{path::Path, sync::OnceLock};

pub(crate) use self::{
    child::{ChildPlan, ReadOnlyMount},
    executables::{LOADERS, resolve as resolve_executables},
    landlock::{FsRules, Grant},
    limits::CgroupLease,
};
pub use self::{
    env::{is_secret, sandbox_env},
    limits::ProcessLimit,
    policy::{Limits, SandboxConfig, SandboxPolicy, UnknownPolicy},
    probe::{Capabilities, PolicySupport, probe},
};

/// Why a sandboxed process could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The kernel lacks a feature the requested policy needs.
    #[error(
        "the sandbox cannot be enforced on this machine: {missing} is not available. \
         To fix it, {fix}. Run `agent sandbox check` to see what this kernel supports; \
         `--sandbox danger-full-access` turns sandboxing off entirely"
    )]
    Unavailable {
        /// The missing kernel feature.
        missing: String,
        /// How to get it.
        fix: String,
    },
    /// Preparing the sandbox failed (a system call or file the parent needed).
    #[error("sandbox setup failed: {0}")]
    Setup(String),
}

/// The probe result, computed once per process for the spawn path.
pub(crate) fn capabilities() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(probe)
}

/// The file-system rules of `config.policy`, with `temp_dir` as the private temp dir.
/// `None` for `danger-full-access`. With `executables` (an execute allow-list, see
/// [`resolve_executables`]), nothing is executable but those files.
pub(crate) fn policy_rules(
    config: &SandboxConfig,
    temp_dir: &Path,
    executables: Option<&[std::path::PathBuf]>,
) -> Option<FsRules> {
    let mut rules = FsRules::default();
    let (read, write) = match executables {
        Some(_) => (Grant::Read, Grant::WriteNoExecute),
        None => (Grant::ReadExecute, Grant::Write),
    };
    match config.policy {
        SandboxPolicy::DangerFullAccess => return None,
        SandboxPolicy::ReadOnly => {
            rules.grant("/", read).grant("/dev/null", write);
        }
        SandboxPolicy::WorkspaceWrite => {
            rules
                .grant("/", read)
                .grant("/dev/null", write)
                // Shared memory for POSIX semaphores (Python multiprocessing, browsers), as Codex keeps it.
                .grant("/dev/shm", write)
                .grant(&config.workspace, write)
                .grant(temp_dir, write);
            for root in &config.extra_writable {
                rules.grant(root, write);
            }
        }
    }
    for file in executables.into_iter().flatten() {
        rules.grant(file, Grant::Execute);
    }
    Some(rules)
}

/// A child plan ready for `pre_exec`, and the cgroup it joins.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) plan: ChildPlan,
    pub(crate) cgroup: Option<CgroupLease>,
}

/// Prepares everything the child needs: `rules` (`None` = no file-system or syscall sandbox),
/// the network switch and the limits. Fails closed when a restriction cannot be enforced.
///
/// `read_only` names a directory inside a writable root that must stay read-only (`.git`), and
/// `cwd` the working directory; the directory is protected only where mount namespaces are
/// available (`Capabilities::mount_namespaces`), as `agent sandbox check` reports.
pub(crate) fn prepare(
    rules: Option<&FsRules>,
    network: bool,
    limits: &Limits,
    read_only: Option<(&Path, &Path)>,
) -> Result<Prepared, SandboxError> {
    let mut plan = ChildPlan::default();
    if let (Some((dir, cwd)), Some(_), true) = (read_only, rules, capabilities().mount_namespaces) {
        plan.read_only_mount = Some(read_only_mount(dir, cwd)?);
        if !capabilities().root {
            plan.user_namespace = Some(limits::identity_maps());
        }
    }
    if let Some(rules) = rules {
        if let Some(missing) = capabilities().missing() {
            return Err(missing);
        }
        plan.no_new_privs = true;
        plan.landlock = Some(landlock::build(rules, network)?);
        plan.seccomp = Some(seccomp::program(network)?);
    }
    let mut cgroup = None;
    let mut nproc = false;
    if let Some(max) = limits.processes {
        match ProcessLimit::current() {
            ProcessLimit::PidsCgroup(base) => {
                let (lease, procs) = CgroupLease::create(base, max)
                    .map_err(|err| SandboxError::Setup(format!("pids cgroup: {err}")))?;
                plan.cgroup_procs = Some(procs);
                cgroup = Some(lease);
            }
            ProcessLimit::UserNamespace => {
                plan.user_namespace.get_or_insert_with(limits::identity_maps);
                nproc = true;
            }
            // Reported by `agent sandbox check`; the file-system and network rules still hold.
            ProcessLimit::Unavailable(_) => {}
        }
    }
    plan.rlimits = limits::rlimits(limits, nproc);
    Ok(Prepared { plan, cgroup })
}

/// The plan step that makes `dir` read-only, with its mount flags read now, before the fork.
fn read_only_mount(dir: &Path, cwd: &Path) -> Result<ReadOnlyMount, SandboxError> {
    use std::{ffi::CString, os::unix::ffi::OsStrExt};
    let c_string = |path: &Path| {
        CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            SandboxError::Setup(format!("path contains a NUL byte: {}", path.display()))
        })
    };
    let path = c_string(dir)?;
    let locked_flags = child::locked_mount_flags(&path)
        .map_err(|err| SandboxError::Setup(format!("statvfs {}: {err}", dir.display())))?;
    Ok(ReadOnlyMount { path, locked_flags, cwd: c_string(cwd)? })
}

/// `.git` under `workspace` when it is a real directory (a symlink or a `gitdir:` file points
/// elsewhere, which the Landlock rules already keep read-only unless it is inside a writable root).
pub(crate) fn git_dir(config: &SandboxConfig) -> Option<std::path::PathBuf> {
    if config.policy != SandboxPolicy::WorkspaceWrite {
        return None;
    }
    let git = config.workspace.join(".git");
    let meta = std::fs::symlink_metadata(&git).ok()?;
    meta.is_dir().then(|| git.canonicalize().unwrap_or(git))
}
