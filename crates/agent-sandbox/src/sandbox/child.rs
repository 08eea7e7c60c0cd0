//! The steps a child takes between `fork` and `exec`, prepared by the parent.
//!
//! The parent is a multi-threaded tokio process. After `fork` only the forking thread exists in
//! the child, and any lock another thread held (the allocator's included) stays locked forever.
//! So [`ChildPlan::apply`] may only make async-signal-safe system calls on data prepared before
//! the fork: it never allocates, formats, locks or drops anything. Everything it reads — the
//! Landlock ruleset fd, the compiled seccomp program, the rlimit values, the cgroup fd and the
//! user-namespace maps — is built by [`super::prepare`] in the parent.

#![allow(unsafe_code)]

use std::{
    ffi::{CStr, CString},
    io,
    os::fd::{AsRawFd, OwnedFd},
};

use seccompiler::BpfProgram;

/// What the child does before `exec`, in this order.
#[derive(Debug, Default)]
pub(crate) struct ChildPlan {
    /// Join this cgroup (the `cgroup.procs` file of a fresh `pids` cgroup).
    pub(crate) cgroup_procs: Option<OwnedFd>,
    /// Join the session's network namespace: its owning user namespace (when not root), then
    /// the network namespace itself (see [`super::NetNamespace`]). The descriptors belong to it.
    pub(crate) net_namespace: Option<(Option<libc::c_int>, libc::c_int)>,
    /// Enter a new user namespace with these `uid_map` and `gid_map` contents.
    pub(crate) user_namespace: Option<(Vec<u8>, Vec<u8>)>,
    /// Mounts made in a private mount namespace: `.git` read-only, secret files covered.
    pub(crate) mounts: Option<MountPlan>,
    /// `setrlimit` calls.
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, libc::rlimit)>,
    /// Set `PR_SET_NO_NEW_PRIVS` (required by Landlock and seccomp for unprivileged callers).
    pub(crate) no_new_privs: bool,
    /// Restrict the process with this Landlock ruleset.
    pub(crate) landlock: Option<OwnedFd>,
    /// Install this seccomp program (last: it denies calls the earlier steps need).
    pub(crate) seccomp: Option<&'static BpfProgram>,
}

impl ChildPlan {
    /// Runs the plan in the child. Async-signal-safe: system calls on prepared data only.
    pub(crate) fn apply(&self) -> io::Result<()> {
        if let Some(fd) = &self.cgroup_procs {
            // Writing "0" moves the writing process (cgroup v1 and v2 alike).
            write_fd(fd.as_raw_fd(), b"0")?;
        }
        if let Some((user, net)) = self.net_namespace {
            if let Some(user) = user {
                // SAFETY: `setns` on a descriptor the parent keeps open; single-threaded child.
                check(unsafe { libc::setns(user, libc::CLONE_NEWUSER) })?;
            }
            // SAFETY: as above.
            check(unsafe { libc::setns(net, libc::CLONE_NEWNET) })?;
        }
        if let Some((uid_map, gid_map)) = &self.user_namespace {
            // SAFETY: `unshare` takes a flag word; the child is single-threaded, as it requires.
            check(unsafe { libc::unshare(libc::CLONE_NEWUSER) })?;
            write_path(c"/proc/self/setgroups", b"deny")?;
            write_path(c"/proc/self/uid_map", uid_map)?;
            write_path(c"/proc/self/gid_map", gid_map)?;
        }
        if let Some(mounts) = &self.mounts {
            mounts.apply()?;
        }
        for (resource, limit) in &self.rlimits {
            // SAFETY: `limit` points to a valid, initialised `rlimit`.
            check(unsafe { libc::setrlimit(*resource, limit) })?;
        }
        if self.no_new_privs {
            // SAFETY: plain prctl with integer arguments.
            check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        }
        if let Some(fd) = &self.landlock {
            // SAFETY: the fd is a ruleset created by the landlock crate and still open; flags 0.
            let rc = unsafe {
                libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0 as libc::c_uint)
            };
            check(rc as libc::c_int)?;
        }
        if let Some(program) = self.seccomp {
            // `apply_filter` only builds a `sock_fprog` on the stack and calls prctl/seccomp.
            seccompiler::apply_filter(program).map_err(|_| io::Error::last_os_error())?;
        }
        Ok(())
    }
}

/// What the child mounts in its private mount namespace, prepared by the parent.
#[derive(Debug)]
pub(crate) struct MountPlan {
    /// A directory bind-mounted read-only over itself (`.git` inside the workspace).
    pub(crate) read_only: Option<ReadOnlyDir>,
    /// Directories bind-mounted onto themselves, shallowest first, so they cannot be renamed
    /// (the ancestors of secrets inside writable roots).
    pub(crate) pins: Vec<CString>,
    /// Secret files and directories to cover, each with `true` for a directory.
    pub(crate) masks: Vec<(CString, bool)>,
    /// An empty file with no permissions, bind-mounted over each secret file.
    pub(crate) mask_file: CString,
    /// An empty directory with no permissions, bind-mounted over each secret directory.
    pub(crate) mask_dir: CString,
    /// The locked flags of the mount holding the two masks (see [`ReadOnlyDir::locked_flags`]).
    pub(crate) mask_flags: libc::c_ulong,
    /// The working directory, entered again so it resolves through the new mounts.
    pub(crate) cwd: CString,
}

/// A directory made read-only by bind-mounting it over itself.
#[derive(Debug)]
pub(crate) struct ReadOnlyDir {
    /// The directory.
    pub(crate) path: CString,
    /// Flags of the mount it lives on (`nosuid`, `nodev`, …): inside a user namespace they are
    /// locked, and a remount that drops them fails.
    pub(crate) locked_flags: libc::c_ulong,
}

impl MountPlan {
    fn apply(&self) -> io::Result<()> {
        let none = std::ptr::null::<libc::c_char>();
        // SAFETY: every pointer is a NUL-terminated string prepared before the fork, or null where
        // the kernel accepts null; the child is single-threaded as `unshare` requires.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            // Keep the mounts below from propagating back to the parent's namespace.
            check(libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            if let Some(dir) = &self.read_only {
                read_only_bind(
                    dir.path.as_ptr(),
                    dir.path.as_ptr(),
                    libc::MS_REC,
                    dir.locked_flags,
                )?;
            }
            // Before the masks: a later bind of a directory would cover the masks inside it.
            for dir in &self.pins {
                let dir = dir.as_ptr();
                check(libc::mount(dir, dir, none, libc::MS_BIND, std::ptr::null()))?;
            }
            for (target, is_dir) in &self.masks {
                let mask = if *is_dir { &self.mask_dir } else { &self.mask_file };
                match read_only_bind(mask.as_ptr(), target.as_ptr(), 0, self.mask_flags) {
                    // Deleted since the parent looked: there is nothing left to hide.
                    Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {}
                    other => other?,
                }
            }
            check(libc::chdir(self.cwd.as_ptr()))?;
        }
        Ok(())
    }
}

/// Bind-mounts `source` over `target` and makes the new mount read-only, keeping `locked` flags.
///
/// # Safety
/// Both pointers must be NUL-terminated strings that outlive the call.
unsafe fn read_only_bind(
    source: *const libc::c_char,
    target: *const libc::c_char,
    extra: libc::c_ulong,
    locked: libc::c_ulong,
) -> io::Result<()> {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: the caller passes valid strings; null type and data are accepted for binds.
    unsafe {
        check(libc::mount(source, target, none, libc::MS_BIND | extra, std::ptr::null()))?;
        let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked;
        check(libc::mount(none, target, none, flags, std::ptr::null()))
    }
}

/// The flags of the mount holding `path` that a user namespace locks, as `MS_*` bits.
pub(crate) fn locked_mount_flags(path: &CStr) -> io::Result<libc::c_ulong> {
    // SAFETY: `statvfs` writes into the zeroed struct; `path` is NUL-terminated.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    check(unsafe { libc::statvfs(path.as_ptr(), &mut stat) })?;
    // `ST_*` values from <sys/statvfs.h>; the same on every Linux architecture and libc.
    let pairs: [(libc::c_ulong, libc::c_ulong); 6] = [
        (2, libc::MS_NOSUID),
        (4, libc::MS_NODEV),
        (8, libc::MS_NOEXEC),
        (1024, libc::MS_NOATIME),
        (2048, libc::MS_NODIRATIME),
        (4096, libc::MS_RELATIME),
    ];
    Ok(pairs.iter().filter(|(st, _)| stat.f_flag & st != 0).fold(0, |acc, (_, ms)| acc | ms))
}

pub(super) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn write_fd(fd: libc::c_int, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `bytes` is a valid buffer of `bytes.len()` bytes for the duration of the call.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    if written < 0 {
        return Err(io::Error::last_os_error());
    }
    if written as usize != bytes.len() {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    }
    Ok(())
}

pub(super) fn write_path(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the fd is closed below on every path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let result = write_fd(fd, bytes);
    // SAFETY: `fd` was opened above and is not used afterwards.
    unsafe { libc::close(fd) };
    result
}
