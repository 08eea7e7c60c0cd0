//! The CPU time of a process tree, read from `/proc`: what a campaign in CPU-minutes measures.
//!
//! On a shared machine a fuzzer run at `nice 19` gets only the idle CPU, so its wall time says
//! little about how much fuzzing it did; the CPU time of afl-fuzz and everything below it (the
//! fork server and the persistent children it forks) does. A live process's own time is in its
//! `utime` and `stime`; a child that has exited and been reaped moved its time into the parent's
//! `cutime` and `cstime`; summing all four over the live tree counts every process once.

use std::collections::HashMap;

/// Clock ticks a second of `/proc/PID/stat`'s times (`getconf CLK_TCK`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// The CPU seconds used by `root` and all its descendants, living and reaped; `None` once
/// `root` is gone.
pub(super) fn tree_seconds(root: u32) -> Option<f64> {
    let mut parent_of = HashMap::new();
    let mut ticks = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        // A process may exit between the listing and the read; it is then simply not counted
        // (its time is in its parent's `cutime` at the next reading).
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if let Some((parent, used)) = parse_stat(&stat) {
            parent_of.insert(pid, parent);
            ticks.insert(pid, used);
        }
    }
    let own = *ticks.get(&root)?;
    let below: u64 = ticks
        .iter()
        .filter(|&(&pid, _)| pid != root && descends(pid, root, &parent_of))
        .map(|(_, &used)| used)
        .sum();
    #[allow(clippy::cast_precision_loss)] // Ticks of one campaign are far below 2^52.
    Some((own + below) as f64 / TICKS_PER_SECOND)
}

/// The parent and `utime + stime + cutime + cstime` of one `/proc/PID/stat` line. The command
/// name, in parentheses, may hold spaces and parentheses, so fields count from the last `)`.
fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    // After the name: state (field 3), ppid (4), … utime (14), stime (15), cutime (16),
    // cstime (17), so field N is at index N - 3.
    let parent = fields.get(1)?.parse().ok()?;
    let mut used = 0;
    for index in 11..=14 {
        used += fields.get(index)?.parse::<i64>().ok()?.max(0).unsigned_abs();
    }
    Some((parent, used))
}

/// Whether `pid` is below `root` (bounded by the number of processes, in case of a cycle read
/// across a pid's reuse).
fn descends(mut pid: u32, root: u32, parent_of: &HashMap<u32, u32>) -> bool {
    for _ in 0..parent_of.len() {
        match parent_of.get(&pid) {
            Some(&parent) if parent == root => return true,
            Some(&parent) if parent != pid => pid = parent,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_the_name_parses() {
        let line = "4242 (afl (fuzz) x) S 17 4242 17 0 -1 4194304 100 0 0 0 \
                    250 50 7 3 39 19 1 0 123 0 0";
        assert_eq!(parse_stat(line), Some((17, 310)));
    }

    #[test]
    fn this_process_has_a_cpu_time() {
        let spent = tree_seconds(std::process::id());
        assert!(spent.is_some_and(|seconds| seconds >= 0.0), "{spent:?}");
    }
}
