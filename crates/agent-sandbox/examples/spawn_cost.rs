//! What the sandbox adds to starting a process: spawns `bash -c true` unsandboxed (plain
//! `tokio::process::Command`) and through `agent_sandbox::process::run` under each policy, one
//! unsandboxed and one sandboxed spawn in turn, so both see the same machine load. The last row
//! (`sandbox.overhead.exec_allowlist`) is what the execute allow-list of a command approved as
//! read-only adds to a workspace-write spawn.
//!
//! Run: `cargo run --release -p agent-sandbox --example spawn_cost [-- <runs>] [--json] [--quick]`.
//! With `--json` it prints the added milliseconds per policy (the median, min and max of the
//! paired differences) as `{"name","unit","median","min","max","runs"}` lines for
//! `cargo xtask bench`. A benchmark, not a test.

// The unsandboxed baseline spawns a plain `Command` on purpose.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::time::Instant;

use agent_sandbox::{
    process::{self, ProcessSpec},
    sandbox::{SandboxConfig, SandboxPolicy},
};
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let quick = args.iter().any(|arg| arg == "--quick");
    let runs: usize =
        args.iter().find_map(|arg| arg.parse().ok()).unwrap_or(if quick { 40 } else { 200 });
    let workspace = tempfile::tempdir().unwrap();

    // The last rows run in a repository, where `.git` gets its read-only mount namespace, and in a
    // workspace holding `.env`, which gets covered. The home's credential locations are covered
    // in every restricted row when they exist on the machine.
    let repository = tempfile::tempdir().unwrap();
    std::fs::create_dir(repository.path().join(".git")).unwrap();
    let with_secret = tempfile::tempdir().unwrap();
    std::fs::write(with_secret.path().join(".env"), "API_TOKEN=x\n").unwrap();
    let rows = SandboxPolicy::ALL
        .into_iter()
        .map(|policy| (policy, workspace.path(), policy.to_string()))
        .chain([
            (SandboxPolicy::WorkspaceWrite, repository.path(), "workspace-write + .git".to_owned()),
            (
                SandboxPolicy::WorkspaceWrite,
                with_secret.path(),
                "workspace-write + .env".to_owned(),
            ),
        ]);
    if !json {
        println!("spawn `bash -c true`, {runs} pairs per policy; milliseconds per spawn");
    }
    for (policy, root, label) in rows {
        let mut config = SandboxConfig::new(root).with_policy(policy);
        // A session keeps one temp dir; a fresh one per command would add a mkdir and an rmdir.
        let temp = tempfile::tempdir().unwrap();
        config.temp_dir = Some(temp.path().to_path_buf());
        let (mut plain, mut sandboxed, mut added) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..runs + 5 {
            let started = Instant::now();
            let status =
                tokio::process::Command::new("bash").args(["-c", "true"]).status().await.unwrap();
            assert!(status.success());
            let base = started.elapsed().as_secs_f64() * 1e3;
            let started = Instant::now();
            let out =
                process::run(ProcessSpec::bash("true"), &config, CancellationToken::new(), None)
                    .await
                    .unwrap();
            assert!(out.success(), "{}", out.output);
            let under = started.elapsed().as_secs_f64() * 1e3;
            // The first few pairs warm up the page cache and the allocator.
            if round >= 5 {
                plain.push(base);
                sandboxed.push(under);
                added.push(under - base);
            }
        }
        let (plain, sandboxed, added) = (stats(plain), stats(sandboxed), stats(added));
        if json {
            let name = match label.as_str() {
                "read-only" => "sandbox.overhead.read_only",
                "workspace-write" => "sandbox.overhead.workspace_write",
                "danger-full-access" => "sandbox.overhead.full_access",
                "workspace-write + .git" => "sandbox.overhead.workspace_write_git",
                _ => "sandbox.overhead.workspace_write_secrets",
            };
            let line = serde_json::json!({"name": name, "unit": "ms", "median": added.0, "min": added.1, "max": added.2, "runs": runs});
            println!("{line}");
        } else {
            println!(
                "{:<28} unsandboxed {:>6.3} ms, sandboxed {:>6.3} ms: +{:.3} ms median (paired min {:+.3}, max {:+.3})",
                label, plain.0, sandboxed.0, added.0, added.1, added.2
            );
        }
    }

    // What the execute allow-list of a command approved as read-only adds: resolving its programs
    // on PATH (here `ls`, as for `ls`), and one Landlock rule per file. Paired against the same
    // spawn under workspace-write without the list.
    let mut config = SandboxConfig::new(workspace.path());
    let temp = tempfile::tempdir().unwrap();
    config.temp_dir = Some(temp.path().to_path_buf());
    let mut listed = config.clone();
    listed.exec_allowlist = Some(vec!["ls".to_owned()]);
    let mut added = Vec::new();
    for round in 0..runs + 5 {
        let mut times = [0.0; 2];
        for (time, config) in times.iter_mut().zip([&config, &listed]) {
            let started = Instant::now();
            let out =
                process::run(ProcessSpec::bash("true"), config, CancellationToken::new(), None)
                    .await
                    .unwrap();
            assert!(out.success(), "{}", out.output);
            *time = started.elapsed().as_secs_f64() * 1e3;
        }
        if round >= 5 {
            added.push(times[1] - times[0]);
        }
    }
    let added = stats(added);
    if json {
        let line = serde_json::json!({"name": "sandbox.overhead.exec_allowlist", "unit": "ms", "median": added.0, "min": added.1, "max": added.2, "runs": runs});
        println!("{line}");
    } else {
        println!(
            "{:<28} {:+.3} ms median over workspace-write (paired min {:+.3}, max {:+.3})",
            "exec allow-list (`ls`)", added.0, added.1, added.2
        );
    }
}

/// Median, min and max.
fn stats(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}
