//! What the sandbox adds to starting a process: spawns `bash -c true` many times unsandboxed
//! (plain `tokio::process::Command`) and through `agent_exec::process::run` under each policy,
//! and prints the median and mean wall time per spawn.
//!
//! Run: `cargo run --release -p agent-exec --example spawn_cost [-- <runs>]`. A benchmark, not a
//! test: `cargo xtask bench` can call it.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agent_exec::{
    process::{self, ProcessSpec},
    sandbox::{SandboxConfig, SandboxPolicy},
};
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let workspace = tempfile::tempdir().unwrap();

    let baseline = measure(runs, || async {
        let status =
            tokio::process::Command::new("bash").args(["-c", "true"]).status().await.unwrap();
        assert!(status.success());
    })
    .await;
    println!("spawn `bash -c true`, {runs} runs each, median / mean per spawn");
    println!(
        "{:<34} {:>8.3} ms {:>8.3} ms",
        "unsandboxed (tokio Command)",
        ms(baseline.0),
        ms(baseline.1)
    );

    // The last row runs in a repository, where `.git` gets its read-only mount namespace.
    let repository = tempfile::tempdir().unwrap();
    std::fs::create_dir(repository.path().join(".git")).unwrap();
    let rows = SandboxPolicy::ALL
        .into_iter()
        .map(|policy| (policy, workspace.path(), policy.to_string()))
        .chain([(
            SandboxPolicy::WorkspaceWrite,
            repository.path(),
            "workspace-write + .git".to_owned(),
        )]);
    for (policy, root, label) in rows {
        let mut config = SandboxConfig::new(root).with_policy(policy);
        // A session keeps one temp dir; a fresh one per command would add a mkdir and an rmdir.
        let temp = tempfile::tempdir().unwrap();
        config.temp_dir = Some(temp.path().to_path_buf());
        let result = measure(runs, || {
            let config = config.clone();
            async move {
                let out = process::run(
                    ProcessSpec::bash("true"),
                    &config,
                    CancellationToken::new(),
                    None,
                )
                .await
                .unwrap();
                assert!(out.success(), "{}", out.output);
            }
        })
        .await;
        println!(
            "{:<34} {:>8.3} ms {:>8.3} ms   (+{:.3} ms median)",
            format!("process::run {label}"),
            ms(result.0),
            ms(result.1),
            ms(result.0) - ms(baseline.0)
        );
    }
}

/// Median and mean of `runs` timed calls, after a few warm-up calls.
async fn measure<F, Fut>(runs: usize, mut call: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..5 {
        call().await;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        call().await;
        times.push(started.elapsed());
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / runs.max(1) as u32;
    (times[runs / 2], mean)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
