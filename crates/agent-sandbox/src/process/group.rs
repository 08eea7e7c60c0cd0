//! The process group of a command: signalling it (and its pids cgroup) as a whole, killing it when
//! it is dropped armed, and reaping the orphans re-parented to this process.

#![allow(unsafe_code)]

use std::{
    io,
    time::{Duration, Instant},
};

use crate::sandbox::CgroupLease;

/// A process group, and the pids cgroup that also holds the command's processes (root only).
///
/// Dropping an armed group kills it: if the caller drops the future of [`run`] (its own timeout,
/// a `select!`), or the run fails halfway, nothing it started may outlive it.
pub(crate) struct Group {
    pub(crate) pgid: i32,
    cgroup: Option<CgroupLease>,
    armed: bool,
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(lease) = self.cgroup.take() {
            release(lease);
        }
        if self.armed {
            self.signal(libc::SIGKILL);
            reap_later(self.pgid);
        }
    }
}

/// Set once this process is a child subreaper (see [`crate::jobs`]): orphans of a command's
/// group are then re-parented to it and must be reaped here, or they stay zombies.
pub(crate) static SUBREAPER: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Reaps every exited member of group `pgid` that is this process's child; returns whether any
/// process of the group is still there (zombies of other parents included).
pub(crate) fn reap_group(pgid: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    loop {
        let mut status = 0;
        // SAFETY: `waitpid` writes the status into a local; WNOHANG never blocks.
        let pid = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
    }
    // SAFETY: signal 0 only checks that a process of the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Reaps the re-parented orphans of a killed group off the async threads, for a bounded time.
fn reap_later(pgid: i32) {
    if !SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) || !reap_group(pgid) {
        return;
    }
    let reap = move || {
        let until = Instant::now() + Duration::from_secs(5);
        while reap_group(pgid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(reap)),
        Err(_) => reap(),
    }
}

/// Removes a cgroup off the async threads: rmdir fails with EBUSY until the kernel has released the
/// exited processes, so removal may retry for a few milliseconds, which no caller needs to wait for.
fn release(lease: CgroupLease) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(move || drop(lease))),
        Err(_) => drop(lease),
    }
}

impl Group {
    /// The group `pgid`, armed: dropped, it is killed.
    pub(super) fn new(pgid: i32, cgroup: Option<CgroupLease>) -> Self {
        Self { pgid, cgroup, armed: true }
    }

    /// Disarms the group once it has been killed, and hands its cgroup over for removal.
    pub(crate) fn release(mut self) {
        self.armed = false;
        if let Some(lease) = self.cgroup.take() {
            release(lease);
        }
        reap_later(self.pgid);
    }

    /// Signals the group and the cgroup; returns whether any process was still there.
    pub(crate) fn signal(&self, signal: i32) -> bool {
        // SAFETY: `kill` with a negative pid signals the group; no memory is involved.
        let group_alive = self.pgid > 0 && unsafe { libc::kill(-self.pgid, signal) } == 0;
        let cgroup_alive = self.cgroup.as_ref().is_some_and(|lease| lease.signal_all(signal) > 0);
        group_alive || cgroup_alive
    }

    /// SIGTERM, a grace period while anything is left, then SIGKILL; reaps the leader.
    pub(crate) async fn terminate(
        &self,
        child: &mut tokio::process::Child,
        grace: Duration,
    ) -> io::Result<std::process::ExitStatus> {
        self.signal(libc::SIGTERM);
        let until = Instant::now() + grace;
        let mut status = None;
        while Instant::now() < until {
            if status.is_none() {
                status = child.try_wait()?;
            }
            // Signal 0 only checks existence; zombies still count, so a reaped leader matters.
            if status.is_some() && !self.signal(0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.signal(libc::SIGKILL);
        match status {
            Some(status) => Ok(status),
            None => child.wait().await,
        }
    }
}
