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
mod masks;
mod netns;
mod policy;
mod probe;
mod seccomp;

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use crate::secret::Hidden;

pub(crate) use self::{
    child::{ChildPlan, MountPlan, ReadOnlyDir},
    executables::resolve as resolve_executables,
    limits::CgroupLease,
    masks::MaskDir,
};
pub use self::{
    env::{host_env, is_secret, sandbox_env},
    executables::LOADERS,
    landlock::{FsRules, Grant},
    limits::ProcessLimit,
    netns::NetNamespace,
    policy::{Limits, SandboxConfig, SandboxPolicy, UnknownPolicy},
    probe::{Capabilities, PolicySupport, probe},
};

/// Why a sandboxed process could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The kernel lacks a feature the requested policy needs; nothing was started.
    #[error(
        "the sandbox cannot be enforced on this machine: {missing} is not available; to fix it, \
         {fix}. Only the danger-full-access policy runs without it, with no sandbox at all"
    )]
    Unavailable {
        /// The missing kernel feature.
        missing: KernelFeature,
        /// How to get it, in a sentence fragment (`use Linux ≥ 5.13 with …`).
        fix: &'static str,
    },
    /// Preparing the sandbox failed (a system call or file the parent needed).
    #[error("sandbox setup failed: {0}")]
    Setup(String),
}

impl SandboxError {
    /// The error for a missing `feature`, with its fix.
    pub fn unavailable(feature: KernelFeature) -> Self {
        SandboxError::Unavailable { missing: feature, fix: feature.fix() }
    }
}

/// A kernel feature a restricted policy can need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelFeature {
    /// Landlock, for the file-system rules.
    Landlock,
    /// seccomp filters, for network and ptrace blocking.
    Seccomp,
    /// Private mount namespaces (as root, or inside a user namespace), for hiding secret files.
    MountNamespaces,
}

impl KernelFeature {
    /// A stable identifier (`landlock`, `seccomp`, `mount_namespaces`).
    pub fn as_str(self) -> &'static str {
        match self {
            KernelFeature::Landlock => "landlock",
            KernelFeature::Seccomp => "seccomp",
            KernelFeature::MountNamespaces => "mount_namespaces",
        }
    }

    /// How to get the feature.
    pub fn fix(self) -> &'static str {
        match self {
            KernelFeature::Landlock => {
                "use Linux ≥ 5.13 with Landlock enabled (`lsm=landlock,...` on the kernel command \
                 line; check with `cat /sys/kernel/security/lsm`)"
            }
            KernelFeature::Seccomp => {
                "use a kernel built with CONFIG_SECCOMP_FILTER, and do not run inside a container \
                 profile that forbids installing filters"
            }
            KernelFeature::MountNamespaces => {
                "allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, \
                 and on Ubuntu `sysctl kernel.apparmor_restrict_unprivileged_userns=0`) or run as \
                 root; secret files are hidden from commands in a private mount namespace, and \
                 commands do not run while secrets cannot be hidden"
            }
        }
    }
}

impl std::fmt::Display for KernelFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KernelFeature::Landlock => "Landlock (file-system rules)",
            KernelFeature::Seccomp => "seccomp filters (network and ptrace blocking)",
            KernelFeature::MountNamespaces => "a private mount namespace (hiding secret files)",
        })
    }
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

/// A child plan ready for `pre_exec`, the cgroup it joins, and the masks its mounts use.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) plan: ChildPlan,
    pub(crate) cgroup: Option<CgroupLease>,
    /// The empty file and directory bind-mounted over secrets; kept until the process is gone.
    pub(crate) masks: Option<MaskDir>,
}

/// What the child's private mount namespace changes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mounts<'a> {
    /// A directory inside a writable root that must stay read-only (`.git`).
    pub(crate) read_only: Option<&'a Path>,
    /// Secret files and directories to cover with empty, unreadable entries.
    pub(crate) hide: &'a [Hidden],
    /// The working directory.
    pub(crate) cwd: &'a Path,
}

/// Prepares everything the child needs: `rules` (`None` = no file-system or syscall sandbox),
/// the network switch, the limits and the mounts. Fails closed when a restriction cannot be
/// enforced.
///
/// `.git` is kept read-only only where mount namespaces are available (a gap `agent sandbox
/// check` reports); secrets are hidden only in a mount namespace too, and when one cannot be made
/// while something must be hidden, nothing runs.
pub(crate) fn prepare(
    rules: Option<&FsRules>,
    network: bool,
    loopback: Option<&NetNamespace>,
    limits: &Limits,
    mounts: Mounts<'_>,
) -> Result<Prepared, SandboxError> {
    let mut plan = ChildPlan::default();
    let mut masks = None;
    if let Some(rules) = rules {
        if let Some(missing) = capabilities().missing() {
            return Err(missing);
        }
        // Only what the rules would let the process read needs covering.
        let mut hide: Vec<&Path> = mounts
            .hide
            .iter()
            .map(|hidden| hidden.path.as_path())
            .filter(|path| rules.iter().any(|(root, _)| path.starts_with(root)))
            .collect();
        // Root could read what the masks cover straight from the disk or from kernel memory.
        let raw =
            if capabilities().root && !hide.is_empty() { raw_access_paths() } else { Vec::new() };
        hide.extend(raw.iter().map(PathBuf::as_path));
        let read_only = mounts.read_only.filter(|_| capabilities().mount_namespaces);
        if !hide.is_empty() && !capabilities().mount_namespaces {
            return Err(SandboxError::unavailable(KernelFeature::MountNamespaces));
        }
        if read_only.is_some() || !hide.is_empty() {
            let pins = pins(rules, &hide);
            let dir = masks::for_rules(rules)
                .map_err(|err| SandboxError::Setup(format!("mask directory: {err}")))?;
            plan.mounts = Some(mount_plan(read_only, &pins, &hide, mounts.cwd, dir.path())?);
            masks = dir.into_owned();
            if !capabilities().root {
                plan.user_namespace = Some(limits::identity_maps());
            }
        }
        plan.no_new_privs = true;
        // With the network off, a private namespace (when the session has one) keeps IP sockets
        // on the session's own loopback; the kernel's rules need not block them there.
        let private = loopback.filter(|_| !network).and_then(NetNamespace::raw);
        plan.net_namespace = private;
        let sockets = match (network, private) {
            (true, _) => seccomp::Sockets::All,
            (false, Some(_)) => seccomp::Sockets::Loopback,
            (false, None) => seccomp::Sockets::Unix,
        };
        plan.landlock = Some(landlock::build(rules, network || private.is_some())?);
        plan.seccomp = Some(seccomp::program(sockets)?);
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
    Ok(Prepared { plan, cgroup, masks })
}

/// The mount plan, with every path and flag read now, before the fork; the masks (an empty file
/// and an empty directory, both mode 000) are in `mask_dir`.
fn mount_plan(
    read_only: Option<&Path>,
    pins: &[PathBuf],
    hide: &[&Path],
    cwd: &Path,
    mask_dir: &Path,
) -> Result<MountPlan, SandboxError> {
    use std::{ffi::CString, os::unix::ffi::OsStrExt};
    let c_string = |path: &Path| {
        CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            SandboxError::Setup(format!("path contains a NUL byte: {}", path.display()))
        })
    };
    let locked = |path: &CString, shown: &Path| {
        child::locked_mount_flags(path)
            .map_err(|err| SandboxError::Setup(format!("statvfs {}: {err}", shown.display())))
    };
    let (file, empty) = masks::paths(mask_dir);
    let mask_file = c_string(&file)?;
    let mask_flags = locked(&mask_file, &file)?;
    let read_only = match read_only {
        Some(path) => {
            let c_path = c_string(path)?;
            Some(ReadOnlyDir { locked_flags: locked(&c_path, path)?, path: c_path })
        }
        None => None,
    };
    let mut masks = Vec::with_capacity(hide.len());
    for path in hide {
        // The mask must match the type of what it covers; a path gone since the walk is skipped.
        let Ok(meta) = std::fs::metadata(path) else { continue };
        masks.push((c_string(path)?, meta.is_dir()));
    }
    let pins = pins.iter().map(|dir| c_string(dir)).collect::<Result<_, _>>()?;
    let plan = MountPlan {
        read_only,
        pins,
        masks,
        mask_file,
        mask_dir: c_string(&empty)?,
        mask_flags,
        cwd: c_string(cwd)?,
    };
    Ok(plan)
}

/// The directories between a writable root and a hidden path, shallowest first. Each is
/// bind-mounted onto itself so that a command cannot rename it: a mount point cannot be moved,
/// and a moved directory would carry its secret to a path the next command does not cover (a
/// pruned `node_modules`, the temp dir).
fn pins(rules: &FsRules, hide: &[&Path]) -> Vec<PathBuf> {
    let writable: Vec<&Path> =
        rules.iter().filter(|(_, grant)| *grant == Grant::Write).map(|(root, _)| root).collect();
    let mut pins = std::collections::BTreeSet::new();
    for path in hide {
        for root in writable.iter().filter(|root| path.starts_with(root)) {
            let mut dir = path.parent();
            while let Some(current) = dir.filter(|d| d.starts_with(root) && d != root) {
                pins.insert(current.to_path_buf());
                dir = current.parent();
            }
        }
    }
    let mut pins: Vec<PathBuf> = pins.into_iter().collect();
    pins.sort_by_key(|dir| dir.components().count());
    pins
}

/// Files that give root the raw bytes of the disks or of kernel memory (where the page cache
/// holds recently read files): every block device in `/dev`, `/dev/mem`, `/dev/kmem`,
/// `/dev/port` and `/proc/kcore`. Covered for root whenever secrets are; other users cannot
/// open them anyway.
fn raw_access_paths() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut paths: Vec<PathBuf> = std::fs::read_dir("/dev")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_block_device()))
        .map(|entry| entry.path())
        .collect();
    for path in ["/dev/mem", "/dev/kmem", "/dev/port", "/proc/kcore"] {
        if std::fs::symlink_metadata(path).is_ok() {
            paths.push(PathBuf::from(path));
        }
    }
    paths
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

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt as _;

    /// Set in the copy of this test binary that runs as `nobody`.
    const AS_NOBODY: &str = "AGENT_TEST_MASKS_AS_NOBODY";

    /// Makes a fresh pair of masks and drops it, and leaves a dead process's shared pair for the
    /// sweep, then checks nothing of either is left in the temp dir.
    fn masks_leave_nothing_behind() {
        let dir = super::masks::MaskDir::create("agent-mask-").expect("masks");
        let path = dir.path().to_path_buf();
        assert!(path.join("dir").exists());
        drop(dir);
        assert!(!path.exists(), "{} was left behind", path.display());
        // No process has a pid above the kernel's maximum (4194304).
        let dead = super::masks::MaskDir::create("agent-mask-4194305-").expect("masks");
        let path = dead.path().to_path_buf();
        std::mem::forget(dead);
        super::masks::sweep(&std::env::temp_dir());
        assert!(!path.exists(), "{} was not swept", path.display());
    }

    /// Root removes the mode-000 mask directory whatever its mode, so as root the check runs again
    /// in a copy of this test binary that has dropped to `nobody`, like an ordinary user.
    #[test]
    // The copy of the test binary is the test's own process, not a tool's: no sandbox applies.
    #[allow(clippy::disallowed_methods)]
    fn the_mask_directory_is_removed_for_an_unprivileged_user() {
        if std::env::var_os(AS_NOBODY).is_some() || !super::capabilities().root {
            return masks_leave_nothing_behind();
        }
        masks_leave_nothing_behind();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sandbox::tests::the_mask_directory_is_removed_for_an_unprivileged_user",
            ])
            .env(AS_NOBODY, "1")
            .env("TMPDIR", "/tmp")
            .uid(65534)
            .gid(65534)
            .status()
            .expect("running the test binary as nobody");
        assert!(status.success(), "the check as nobody failed: {status}");
    }
}
