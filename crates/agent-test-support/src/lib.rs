//! Test helpers shared by the workspace's test suites: how a test that cannot run on this machine
//! says so, and where the MCP peers it may need are installed.
//!
//! A test that needs a kernel feature (Landlock, seccomp, user namespaces) or a peer program (jq,
//! python3, the MCP peers) calls [`skipped`] when it is missing. The skip is printed in a passing
//! run; where the machine is known to have everything (CI sets `AGENT_NO_SKIP=1`), it is a failure
//! instead, so a lost feature or peer can never pass silently.
//!
//! This crate is a dev-dependency only (tidy checks that no crate ships with it).

use std::{io::Write as _, path::PathBuf};

/// The switch that turns every skip into a failure.
pub const NO_SKIP: &str = "AGENT_NO_SKIP";

/// The switch's old name, still honoured: it once governed only the sandbox tests.
pub const NO_SKIP_ALIAS: &str = "AGENT_REQUIRE_SANDBOX";

/// Whether skips are failures here: `AGENT_NO_SKIP` (or its alias `AGENT_REQUIRE_SANDBOX`) is set.
pub fn no_skip() -> bool {
    [NO_SKIP, NO_SKIP_ALIAS].iter().any(|name| std::env::var_os(name).is_some())
}

/// The variable naming the directory the MCP peers are installed in (instead of the default).
pub const MCP_PEERS: &str = "AGENT_MCP_PEERS";

/// Where `scripts/mcp/setup.sh` installed the MCP peers: `AGENT_MCP_PEERS`, else
/// `~/.cache/agent/mcp-peers`.
pub fn mcp_peers_dir() -> PathBuf {
    match std::env::var_os(MCP_PEERS) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::home_dir().unwrap_or_default().join(".cache/agent/mcp-peers"),
    }
}

/// The installed MCP peer at `relative` (inside [`mcp_peers_dir`]), or `None` after saying the
/// check is [`skipped`] for want of `what`.
#[track_caller]
pub fn mcp_peer(relative: &str, what: &str) -> Option<PathBuf> {
    let path = mcp_peers_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    skipped(&format!(
        "{what} is not installed at {} (run scripts/mcp/setup.sh or set {MCP_PEERS})",
        path.display()
    ));
    None
}

/// The Python of the virtualenv holding the `mcp` SDK, or `None` after saying the check is
/// skipped.
#[track_caller]
pub fn mcp_python() -> Option<PathBuf> {
    mcp_peer("venv/bin/python", "the Python mcp SDK")
}

/// Says why a check is skipped, on the real stderr: libtest captures `println!`, and a skip must
/// be visible in a passing run. Under [`no_skip`] the skip fails the test instead.
#[track_caller]
pub fn skipped(reason: &str) {
    assert!(!no_skip(), "{NO_SKIP} is set but this check cannot run: {reason}");
    let _ = writeln!(std::io::stderr(), "SKIPPED: {reason}");
}

/// The installed peer of `area` (from `scripts/peers/<area>/`) at `relative` inside
/// `<peers dir>/<area>/` — for example `peer("acp", "node/node_modules/.bin/acpx", "acpx")` — or
/// `None` after saying the check is [`skipped`] for want of `what`.
#[track_caller]
pub fn peer(area: &str, relative: &str, what: &str) -> Option<PathBuf> {
    mcp_peer(&format!("{area}/{relative}"), what)
}

/// The Python of `area`'s virtualenv (from `scripts/peers/<area>/requirements.txt`), or `None`
/// after saying the check is skipped.
#[track_caller]
pub fn peer_python(area: &str) -> Option<PathBuf> {
    peer(area, "venv/bin/python", &format!("the Python peers of {area}"))
}

/// One process of a process group, as `/proc/<pid>/stat` showed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupMember {
    /// The process id.
    pub pid: u32,
    /// The process has exited and waits to be reaped: it runs nothing any more.
    pub zombie: bool,
}

/// The processes whose process group is `pgid` right now, zombies included, from `/proc`: how
/// the sandbox, jobs and tool tests check that nothing a command started survived it.
pub fn process_group(pgid: u32) -> Vec<GroupMember> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The command name is in parentheses and may hold spaces; after it come the state, the
        // parent's pid and the process group.
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let fields: Vec<&str> = rest.split(' ').collect();
        if fields.get(2).and_then(|group| group.parse::<u32>().ok()) == Some(pgid) {
            members.push(GroupMember { pid, zombie: fields.first() == Some(&"Z") });
        }
    }
    members
}

/// The pids in process group `pgid` that can still run (zombies left out).
pub fn live_in_group(pgid: u32) -> Vec<u32> {
    process_group(pgid)
        .into_iter()
        .filter(|member| !member.zombie)
        .map(|member| member.pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_process_is_found_in_its_own_group_and_a_free_group_is_empty() {
        let pid = std::process::id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let pgid: u32 = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split(' ').nth(2))
            .and_then(|group| group.parse().ok())
            .unwrap_or_default();
        assert!(live_in_group(pgid).contains(&pid), "pid {pid} not in group {pgid}");
        // Group ids are pids, and the kernel never hands out u32::MAX.
        assert!(process_group(u32::MAX).is_empty());
    }
}
