//! The session's private network namespace: only `lo`, up, so that commands reach their own
//! `127.0.0.1` and `::1` while the network is off, and nothing else.
//!
//! One namespace serves every command and job of a session, so a server started in one call
//! answers the next. It is made by a short-lived child that unshares a network namespace (inside
//! a new user namespace when this process is not root), brings `lo` up and waits; the parent opens
//! the namespace files under `/proc/<pid>/ns`, and those descriptors keep the namespace alive after
//! the child is gone. Each sandboxed command joins it with `setns` between `fork` and `exec`
//! ([`super::ChildPlan`]). No interface but `lo` exists there, so no route leads out of it, and
//! the host's own loopback is a different device: a server on the host's `127.0.0.1` is out of
//! reach.

#![allow(unsafe_code)]

use std::{
    fs::File,
    io,
    os::{
        fd::{AsRawFd, OwnedFd, RawFd},
        unix::process::CommandExt,
    },
    process::Stdio,
    sync::Arc,
};

use super::{SandboxError, child, limits};

/// A private network namespace with only `lo` up, shared by every command of a session.
///
/// Cheap to clone; the namespace lives while a clone does (and while a process is inside it).
#[derive(Debug, Clone)]
pub struct NetNamespace {
    fds: Arc<NamespaceFds>,
}

#[derive(Debug)]
struct NamespaceFds {
    /// The user namespace owning the network namespace, when this process is not root.
    user: Option<OwnedFd>,
    net: OwnedFd,
}

impl NetNamespace {
    /// Makes the namespace. Fails where the kernel refuses network or user namespaces (a
    /// container profile, `unprivileged_userns_clone=0`); callers fall back to refusing
    /// non-`AF_UNIX` sockets and say so in `agent sandbox check`.
    pub fn create() -> Result<Self, SandboxError> {
        let setup = |what: &str, err: io::Error| {
            SandboxError::Setup(format!("private network namespace: {what}: {err}"))
        };
        // SAFETY: `geteuid` has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let maps = (!root).then(limits::identity_maps);
        #[expect(
            clippy::disallowed_methods,
            reason = "a helper that only holds a namespace open: no sandbox to apply, it runs no code \
                      of the model's"
        )]
        let mut command = std::process::Command::new("sleep");
        command.arg("60").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: `enter` makes only async-signal-safe system calls on data prepared here.
        unsafe {
            command.pre_exec(move || enter(maps.as_ref()));
        }
        let mut helper = command.spawn().map_err(|err| setup("starting the helper", err))?;
        let open = |name: &str| -> io::Result<OwnedFd> {
            Ok(File::open(format!("/proc/{}/ns/{name}", helper.id()))?.into())
        };
        let fds = (|| -> io::Result<NamespaceFds> {
            let user = if root { None } else { Some(open("user")?) };
            Ok(NamespaceFds { user, net: open("net")? })
        })();
        let _ = helper.kill();
        let _ = helper.wait();
        Ok(NetNamespace { fds: Arc::new(fds.map_err(|err| setup("opening it", err))?) })
    }

    /// The descriptors a child joins: the owning user namespace (if any), then the network one.
    pub(crate) fn raw(&self) -> (Option<RawFd>, RawFd) {
        (self.fds.user.as_ref().map(AsRawFd::as_raw_fd), self.fds.net.as_raw_fd())
    }
}

/// In the helper, before `exec`: a new user namespace when not root, a new network namespace,
/// and `lo` up.
fn enter(maps: Option<&(Vec<u8>, Vec<u8>)>) -> io::Result<()> {
    if let Some((uid_map, gid_map)) = maps {
        // SAFETY: flag word only; the child is single-threaded as `unshare` requires.
        child::check(unsafe { libc::unshare(libc::CLONE_NEWUSER) })?;
        child::write_path(c"/proc/self/setgroups", b"deny")?;
        child::write_path(c"/proc/self/uid_map", uid_map)?;
        child::write_path(c"/proc/self/gid_map", gid_map)?;
    }
    // SAFETY: flag word only.
    child::check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
    loopback_up()
}

/// Sets `IFF_UP` on `lo` of the current network namespace.
fn loopback_up() -> io::Result<()> {
    // SAFETY: plain system calls on a local `ifreq`; the socket is closed on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        child::check(fd)?;
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request);
        if rc == 0 {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &request);
        }
        let result = child::check(rc);
        libc::close(fd);
        result
    }
}
