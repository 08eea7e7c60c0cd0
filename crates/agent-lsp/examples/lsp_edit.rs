//! Benchmark figures for diagnostics after edits (printed, not asserted), against pyright from
//! `scripts/peers/lsp/` (warm: the server is started and the file opened before timing):
//! `lsp.edit_to_diagnostics_ms`, from the observer's call to its answer for an edit that
//! introduces or fixes one type error, and `lsp.harness_share_ms`, that time less the server's
//! own (from sending the text to its diagnostics' arrival).
//!
//! Run with `cargo run --release -p agent-lsp --example lsp_edit [-- --json] [--quick]`; set
//! `PYRIGHT` to the `pyright-langserver` to use (default: the peers' install).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agent_core::EditedFile;
use agent_lsp::{LspConfig, LspSession, ServerConfig};

const GOOD: &str = "def f(x: int) -> int:\n    return x\n\nz: int = 3\n";
const BAD: &str = "def f(x: int) -> int:\n    return x\n\nz: int = \"text\"\n";

fn pyright() -> String {
    std::env::var("PYRIGHT").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        let peers = std::env::var("AGENT_MCP_PEERS")
            .unwrap_or_else(|_| format!("{home}/.cache/agent/mcp-peers"));
        format!("{peers}/lsp/node/node_modules/.bin/pyright-langserver")
    })
}

fn figure(name: &str, mut values: Vec<f64>, json: bool) {
    values.sort_by(f64::total_cmp);
    let (median, min, max) = (values[values.len() / 2], values[0], values[values.len() - 1]);
    if json {
        let line = serde_json::json!({"name": name, "unit": "ms", "median": median, "min": min, "max": max, "runs": values.len()});
        println!("{line}");
    } else {
        println!(
            "{name}: median {median:.2} ms (min {min:.2}, max {max:.2}, {} runs)",
            values.len()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let runs = if args.iter().any(|a| a == "--quick") { 10 } else { 40 };
    let program = pyright();
    if !std::path::Path::new(&program).exists() {
        println!("pyright not installed (bash scripts/mcp/setup.sh): lsp figures skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ServerConfig {
        language: "python".into(),
        command: vec![program, "--stdio".into()],
        file_types: vec!["py".into()],
        root_markers: Vec::new(),
        initialization_options: None,
        language_ids: Vec::new(),
        enabled: true,
        settle: Duration::ZERO,
    };
    let config =
        LspConfig { servers: vec![server], wait: Duration::from_secs(60), ..LspConfig::default() };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let session =
        LspSession::new(config, &root, agent_sandbox::secret::Secrets::default()).unwrap();
    let path = root.join("a.py");
    std::fs::write(&path, GOOD).unwrap();
    let edit = |text: &str| {
        let before = std::fs::read_to_string(&path).ok();
        std::fs::write(&path, text).unwrap();
        let started = Instant::now();
        let note = runtime.block_on(session.observe(&[EditedFile::changed(&path, before)]));
        let took = started.elapsed();
        assert!(!note.is_empty() && !note.contains("pending"), "{note}");
        (took, session.last_server_time().unwrap_or_default())
    };
    // Warm-up: the start, the baseline and a few edits.
    for text in [BAD, GOOD, BAD, GOOD] {
        edit(text);
    }
    let (mut total, mut share) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let (took, server) = edit(if run % 2 == 0 { BAD } else { GOOD });
        total.push(took.as_secs_f64() * 1e3);
        share.push(took.saturating_sub(server).as_secs_f64() * 1e3);
    }
    figure("lsp.edit_to_diagnostics_ms", total, json);
    figure("lsp.harness_share_ms", share, json);
}
