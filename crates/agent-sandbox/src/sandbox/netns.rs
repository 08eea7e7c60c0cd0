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
    sync::{Arc, Mutex, OnceLock},
    thread::JoinHandle,
};

use super::{SandboxError, child, limits};

/// A private network namespace with only `lo` up, shared by every command of a session.
///
/// Cheap to clone; the namespace lives while a clone does (and while a process is inside it).
#[derive(Debug, Clone)]
pub struct NetNamespace {
    fds: Arc<Pending>,
}

/// The namespace's descriptors, or the thread still making them ([`NetNamespace::in_background`]).
#[derive(Debug)]
struct Pending {
    ready: OnceLock<Option<NamespaceFds>>,
    maker: Mutex<Option<JoinHandle<Result<NamespaceFds, SandboxError>>>>,
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
        let fds = make()?;
        Ok(Self {
            fds: Arc::new(Pending { ready: OnceLock::from(Some(fds)), maker: Mutex::default() }),
        })
    }

    /// Starts making the namespace on a thread of its own and returns at once, so a session's
    /// start does not wait for it: the helper's `fork`, `exec` and `unshare` cost about 1.5 ms
    /// of the first request (`startup.first_request`). The first command that joins it
    /// waits for the thread. Where the kernel refuses, the namespace is absent, as if [`create`]
    /// had failed: commands then get no IP socket at all, which is the stricter rule.
    ///
    /// [`create`]: Self::create
    pub fn in_background() -> Self {
        let maker = std::thread::Builder::new().name("netns".to_owned()).spawn(make).ok();
        Self { fds: Arc::new(Pending { ready: OnceLock::new(), maker: Mutex::new(maker) }) }
    }

    /// The descriptors, once made; `None` where the kernel refused.
    fn fds(&self) -> Option<&NamespaceFds> {
        self.fds
            .ready
            .get_or_init(|| {
                let maker = self.fds.maker.lock().ok()?.take()?;
                maker.join().ok()?.ok()
            })
            .as_ref()
    }

    /// Whether the namespace exists: `false` where the kernel refused one being made in the
    /// background. Waits for that thread.
    pub fn is_available(&self) -> bool {
        self.fds().is_some()
    }
}

/// Makes the namespace: a helper unshares it, the descriptors are opened, the helper is killed.
fn make() -> Result<NamespaceFds, SandboxError> {
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
    fds.map_err(|err| setup("opening it", err))
}

impl NetNamespace {
    /// The descriptors a child joins: the owning user namespace (if any), then the network one;
    /// `None` where the namespace could not be made.
    pub(crate) fn raw(&self) -> Option<(Option<RawFd>, RawFd)> {
        let fds = self.fds()?;
        Some((fds.user.as_ref().map(AsRawFd::as_raw_fd), fds.net.as_raw_fd()))
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
    loopback_up()?;
    // The helper is killed as soon as its namespace is open, but when the namespace is made in
    // the background the process may exit first (a short `agent` run): the helper then dies with
    // the thread that started it rather than sleeping on. Set last, since changing credentials
    // (the user namespace above) would clear it.
    // SAFETY: plain integers only.
    child::check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) })
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

impl NetNamespace {
    /// A TCP listener on `127.0.0.1` (a port the kernel picks) *inside* the namespace, for the
    /// session proxy: commands reach it on their loopback, while the agent accepts on it from
    /// outside. A short-lived helper joins the namespace (`setns` needs a single-threaded
    /// process when a user namespace is involved), opens the socket and hands it back over a
    /// UNIX socket pair (`SCM_RIGHTS`).
    pub fn listen_loopback(&self) -> Result<std::net::TcpListener, SandboxError> {
        let setup = |what: &str, err: io::Error| {
            SandboxError::Setup(format!("proxy listener in the network namespace: {what}: {err}"))
        };
        let mut pair = [0 as libc::c_int; 2];
        // SAFETY: `socketpair` writes two descriptors into the array.
        child::check(unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        })
        .map_err(|err| setup("socketpair", err))?;
        // SAFETY: both descriptors were just created and are owned here.
        let (ours, theirs) = unsafe {
            use std::os::fd::FromRawFd;
            (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1]))
        };
        let (user, net) = self.raw().ok_or_else(|| {
            setup("joining it", io::Error::other("the namespace could not be made"))
        })?;
        let send_on = theirs.as_raw_fd();
        #[expect(
            clippy::disallowed_methods,
            reason = "a helper that only opens a socket in the namespace: it runs no code of the \
                      model's"
        )]
        let mut command = std::process::Command::new("true");
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: the closure makes only async-signal-safe system calls on plain integers.
        unsafe {
            command.pre_exec(move || listen_and_send(user, net, send_on));
        }
        let status = command.status().map_err(|err| setup("running the helper", err))?;
        drop(theirs);
        if !status.success() {
            return Err(setup("the helper", io::Error::other(format!("exited with {status}"))));
        }
        receive_fd(ours.as_raw_fd())
            .map(std::net::TcpListener::from)
            .map_err(|err| setup("receiving the socket", err))
    }
}

/// In the helper, before `exec`: join the namespace, listen on `127.0.0.1:0`, send the socket.
fn listen_and_send(user: Option<RawFd>, net: RawFd, send_on: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on descriptors the parent keeps open and on local structs.
    unsafe {
        if let Some(user) = user {
            child::check(libc::setns(user, libc::CLONE_NEWUSER))?;
        }
        child::check(libc::setns(net, libc::CLONE_NEWNET))?;
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        child::check(fd)?;
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        child::check(libc::bind(
            fd,
            (&raw const addr).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ))?;
        child::check(libc::listen(fd, 128))?;
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut space = [0u8; 64];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        if libc::sendmsg(send_on, &raw const msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives one descriptor sent with `SCM_RIGHTS`.
fn receive_fd(on: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: `recvmsg` into local buffers; the descriptor it returns is owned from here on.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut space = [0u8; 64];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = space.len() as _;
        if libc::recvmsg(on, &raw mut msg, libc::MSG_CMSG_CLOEXEC) < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        if cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::other("no descriptor came back"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        use std::os::fd::FromRawFd;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}
