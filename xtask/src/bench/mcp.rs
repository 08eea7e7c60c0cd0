//! `startup.first_request_mcp`: the first request of `agent exec` with three MCP servers
//! configured (server-everything, the Python SDK test server, and the same server sleeping 5 s
//! before it serves), in turns with the plain `startup.first_request`, and the difference of each
//! pair. No request waits for a server, so the difference is what starting them costs the agent.

use std::path::{Path, PathBuf};

use super::{Bins, Figure, process};

/// Where `scripts/mcp/setup.sh` installed the peers.
fn peers() -> PathBuf {
    match std::env::var_os("AGENT_MCP_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::home_dir().unwrap_or_default().join(".cache/agent/mcp-peers"),
    }
}

/// The config file with the three servers, or `None` when the peers are not installed.
fn config(scratch: &Path) -> anyhow::Result<Option<PathBuf>> {
    let peers = peers();
    let everything = peers.join("node/node_modules/.bin/mcp-server-everything");
    let python = peers.join("venv/bin/python");
    if !everything.exists() || !python.exists() {
        return Ok(None);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let server = root.join("crates/agent-mcp/tests/peers/py_server.py");
    let markers = scratch.join("mcp-markers");
    std::fs::create_dir_all(&markers)?;
    let py = |name: &str, extra: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = {python:?}\nargs = [{server:?}, {extra}\"--marker-dir\", {markers:?}]\n"
        )
    };
    let tables = format!(
        "[mcp_servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\n{}\n{}",
        py("py", ""),
        py("slow", "\"--slow-start\", \"5\", "),
    );
    let path = scratch.join("mcp-config.toml");
    std::fs::write(&path, tables)?;
    Ok(Some(path))
}

/// `startup.first_request`, and with the peers installed `startup.first_request_mcp` and
/// `startup.first_request_mcp.diff` (the median of the per-pair differences).
pub(super) fn first_requests(
    bins: &Bins,
    runs: usize,
    scratch: &Path,
    figures: &mut Vec<Figure>,
) -> anyhow::Result<()> {
    let config = config(scratch)?;
    if config.is_none() {
        super::progress(
            "MCP peers not installed (scripts/mcp/setup.sh): startup.first_request_mcp skipped",
        );
    }
    let dir = scratch.join("first-request");
    let (mut plain, mut mcp, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    // The first rounds bring the binary and the servers' files into the page cache.
    for round in 0..runs + 2 {
        let alone = process::first_request(bins, &dir, None)?;
        let with = match &config {
            Some(config) => Some(process::first_request(bins, &dir, Some(config))?),
            None => None,
        };
        if round >= 2 {
            plain.push(alone);
            if let Some(with) = with {
                mcp.push(with);
                diff.push(with - alone);
            }
        }
    }
    figures.push(Figure::of("startup.first_request", "ms", plain));
    if config.is_some() {
        figures.push(Figure::of("startup.first_request_mcp", "ms", mcp));
        figures.push(Figure::of("startup.first_request_mcp.diff", "ms", diff));
    }
    Ok(())
}
