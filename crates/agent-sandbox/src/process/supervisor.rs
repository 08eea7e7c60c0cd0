//! The supervisor: one small process of ours between the agent and every command, so that nothing
//! a tool starts outlives the agent, whatever ends it (`kill -9` and the OOM killer included).
//!
//! Between `fork` and `exec`, the forked child forks once more. The new child goes on to the
//! sandbox and `exec`s the command; the first one stays behind as the command's supervisor and
//! never returns to Rust code that allocates: it only makes system calls on its stack (see
//! `sandbox/child.rs` for why). The supervisor
//!
//! - closes every descriptor it inherited but the read end of the *lifeline*, a pipe whose write
//!   end only the agent holds: when the agent dies, by any death, the kernel closes it and the
//!   supervisor's `poll` wakes with `POLLHUP`. A parent-death signal would not do: it fires when
//!   the *thread* that forked exits, and tokio retires idle blocking threads;
//! - is a child subreaper, so every orphan below it (a `nohup … &`, a `(cmd &)`, a process that
//!   called `setsid` where seccomp allows it) is re-parented to it rather than to init;
//! - on the lifeline's end, kills its children generation by generation (each killed child's
//!   children are re-parented to it and killed next) until none is left, then exits;
//! - otherwise waits: for a foreground command until the command exits (then it kills what the
//!   command left running, the same way), for a job until no process below it is left, and exits
//!   with the command's own status (the same exit code, or death by the same signal), so the agent
//!   reads the command's status from its own child;
//! - ignores the signals a group kill sends first (SIGTERM and the like), so the command gets its
//!   grace period; SIGKILL to the group ends it together with the command.
//!
//! The command gets `PR_SET_PDEATHSIG` = SIGKILL against the supervisor (a single-threaded parent,
//! so the thread caveat does not apply), set after the sandbox since a change of credentials
//! clears it: a supervisor killed alone takes the command with it.

#![allow(unsafe_code)]

use std::{
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    sync::OnceLock,
};

/// How long the supervisor waits, and so what its exit means to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Until {
    /// A foreground command: until the command exits; what it left running is killed then.
    Command,
    /// A job: until no process below the supervisor is left.
    Everything,
}

/// The plan for one spawn: the lifeline's read end and the mode, prepared in the parent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Supervisor {
    lifeline: libc::c_int,
    until: Until,
}

/// The lifeline: a pipe this process never writes to and never closes. Both ends are close-on-exec,
/// so no command holds them; a supervisor closes its inherited copy of the write end at once.
fn lifeline() -> io::Result<libc::c_int> {
    static LIFELINE: OnceLock<Result<(OwnedFd, OwnedFd), i32>> = OnceLock::new();
    let pipe = LIFELINE.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: `pipe2` fills the two-element array; the descriptors are owned from here on.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(errno());
        }
        // SAFETY: both descriptors were just created and belong to nothing else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    });
    match pipe {
        Ok((read, _write)) => Ok(read.as_raw_fd()),
        Err(code) => Err(io::Error::from_raw_os_error(*code)),
    }
}

impl Supervisor {
    /// A supervisor waiting `until`, with the lifeline made now (in the parent).
    pub(crate) fn new(until: Until) -> io::Result<Self> {
        Ok(Self { lifeline: lifeline()?, until })
    }

    /// Runs in the child between `fork` and `exec`, before the sandbox: forks the command and
    /// returns in it, with the supervisor's pid; the supervisor itself never returns.
    /// Async-signal-safe.
    pub(crate) fn split(&self) -> io::Result<libc::pid_t> {
        // SAFETY: `getpid` has no preconditions.
        let supervisor = unsafe { libc::getpid() };
        let pid = raw_fork()?;
        if pid == 0 {
            return Ok(supervisor);
        }
        // SAFETY: this is the forked, single-threaded supervisor; it only makes system calls on
        // its stack and ends in `_exit`.
        unsafe { supervise(pid, self.lifeline, self.until) }
    }

    /// Runs in the command after the sandbox, right before `exec`: dies with `supervisor`.
    pub(crate) fn bind(supervisor: libc::pid_t) -> io::Result<()> {
        // SAFETY: plain prctl and getppid calls with integer arguments.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            // The supervisor died before the signal was armed: nothing may run unsupervised.
            if libc::getppid() != supervisor {
                libc::_exit(137);
            }
        }
        Ok(())
    }
}

/// `fork` as the raw system call: glibc's `fork` runs its atfork handlers, which take the
/// allocator's locks — held forever, perhaps, by a thread that does not exist in this child.
fn raw_fork() -> io::Result<libc::pid_t> {
    // SAFETY: `clone` with only SIGCHLD and no new stack is `fork`; every argument is a plain
    // integer or null (the argument order differs by architecture, so all of them are zero).
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) };
    if pid < 0 { Err(io::Error::last_os_error()) } else { Ok(pid as libc::pid_t) }
}

/// Signals the supervisor ignores: the first ones of a group kill and the terminal's.
const IGNORED: [libc::c_int; 11] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGPIPE,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// The supervisor's life; ends in `_exit` or in death by the command's own signal.
///
/// # Safety
/// Only in a freshly forked, single-threaded child.
unsafe fn supervise(command: libc::pid_t, lifeline: libc::c_int, until: Until) -> ! {
    // SAFETY: every call below is a system call on values and buffers on this stack.
    unsafe {
        close_all_but(lifeline);
        for signal in IGNORED {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        // SIGCHLD through a descriptor, so one `poll` waits for a child and for the lifeline.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let children = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        let mut status: Option<libc::c_int> = None;
        loop {
            // Reap what has exited (a SIGCHLD may have come before the descriptor existed).
            loop {
                let mut raw = 0;
                let pid = libc::waitpid(-1, &mut raw, libc::WNOHANG);
                if pid == command {
                    status = Some(raw);
                    if until == Until::Command {
                        // Without `/proc` the agent's own group kill, which follows, suffices.
                        kill_descendants(false);
                        exit_as(raw);
                    }
                } else if pid == 0 {
                    break;
                } else if pid < 0 {
                    if errno() == libc::EINTR {
                        continue;
                    }
                    // ECHILD: nothing is left below the supervisor.
                    exit_as(status.unwrap_or(0));
                }
            }
            let mut fds = [
                libc::pollfd { fd: lifeline, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: children, events: libc::POLLIN, revents: 0 },
            ];
            // Without the signal descriptor, a short poll stands in for the SIGCHLD wake-up.
            let timeout = if children < 0 { 50 } else { -1 };
            if libc::poll(fds.as_mut_ptr(), 2, timeout) < 0 {
                continue;
            }
            if fds[0].revents != 0 {
                // The agent is gone: so is everything it started.
                kill_descendants(true);
                libc::_exit(137);
            }
            if fds[1].revents != 0 {
                let mut buf = [0u8; 1024];
                while libc::read(children, buf.as_mut_ptr().cast(), buf.len()) > 0 {}
            }
        }
    }
}

/// Kills every process below the supervisor: its children, then the orphans re-parented to it,
/// until it has none. Where `/proc/thread-self/children` cannot be read, the process group when
/// `group`, which this supervisor is in too and goes with; nothing otherwise.
///
/// # Safety
/// Only in the supervisor.
unsafe fn kill_descendants(group: bool) {
    // SAFETY: system calls on stack buffers; `waitpid` blocks until a child has gone.
    unsafe {
        loop {
            if kill_children() < 0 {
                if !group {
                    return;
                }
                // The command's group holds every process the sandbox lets it start.
                libc::kill(0, libc::SIGKILL);
            }
            let mut raw = 0;
            if libc::waitpid(-1, &mut raw, 0) < 0 && errno() != libc::EINTR {
                return;
            }
        }
    }
}

/// SIGKILLs each child listed in `/proc/thread-self/children`; returns how many, or -1 when the
/// file cannot be read.
///
/// # Safety
/// Only in the supervisor.
unsafe fn kill_children() -> i32 {
    // SAFETY: `open`/`read`/`close` on a stack buffer, `kill` with parsed pids.
    unsafe {
        let fd =
            libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return -1;
        }
        let (mut count, mut pid) = (0, 0 as libc::pid_t);
        let mut buf = [0u8; 512];
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &byte in &buf[..n as usize] {
                if byte.is_ascii_digit() {
                    pid = pid.saturating_mul(10).saturating_add(libc::pid_t::from(byte - b'0'));
                } else if pid > 0 {
                    libc::kill(pid, libc::SIGKILL);
                    count += 1;
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            libc::kill(pid, libc::SIGKILL);
            count += 1;
        }
        libc::close(fd);
        count
    }
}

/// Ends the supervisor as the command ended: the same exit code, or death by the same signal
/// (with core dumps off, so the supervisor's copy of the agent's memory is never written out).
///
/// # Safety
/// Only in the supervisor.
unsafe fn exit_as(status: libc::c_int) -> ! {
    // SAFETY: system calls with integer arguments and a stack `sigset_t`.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Closes every inherited descriptor but `keep`: the agent's sockets, pipes and files, the
/// command's stdio and the spawn's error pipe must not stay open for as long as the supervisor.
///
/// # Safety
/// Only in the supervisor.
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: `close_range` and `close` take integers; closing unknown descriptors is the point.
    unsafe {
        let range = |first: libc::c_uint, last: libc::c_uint| {
            libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint)
        };
        let keep = keep as libc::c_uint;
        let below = if keep == 0 { 0 } else { range(0, keep - 1) };
        let above = range(keep + 1, libc::c_uint::MAX);
        if below < 0 || above < 0 {
            // Kernels before 5.9: one at a time, up to the descriptor limit.
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            let last = limit.rlim_cur.min(1 << 20) as libc::c_int;
            for fd in (0..last).filter(|&fd| fd != keep as libc::c_int) {
                libc::close(fd);
            }
        }
    }
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
