//! The `agent_batch` group: `agent_batch.tasks_per_min.jobs{1,2,4}` and
//! `agent_batch.overhead_per_task_ms`: `agent batch` over
//! tasks of two turns each (a sandboxed `echo`, then an answer) against the scripted server, at
//! `--jobs 1`, 2 and 4, and in the same run a bare loop of the same `agent exec --json` runs one
//! after another in one directory. The overhead is what the batch adds per task at `--jobs 1`
//! (a copy of the workspace with its baseline commit, the patch, the journal and result files).

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{Bins, Figure, Options, process::Server, progress, target_dir};

/// The workspace each task starts from: a few small files, as a small repository has.
const FILES: usize = 20;

/// Adds the batch figures.
pub(crate) fn measure(
    bins: &Bins,
    options: &Options,
    figures: &mut Vec<Figure>,
    scratch: &Path,
) -> anyhow::Result<()> {
    let tasks = if options.quick { 8 } else { 24 };
    let rounds = if options.quick { 1 } else { 3 };
    progress(&format!("batch: {tasks} tasks at --jobs 1, 2, 4 and as a bare exec loop…"));
    let base = scratch.join("base");
    std::fs::create_dir_all(&base)?;
    for i in 0..FILES {
        std::fs::write(base.join(format!("file{i}.txt")), "some text\n".repeat(50))?;
    }
    let mut lines = String::new();
    let mut standing = Vec::new();
    for i in 0..tasks {
        let call = json!({"call_id": format!("call_t{i}x"), "name": "bash", "arguments": {"command": "echo hi"}});
        standing.push(
            json!({"when_body_contains": format!("call_t{i}x"), "turn": {"text": "It said hi."}}),
        );
        standing.push(
            json!({"when_body_contains": format!("task-t{i}:"), "turn": {"tool_calls": [call]}}),
        );
        let task = json!({"id": format!("t{i}"), "prompt": format!("task-t{i}: say hi"), "workspace": "base", "allow": ["Bash(echo *)"]});
        lines.push_str(&format!("{task}\n"));
    }
    // Later steps first: the first matching standing answer wins.
    standing.sort_by_key(|answer| {
        !answer["when_body_contains"].as_str().unwrap_or("").starts_with("call_")
    });
    std::fs::write(scratch.join("TASKS.jsonl"), lines)?;
    let server = Server::start_with(bins, scratch, &json!([]), &Value::Array(standing))?;
    let mut bare = Vec::new();
    let mut by_jobs: [Vec<f64>; 3] = Default::default();
    for _ in 0..rounds {
        bare.push(bare_loop(bins, &server.url, scratch, tasks)?);
        for (slot, jobs) in [1, 2, 4].into_iter().enumerate() {
            by_jobs[slot].push(batch(bins, &server.url, scratch, jobs, tasks)?);
        }
    }
    server.finish()?;
    let per_min = |seconds: &[f64]| seconds.iter().map(|s| tasks as f64 * 60.0 / s).collect();
    for (slot, jobs) in [1, 2, 4].into_iter().enumerate() {
        figures.push(Figure::of(
            &format!("agent_batch.tasks_per_min.jobs{jobs}"),
            "/min",
            per_min(&by_jobs[slot]),
        ));
    }
    figures.push(Figure::of("agent_batch.bare_exec_per_min", "/min", per_min(&bare)));
    let overhead =
        by_jobs[0].iter().zip(&bare).map(|(batch, bare)| (batch - bare) * 1000.0 / tasks as f64);
    figures.push(Figure::of("agent_batch.overhead_per_task_ms", "ms", overhead.collect()));
    Ok(())
}

/// One `agent batch` of every task at `--jobs jobs`, in seconds; every task must complete.
fn batch(bins: &Bins, url: &str, scratch: &Path, jobs: usize, tasks: usize) -> anyhow::Result<f64> {
    let out = scratch.join(format!("out-{jobs}"));
    let _ = std::fs::remove_dir_all(&out);
    let started = Instant::now();
    let output = agent(bins, url, scratch)
        .args(["batch", "TASKS.jsonl", "--jobs", &jobs.to_string(), "--out"])
        .arg(&out)
        .output()
        .context("running agent batch")?;
    let took = started.elapsed().as_secs_f64();
    let results = std::fs::read_to_string(out.join("RESULTS.jsonl")).unwrap_or_default();
    let completed = results.lines().filter(|line| line.contains(r#""status":"completed""#)).count();
    if !output.status.success() || completed != tasks {
        bail!(
            "agent batch: {completed} of {tasks} completed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(took)
}

/// The same tasks as `agent exec --json` runs one after another in one directory, in seconds.
fn bare_loop(bins: &Bins, url: &str, scratch: &Path, tasks: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    for i in 0..tasks {
        let output = agent(bins, url, scratch)
            .args(["--allow", "Bash(echo *)", "--workspace"])
            .arg(scratch.join("base"))
            .args(["exec", "--json", &format!("task-t{i}: say hi")])
            .output()
            .context("running agent exec")?;
        let text = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || !text.contains("run.completed") {
            bail!("agent exec failed: {}", String::from_utf8_lossy(&output.stderr));
        }
    }
    Ok(started.elapsed().as_secs_f64())
}

fn agent(bins: &Bins, url: &str, scratch: &Path) -> Command {
    let mut command = Command::new(&bins.agent);
    command
        .args(["--base-url", url, "--model", "scripted", "--api", "chat"])
        .current_dir(scratch)
        .env("AGENT_DATA_DIR", scratch.join("data"))
        .env("HOME", scratch)
        .env("XDG_CONFIG_HOME", scratch.join(".config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENT_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// `--debug`: the debug `agent` and scripted server (two `cargo build`s, so neither's features
/// change the other's), for a look at the batch figures where a release build does not fit.
pub(crate) fn debug_bins(root: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    progress("building the debug agent and scripted server…");
    for args in [
        &["build", "--quiet", "-p", "agent-cli"][..],
        &[
            "build",
            "--quiet",
            "-p",
            "agent-model",
            "--features",
            "scripted-server",
            "--bin",
            "scripted-server",
        ],
    ] {
        let status = Command::new(&cargo).args(args).current_dir(root).status()?;
        if !status.success() {
            bail!("cargo {} failed", args.join(" "));
        }
    }
    let debug = target_dir(root).join("debug");
    Ok((debug.join("agent"), debug.join("scripted-server")))
}
