//! What the soak measures of a running process, read from `/proc`: its descendants, its open
//! file descriptors, its resident set, its threads; and the size of a directory tree.

use std::{collections::HashMap, path::Path};

/// One process as `/proc/PID/stat` and `cmdline` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proc {
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    /// The state letter (`R`, `S`, `Z` for a zombie waiting to be reaped, …).
    pub(crate) state: char,
    /// The command line, arguments joined by spaces.
    pub(crate) cmdline: String,
}

impl std::fmt::Display for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cmdline: String = self.cmdline.chars().take(160).collect();
        write!(f, "pid {} ({}, parent {}): {cmdline}", self.pid, self.state, self.ppid)
    }
}

/// The state and parent pid from a `/proc/PID/stat` line: the command name stands in
/// parentheses and may hold spaces and parentheses itself, so the fields are read after the last
/// `) `.
pub(crate) fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Every process on the machine that `/proc` shows right now.
pub(crate) fn all() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((state, ppid)) = parse_stat(&stat) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim_end().to_owned();
        found.push(Proc { pid, ppid, state, cmdline });
    }
    found
}

/// The descendants of `root` (children, their children, …) among `procs`, zombies included.
pub(crate) fn descendants(procs: &[Proc], root: u32) -> Vec<Proc> {
    let mut children: HashMap<u32, Vec<&Proc>> = HashMap::new();
    for proc in procs {
        children.entry(proc.ppid).or_default().push(proc);
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            found.push((*child).clone());
            queue.push(child.pid);
        }
    }
    found
}

/// How many file descriptors `pid` holds open.
pub(crate) fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(Iterator::count).unwrap_or(0)
}

/// The kinds of `pid`'s open descriptors (`socket`, `pipe`, `anon_inode:[eventfd]`, a path's
/// parent folder, …) with their counts, for a message naming what grew.
pub(crate) fn fd_kinds(pid: u32) -> HashMap<String, usize> {
    let mut kinds = HashMap::new();
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return kinds };
    for entry in entries.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else { continue };
        *kinds.entry(fd_kind(&target.to_string_lossy())).or_default() += 1;
    }
    kinds
}

/// The kind of a descriptor's link target: `socket:[123]` is `socket`, a file is its folder.
pub(crate) fn fd_kind(target: &str) -> String {
    if let Some((kind, _)) = target.split_once(":[") {
        return kind.to_owned();
    }
    if target.starts_with('/') {
        return Path::new(target).parent().map_or_else(String::new, |p| p.display().to_string());
    }
    target.to_owned()
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`) in KiB, or a count field (`Threads`).
pub(crate) fn status_field(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.split(':').next() == Some(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `pid`'s status fields `names`, in order (0 for one that cannot be read).
pub(crate) fn status(pid: u32, names: &[&str]) -> Vec<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    names.iter().map(|name| status_field(&text, name).unwrap_or(0)).collect()
}

/// The bytes of every file under `dir` (0 when it does not exist), without following symlinks,
/// and how many entries there are.
pub(crate) fn tree_size(dir: &Path) -> (u64, usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return (0, 0) };
    let (mut bytes, mut count) = (0, 0);
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        count += 1;
        if meta.is_dir() {
            let (b, c) = tree_size(&entry.path());
            bytes += b;
            count += c;
        } else {
            bytes += meta.len();
        }
    }
    (bytes, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_stat(stat: &str, expect: Option<(char, u32)>) {
        assert_eq!(parse_stat(stat), expect, "{stat}");
    }

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        check_stat("12 (bash) S 7 12 12 0", Some(('S', 7)));
        check_stat("12 (a ) Z (b) Z 9 12", Some(('Z', 9)));
        check_stat("12 (bash)", None);
    }

    #[test]
    fn descendants_are_found_through_every_generation_and_no_further() {
        let proc = |pid, ppid| Proc { pid, ppid, state: 'S', cmdline: String::new() };
        let procs = [proc(1, 0), proc(10, 1), proc(11, 10), proc(12, 11), proc(20, 1)];
        let mut found: Vec<u32> = descendants(&procs, 10).iter().map(|p| p.pid).collect();
        found.sort_unstable();
        assert_eq!(found, [11, 12]);
        assert!(descendants(&procs, 12).is_empty());
    }

    #[test]
    fn fd_targets_are_grouped_by_kind() {
        assert_eq!(fd_kind("socket:[4242]"), "socket");
        assert_eq!(fd_kind("anon_inode:[eventfd]"), "anon_inode");
        assert_eq!(
            fd_kind("/tmp/soak/data/sessions/x/transcript.jsonl"),
            "/tmp/soak/data/sessions/x"
        );
        assert_eq!(fd_kind("/dev/null"), "/dev");
    }

    #[test]
    fn status_fields_are_read_by_name() {
        let text = "Name:\tagent\nVmHWM:\t  9000 kB\nVmRSS:\t    4242 kB\nThreads:\t7\n";
        assert_eq!(status_field(text, "VmRSS"), Some(4242));
        assert_eq!(status_field(text, "Threads"), Some(7));
        assert_eq!(status_field(text, "VmSwap"), None);
    }
}
