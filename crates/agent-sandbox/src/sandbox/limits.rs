//! Resource limits: per-process rlimits, and a process-count limit that also works for root.
//!
//! `RLIMIT_NPROC` counts every process of the user, and the kernel ignores it for root (uid 0)
//! and for holders of `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN` (`copy_process` in `kernel/fork.c`).
//! So the process count is enforced in one of two ways, picked once per process:
//!
//! - **root**: a fresh `pids` cgroup per command, with `pids.max` set; the cgroup also lists every
//!   process of the command, so the kill on timeout reaches processes that left the group;
//! - **other users**: a new user namespace in the child (uid mapped to itself) before
//!   `RLIMIT_NPROC`. Since Linux 5.14 the count is kept per user namespace (`ucounts`), so the
//!   limit counts only the command's processes, not the user's desktop.

use std::{
    fs,
    io::{self, Write},
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

use super::Limits;

/// How the process-count limit is enforced on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessLimit {
    /// A `pids` cgroup per command, created under this directory.
    PidsCgroup(PathBuf),
    /// A user namespace per command plus `RLIMIT_NPROC`.
    UserNamespace,
    /// Not enforceable here; the reason says why.
    Unavailable(String),
}

impl ProcessLimit {
    /// The mechanism for this process, detected once.
    pub fn current() -> &'static ProcessLimit {
        static CURRENT: OnceLock<ProcessLimit> = OnceLock::new();
        CURRENT.get_or_init(detect)
    }
}

fn detect() -> ProcessLimit {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return if super::probe::user_namespaces(false) {
            ProcessLimit::UserNamespace
        } else {
            ProcessLimit::Unavailable(
                "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone \
                 or an AppArmor restriction)"
                    .to_owned(),
            )
        };
    }
    match pids_cgroup_base() {
        Some(base) => {
            remove_stale_cgroups(&base);
            ProcessLimit::PidsCgroup(base)
        }
        None => ProcessLimit::Unavailable(
            "running as root, where RLIMIT_NPROC does not apply, and no writable pids cgroup was found"
                .to_owned(),
        ),
    }
}

/// The directory of this process's cgroup in a `pids` hierarchy, if a child cgroup can be made there.
fn pids_cgroup_base() -> Option<PathBuf> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut candidates = Vec::new();
    for line in mountinfo.lines() {
        // Fields: id parent major:minor root mount-point options ... - fstype source super-options
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|field| *field == "-") else { continue };
        let (Some(mount_point), Some(fstype), Some(options)) =
            (fields.get(4), fields.get(dash + 1), fields.get(dash + 3))
        else {
            continue;
        };
        let path = own.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let matches = match *fstype {
                "cgroup" => {
                    options.split(',').any(|o| o == "pids")
                        && controllers.split(',').any(|c| c == "pids")
                }
                "cgroup2" => controllers.is_empty(),
                _ => false,
            };
            matches.then_some(path)
        });
        if let Some(path) = path {
            let relative = path.trim_matches('/');
            let base = Path::new(mount_point);
            candidates.push(if relative.is_empty() {
                base.to_path_buf()
            } else {
                base.join(relative)
            });
        }
    }
    candidates.into_iter().find(|base| {
        let probe = base.join(format!("agent-sandbox-probe-{}", std::process::id()));
        let usable = fs::create_dir(&probe).is_ok() && probe.join("pids.max").exists();
        let _ = fs::remove_dir(&probe);
        usable
    })
}

/// Removes the empty cgroups that agents killed before they could clean up left behind.
fn remove_stale_cgroups(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix("agent-sandbox-")) else {
            continue;
        };
        let owner = rest.split('-').next().unwrap_or_default();
        if !owner.is_empty() && !Path::new("/proc").join(owner).exists() {
            // Fails harmlessly when processes are still inside.
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// A `pids` cgroup made for one command; removed (after killing what is left in it) on drop.
#[derive(Debug)]
pub(crate) struct CgroupLease {
    dir: PathBuf,
}

impl CgroupLease {
    /// Creates a cgroup under `base` allowing `max` processes, and opens its `cgroup.procs` for
    /// the child to join before exec.
    pub(crate) fn create(base: &Path, max: u64) -> io::Result<(CgroupLease, OwnedFd)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "agent-sandbox-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let dir = base.join(name);
        fs::create_dir(&dir)?;
        let lease = CgroupLease { dir };
        fs::write(lease.dir.join("pids.max"), max.to_string())?;
        let procs = fs::OpenOptions::new().write(true).open(lease.dir.join("cgroup.procs"))?;
        Ok((lease, procs.into()))
    }

    /// Process ids currently in the cgroup.
    pub(crate) fn pids(&self) -> Vec<i32> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|line| line.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Sends `signal` to every process in the cgroup; returns how many there were.
    pub(crate) fn signal_all(&self, signal: i32) -> usize {
        let pids = self.pids();
        for &pid in &pids {
            // SAFETY: `kill` has no memory-safety preconditions; a stale pid only yields ESRCH.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, signal);
            }
        }
        pids.len()
    }
}

impl Drop for CgroupLease {
    fn drop(&mut self) {
        // A cgroup can only be removed when empty; freshly killed processes take a moment to go.
        for attempt in 0..200u64 {
            if self.signal_all(libc::SIGKILL) == 0 && fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1 + attempt / 20));
        }
    }
}

/// The `setrlimit` calls for `limits`, prepared before the fork.
pub(crate) fn rlimits(
    limits: &Limits,
    nproc: bool,
) -> Vec<(libc::__rlimit_resource_t, libc::rlimit)> {
    let mut out = Vec::new();
    let mut push = |resource, soft: u64, hard: u64| {
        out.push((resource, libc::rlimit { rlim_cur: soft, rlim_max: hard }));
    };
    if let Some(seconds) = limits.cpu_seconds {
        // The soft limit sends SIGXCPU (which a process may catch to save work); the hard one kills.
        push(libc::RLIMIT_CPU, seconds, seconds.saturating_add(5));
    }
    if let Some(bytes) = limits.address_space_bytes {
        push(libc::RLIMIT_AS, bytes, bytes);
    }
    if let Some(bytes) = limits.file_size_bytes {
        push(libc::RLIMIT_FSIZE, bytes, bytes);
    }
    if let (Some(count), true) = (limits.processes, nproc) {
        push(libc::RLIMIT_NPROC, count, count);
    }
    out
}

/// The `uid_map`/`gid_map` lines mapping the current ids to themselves in a new user namespace.
pub(crate) fn identity_maps() -> (Vec<u8>, Vec<u8>) {
    // SAFETY: `geteuid`/`getegid` have no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let mut uid_map = Vec::new();
    let mut gid_map = Vec::new();
    let _ = writeln!(uid_map, "{uid} {uid} 1");
    let _ = writeln!(gid_map, "{gid} {gid} 1");
    (uid_map, gid_map)
}
