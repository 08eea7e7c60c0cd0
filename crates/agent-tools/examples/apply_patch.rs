//! Benchmark figures for the edit tools (printed, not asserted): one apply_patch call changing 20
//! files of a 1 MB tree (`apply_patch.ms`), and the same 20 changes as 20 edit_file calls
//! (`edit_file.ms`), each through the tool as the executor runs it.
//!
//! Run with `cargo run --release -p agent-tools --example apply_patch [-- --json] [--quick]`.
//! Each run applies the patch and the next one its reverse, so every run changes the same files
//! on the same tree.
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::{path::Path, sync::Arc, time::Instant};

use agent_core::{Tool, ToolContext, Typed};
use agent_exec::Workspace;
use agent_tools::{ApplyPatch, EditFile, FileTracker};
use serde_json::json;

/// 100 files of about 10 KB each: 1 MB.
const FILES: usize = 100;
const LINES: usize = 250;
const CHANGED: usize = 20;

fn line(file: usize, n: usize) -> String {
    format!("    let value_{file}_{n} = compute({n}, \"item {file}.{n}\"); // filler text\n")
}

fn generate(root: &Path) {
    for file in 0..FILES {
        let dir = root.join(format!("src/mod{}", file % 10));
        std::fs::create_dir_all(&dir).unwrap();
        let text: String = (0..LINES).map(|n| line(file, n)).collect();
        std::fs::write(dir.join(format!("file{file}.rs")), text).unwrap();
    }
}

fn path(file: usize) -> String {
    format!("src/mod{}/file{file}.rs", file % 10)
}

/// The patch changing line 125 of every fifth file (`forward`), or changing it back.
fn patch(forward: bool) -> String {
    let mut out = String::from("*** Begin Patch\n");
    for file in (0..FILES).step_by(FILES / CHANGED) {
        let (old, new) = (line(file, 125), line(file, 125).replace("filler", "changed"));
        let (old, new) = if forward { (old, new) } else { (new, old) };
        out.push_str(&format!("*** Update File: {}\n@@\n {}", path(file), line(file, 124)));
        out.push_str(&format!("-{old}+{new} {}", line(file, 126)));
    }
    out.push_str("*** End Patch\n");
    out
}

fn run(runtime: &tokio::runtime::Runtime, tool: &dyn Tool, ws: &Arc<Workspace>, args: &str) {
    let prepared = tool.prepare(args).unwrap();
    let ctx = ToolContext::new(ws.clone(), "bench".into(), "call");
    let output = runtime.block_on(tool.run(prepared, ctx));
    assert!(output.is_ok(), "{output:?}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let runs = if args.iter().any(|a| a == "--quick") { 10 } else { 40 };
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path());
    let ws = Arc::new(Workspace::new(dir.path()).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tracker = FileTracker::new();
    let apply = Typed::new(ApplyPatch::new(tracker.clone())).unwrap();
    let edit = Typed::new(EditFile::new(tracker.clone())).unwrap();

    let mut patch_ms = Vec::new();
    for n in 0..runs {
        let args = json!({ "patch": patch(n % 2 == 0) }).to_string();
        let started = Instant::now();
        run(&runtime, &apply, &ws, &args);
        patch_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    // The tree is back as generated (an even number of runs); edit_file needs each file read.
    for file in (0..FILES).step_by(FILES / CHANGED) {
        tracker.mark_read(&ws.canonical(&path(file)).unwrap()).unwrap();
    }
    let mut edit_ms = Vec::new();
    for n in 0..runs {
        let calls: Vec<String> = (0..FILES)
            .step_by(FILES / CHANGED)
            .map(|file| {
                let (old, new) = (line(file, 125), line(file, 125).replace("filler", "changed"));
                let (old, new) = if n % 2 == 0 { (old, new) } else { (new, old) };
                json!({ "path": path(file), "old_string": old, "new_string": new }).to_string()
            })
            .collect();
        let started = Instant::now();
        for args in &calls {
            run(&runtime, &edit, &ws, args);
        }
        edit_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    for (name, values) in [("apply_patch.ms", patch_ms), ("edit_file.ms", edit_ms)] {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let (median, min, max) = (sorted[sorted.len() / 2], sorted[0], sorted[sorted.len() - 1]);
        if json {
            println!(
                "{}",
                json!({"name": name, "unit": "ms", "median": median, "min": min, "max": max, "runs": sorted.len()})
            );
        } else {
            println!(
                "{name:<16} median {median:.2} ms (min {min:.2}, max {max:.2}, {} runs)",
                sorted.len()
            );
        }
    }
    println!("tree: {FILES} files, about 1 MB; {CHANGED} files changed per run");
}
