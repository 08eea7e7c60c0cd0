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
    ffi::CStr,
    io,
    os::fd::{AsRawFd, OwnedFd},
};

use seccompiler::BpfProgram;

/// What the child does before `exec`, in this order.
#[derive(Debug, Default)]
pub(crate) struct ChildPlan {
    /// Join this cgroup (the `cgroup.procs` file of a fresh `pids` cgroup).
    pub(crate) cgroup_procs: Option<OwnedFd>,
    /// Enter a new user namespace with these `uid_map` and `gid_map` contents.
    pub(crate) user_namespace: Option<(Vec<u8>, Vec<u8>)>,
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
        if let Some((uid_map, gid_map)) = &self.user_namespace {
            // SAFETY: `unshare` takes a flag word; the child is single-threaded, as it requires.
            check(unsafe { libc::unshare(libc::CLONE_NEWUSER) })?;
            write_path(c"/proc/self/setgroups", b"deny")?;
            write_path(c"/proc/self/uid_map", uid_map)?;
            write_path(c"/proc/self/gid_map", gid_map)?;
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

fn check(rc: libc::c_int) -> io::Result<()> {
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

fn write_path(path: &CStr, bytes: &[u8]) -> io::Result<()> {
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
