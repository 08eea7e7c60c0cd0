//! The soak's bounds, checked on one `agent acp` process between sessions (when none is open),
//! and the figures they leave for docs/BENCHMARKS.md.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::bail;

use super::probe::{self, Proc};

/// Open descriptors may exceed the warm-up baseline by this many: a pooled connection to the
/// model server or a lazily opened log may come and go; a leak of one per session passes it
/// within a few dozen sessions.
pub(crate) const FD_SLACK: usize = 16;
/// The resident set may exceed the warm-up baseline by this much (allocator caches, pooled
/// buffers); a leak of 40 KiB per session passes it within 1,000 sessions.
pub(crate) const RSS_SLACK_MIB: u64 = 64;
/// Entries the agent's `TMPDIR` may hold while no session is open.
pub(crate) const TMP_SLACK: usize = 0;
/// How long processes may take to go after `session/close` answered (a SIGKILL takes effect,
/// and a zombie is reaped, asynchronously).
pub(crate) const SETTLE: Duration = Duration::from_secs(5);

/// Live processes (zombies left out) whose command line holds `marker`, this one excepted.
pub(crate) fn processes_with(marker: &str) -> Vec<Proc> {
    let own = std::process::id();
    probe::all()
        .into_iter()
        .filter(|proc| proc.pid != own && proc.state != 'Z' && proc.cmdline.contains(marker))
        .collect()
}

/// Polls until `found` returns nothing, for at most `limit`; what is left after that.
pub(crate) fn settle(limit: Duration, found: impl Fn() -> Vec<Proc>) -> Vec<Proc> {
    let started = Instant::now();
    loop {
        let left = found();
        if left.is_empty() || started.elapsed() > limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn list(procs: &[Proc]) -> String {
    procs.iter().map(|proc| format!("\n    {proc}")).collect()
}

/// The running state of the checks on one process, and the figures.
pub(crate) struct Checks {
    pub(crate) api: &'static str,
    pid: u32,
    /// The marker of every process this API's sessions start.
    base: String,
    tmp: PathBuf,
    data: PathBuf,
    started: Instant,
    /// Descriptors and resident set (KiB) after the warm-up.
    baseline: Option<(usize, u64)>,
    pub(crate) max_fds: usize,
    pub(crate) max_rss_kib: u64,
    pub(crate) peak_kib: u64,
    pub(crate) threads: (u64, u64),
    pub(crate) max_store: u64,
    /// The most processes below the agent seen while a session was open.
    pub(crate) busiest: usize,
    /// Sessions opened again because their MCP server missed its start-up limit.
    pub(crate) slow_starts: usize,
}

impl Checks {
    pub(crate) fn new(api: &'static str, pid: u32, base: &str, tmp: &Path, data: &Path) -> Self {
        Self {
            api,
            pid,
            base: base.to_owned(),
            tmp: tmp.to_owned(),
            data: data.to_owned(),
            started: Instant::now(),
            baseline: None,
            max_fds: 0,
            max_rss_kib: 0,
            peak_kib: 0,
            threads: (0, 0),
            max_store: 0,
            busiest: 0,
            slow_starts: 0,
        }
    }

    /// Notes how many processes run below the agent now (a session open).
    pub(crate) fn sample(&mut self) {
        let below = probe::descendants(&probe::all(), self.pid).len();
        self.busiest = self.busiest.max(below);
    }

    /// Takes the warm-up baseline of descriptors and resident set.
    pub(crate) fn baseline(&mut self, done: usize) -> anyhow::Result<()> {
        self.processes()?;
        let fds = probe::fds(self.pid);
        let values = probe::status(self.pid, &["VmRSS", "Threads"]);
        self.baseline = Some((fds, values[0]));
        self.threads.0 = values[1];
        println!(
            "[{}] baseline after {done} sessions of warm-up: {fds} fds, RSS {:.1} MiB, {} threads",
            self.api,
            mib(values[0]),
            values[1]
        );
        Ok(())
    }

    /// Every bound, after `done` of `total` sessions; fails naming what grew.
    pub(crate) fn check(&mut self, done: usize, total: usize) -> anyhow::Result<()> {
        self.processes()?;
        let Some((base_fds, base_rss)) = self.baseline else { bail!("no baseline taken") };
        let fds = probe::fds(self.pid);
        let values = probe::status(self.pid, &["VmRSS", "VmHWM", "Threads"]);
        let (rss, peak, threads) = (values[0], values[1], values[2]);
        self.max_fds = self.max_fds.max(fds);
        self.max_rss_kib = self.max_rss_kib.max(rss);
        self.peak_kib = self.peak_kib.max(peak);
        self.threads.1 = self.threads.1.max(threads);
        let mut kinds: Vec<_> = probe::fd_kinds(self.pid).into_iter().collect();
        kinds.sort_by_key(|kind| std::cmp::Reverse(kind.1));
        let kinds: Vec<String> = kinds.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
        if fds > base_fds + FD_SLACK {
            bail!(
                "open file descriptors grew: {fds} after {done} sessions, baseline {base_fds} \
                 (slack {FD_SLACK}); now open: {}",
                kinds.join(", ")
            );
        }
        if rss > base_rss + RSS_SLACK_MIB * 1024 {
            bail!(
                "resident set grew: {:.1} MiB after {done} sessions, baseline {:.1} MiB (slack {RSS_SLACK_MIB} MiB)",
                mib(rss),
                mib(base_rss)
            );
        }
        let (_, tmp) = probe::tree_size(&self.tmp);
        if tmp > TMP_SLACK {
            let names: Vec<String> = std::fs::read_dir(&self.tmp)?
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .take(10)
                .collect();
            bail!(
                "temporary files left in TMPDIR after {done} sessions: {tmp} entries ({})",
                names.join(", ")
            );
        }
        let store = self.stores()?;
        let (data, _) = probe::tree_size(&self.data);
        println!(
            "[{}] {done}/{total} sessions · {:.0} s · processes below the agent 0 (busiest {}) · \
             fds {fds} (baseline {base_fds}) · RSS {:.1} MiB (baseline {:.1}, peak {:.1}) · \
             threads {threads} · TMPDIR empty · largest checkpoint store {store} B (cap {}) · data {:.1} MiB",
            self.api,
            self.started.elapsed().as_secs_f64(),
            self.busiest,
            mib(rss),
            mib(base_rss),
            mib(peak),
            super::STORE_CAP,
            data as f64 / 1_048_576.0
        );
        Ok(())
    }

    /// No process below the agent, and none anywhere with this API's marker.
    fn processes(&self) -> anyhow::Result<()> {
        let below = settle(SETTLE, || probe::descendants(&probe::all(), self.pid));
        if !below.is_empty() {
            bail!("processes left below the agent with no session open:{}", list(&below));
        }
        let marked = settle(SETTLE, || processes_with(&self.base));
        if !marked.is_empty() {
            bail!("processes of closed sessions still run:{}", list(&marked));
        }
        Ok(())
    }

    /// The largest checkpoint store's blobs; fails when one is over the cap.
    fn stores(&mut self) -> anyhow::Result<u64> {
        let Ok(sessions) = std::fs::read_dir(self.data.join("sessions")) else { return Ok(0) };
        for session in sessions.flatten() {
            let (bytes, _) = probe::tree_size(&session.path().join("checkpoints/blobs"));
            if bytes > super::STORE_CAP {
                bail!(
                    "the checkpoint store of session {} holds {bytes} bytes of blobs, over its cap of {}",
                    session.file_name().to_string_lossy(),
                    super::STORE_CAP
                );
            }
            self.max_store = self.max_store.max(bytes);
        }
        Ok(self.max_store)
    }
}

pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
