//! What one CI step cost: wall time, and CPU time (user + system) of every process it ran.
//!
//! On two cores the CPU seconds say more than the wall clock when the machine is shared: a step's
//! CPU seconds halved is what it takes on an idle two-core machine at best. They come from the
//! kernel's accounting of this process and its waited-for descendants (`/proc/self/stat`), so a
//! step's figure covers cargo, every rustc, the test binaries and the servers it started and reaped.

use std::time::{Duration, Instant};

/// The kernel's clock ticks per second in `/proc` (USER_HZ, 100 on every Linux architecture the
/// workspace builds for).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds used so far by this process and by its reaped children (and theirs).
pub(super) fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The command name (field 2) is in parentheses and may hold spaces; the fields after it start
    // at field 3 (state), so utime, stime, cutime and cstime (fields 14–17) are the 12th to 15th.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 =
        after_name.split_whitespace().skip(11).take(4).filter_map(|f| f.parse::<f64>().ok()).sum();
    ticks / TICKS_PER_SECOND
}

/// A stopwatch for both clocks.
pub(super) struct Clock {
    wall: Instant,
    cpu: f64,
}

/// What a stopwatch read: wall and CPU time.
#[derive(Clone, Copy)]
pub(super) struct Spent {
    pub(super) wall: Duration,
    pub(super) cpu: f64,
}

impl Clock {
    pub(super) fn start() -> Self {
        Self { wall: Instant::now(), cpu: cpu_seconds() }
    }

    pub(super) fn read(&self) -> Spent {
        Spent { wall: self.wall.elapsed(), cpu: (cpu_seconds() - self.cpu).max(0.0) }
    }
}

impl std::fmt::Display for Spent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.0} s wall, {:.0} s CPU", self.wall.as_secs_f64(), self.cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_s_cpu_time_is_counted_once_it_is_reaped() {
        let clock = Clock::start();
        // A child that counts to 200,000 in bash, a few tenths of a second of CPU; its time reaches
        // this process when it is waited for.
        let status = std::process::Command::new("bash")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status();
        assert!(status.is_ok_and(|status| status.success()));
        let spent = clock.read();
        assert!(spent.cpu > 0.1, "the child's CPU time was not counted: {:.2} s", spent.cpu);
        // The process's own figure also holds the other tests' threads, so the bound is the wall
        // time on every core rather than on one.
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
        assert!(spent.cpu <= spent.wall.as_secs_f64() * cores + 0.1);
    }
}
