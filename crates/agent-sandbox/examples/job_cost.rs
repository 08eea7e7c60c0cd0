//! What background jobs cost: how long from starting a job to reading its first output, and how
//! long from the end of a job's last process to its notice being ready.
//!
//! `job.start_to_first_output`: `Jobs::start` of `echo ready` under workspace-write until
//! `Jobs::read` returns its output. `job.notice_latency`: the job's last command is `date +%s%N`
//! (exec'd by bash, so its exit is the group's exit, a moment after the time it prints) until the
//! table reports the job finished, which is when its notice is ready.
//!
//! Run: `cargo run --release -p agent-sandbox --example job_cost [-- <runs>] [--json] [--quick]`.
//! With `--json` it prints `{"name","unit","median","min","max","runs"}` lines for
//! `cargo xtask bench`. A benchmark, not a test.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_sandbox::{
    jobs::{JobState, Jobs, JobsConfig},
    process::ProcessSpec,
    sandbox::SandboxConfig,
};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let quick = args.iter().any(|arg| arg == "--quick");
    let runs: usize =
        args.iter().find_map(|arg| arg.parse().ok()).unwrap_or(if quick { 20 } else { 100 });
    let workspace = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(workspace.path());
    // A session keeps one temp dir; a fresh one per command would add a mkdir and an rmdir.
    let temp = tempfile::tempdir().unwrap();
    config.temp_dir = Some(temp.path().to_path_buf());
    let jobs = Jobs::new(JobsConfig {
        dir: Some(workspace.path().join(".jobs")),
        ..JobsConfig::default()
    });

    let (mut first_output, mut notice) = (Vec::new(), Vec::new());
    for round in 0..runs + 3 {
        let started = Instant::now();
        let id =
            jobs.start("echo ready", &ProcessSpec::bash("echo ready"), &config, false).unwrap().id;
        let read = jobs.read(id, Duration::from_secs(10)).await.unwrap();
        assert_eq!(read.text, "ready\n");
        let to_output = started.elapsed().as_secs_f64() * 1e3;
        jobs.wait(id, Duration::from_secs(10)).await;

        let script = "echo start; exec date +%s%N";
        let id = jobs.start(script, &ProcessSpec::bash(script), &config, false).unwrap().id;
        let info = jobs.wait(id, Duration::from_secs(10)).await.unwrap();
        let ready = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
        assert!(matches!(info.state, JobState::Finished(_)));
        let text = std::fs::read_to_string(&info.output_path).unwrap();
        let exited: u128 = text.lines().nth(1).unwrap().trim().parse().unwrap();
        let to_notice = (ready.saturating_sub(exited)) as f64 / 1e6;
        // The first job's notice is pending too unless its read already saw it end.
        assert!(jobs.take_notices().iter().any(|notice| notice.id == id));
        // The first rounds warm up the page cache and the allocator.
        if round >= 3 {
            first_output.push(to_output);
            notice.push(to_notice);
        }
    }
    for (name, values) in
        [("job.start_to_first_output", first_output), ("job.notice_latency", notice)]
    {
        let (median, min, max) = stats(values);
        if json {
            let line = serde_json::json!({"name": name, "unit": "ms", "median": median, "min": min, "max": max, "runs": runs});
            println!("{line}");
        } else {
            println!(
                "{name:<28} {median:>7.3} ms median (min {min:.3}, max {max:.3}, {runs} runs)"
            );
        }
    }
}

/// Median, min and max.
fn stats(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}
