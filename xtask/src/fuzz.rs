//! `cargo xtask fuzz`: the fuzz targets of `fuzz/` under AFL++ (docs/fuzzing.md).
//!
//! - `--list` names every target (the harness's own list);
//! - `TARGET --minutes N` builds the instrumented harness and runs afl-fuzz on the target for N
//!   minutes, resuming an earlier campaign's queue, and prints its executions, coverage and
//!   findings;
//! - `--smoke [--seconds S]` runs every target for S seconds (3 unless given) on its corpus plus
//!   what AFL++ makes of it, and fails on any crash or hang: the CI step.
//!
//! The engine is Debian's AFL++ (`apt-get install afl++`), driving a harness built by the pinned
//! stable toolchain with LLVM's SanitizerCoverage (`-C passes=sancov-module`, trace-pc-guard) and
//! AFL++'s runtime `afl-compiler-rt.o` linked in: no nightly and no fuzzer built from source. The
//! workspace's crates are instrumented through `RUSTC_WORKSPACE_WRAPPER` (`fuzz/instrument.sh`),
//! which cargo applies to them alone and hashes into their file names: the dependencies are the
//! test build's, reused as they are, and the test build's own artifacts are left alone.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{Context, bail};

/// AFL++'s runtime for LLVM-instrumented programs, as Debian's `afl++` package installs it
/// (`fuzz/instrument.sh` links it).
const AFL_RUNTIME: &str = "/usr/lib/afl/afl-compiler-rt.o";

/// The per-input time limit, in milliseconds: far above any target's usual microseconds, so only
/// a real hang counts.
const TIMEOUT_MS: &str = "2000";

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let flag = |name: &str| args.iter().any(|arg| arg == name);
    let value = |name: &str| {
        args.iter().position(|arg| arg == name).and_then(|at| args.get(at + 1)).map(String::as_str)
    };
    if flag("--list") {
        return list(root);
    }
    if flag("--smoke") {
        let seconds: u64 = value("--seconds").unwrap_or("3").parse().context("--seconds")?;
        return smoke(root, seconds);
    }
    let Some(target) = args.first().filter(|arg| !arg.starts_with("--")) else {
        bail!("usage: cargo xtask fuzz --list | --smoke [--seconds S] | TARGET --minutes N");
    };
    let minutes: u64 = value("--minutes").unwrap_or("1").parse().context("--minutes")?;
    let harness = build(root)?;
    let out = fuzz_dir(root).join("afl").join("campaign");
    let stats = afl(root, &harness, target, &out, minutes * 60, true)?;
    println!("{}", stats.line(target));
    if stats.crashes + stats.hangs > 0 {
        bail!("{target}: findings in {}", out.join(target).join("default").display());
    }
    Ok(())
}

/// `cargo run -p agent-fuzz -- --list` (an ordinary debug build, the one the tests make).
fn list(root: &Path) -> anyhow::Result<()> {
    let status = Command::new(cargo())
        .args(["run", "--quiet", "-p", "agent-fuzz", "--", "--list"])
        .current_dir(root)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("listing the fuzz targets failed");
    }
    Ok(())
}

/// Every target for `seconds` each; fails on the first crash or hang.
fn smoke(root: &Path, seconds: u64) -> anyhow::Result<()> {
    let harness = build(root)?;
    let names = target_names(&harness)?;
    let out = fuzz_dir(root).join("afl").join("smoke");
    // A fresh run each time: the smoke checks the corpus and a few new inputs, not a campaign.
    let _ = std::fs::remove_dir_all(&out);
    for name in &names {
        let stats = afl(root, &harness, name, &out, seconds, false)?;
        println!("{}", stats.line(name));
        if stats.crashes + stats.hangs > 0 {
            bail!("{name}: findings in {}", out.join(name).join("default").display());
        }
    }
    Ok(())
}

/// Builds the harness with coverage and AFL++'s runtime; returns its path.
fn build(root: &Path) -> anyhow::Result<PathBuf> {
    if !Path::new(AFL_RUNTIME).is_file() || which("afl-fuzz").is_none() {
        bail!("AFL++ is not installed (apt-get install afl++): {AFL_RUNTIME} and afl-fuzz");
    }
    let wrapper = root.join("fuzz").join("instrument.sh");
    let started = Instant::now();
    let status = Command::new(cargo())
        .args(["build", "--quiet", "-p", "agent-fuzz", "--features", "afl"])
        .env("RUSTC_WORKSPACE_WRAPPER", &wrapper)
        .current_dir(root)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("building the instrumented harness failed");
    }
    println!(
        "== xtask fuzz: instrumented harness built in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(crate::debug_dir(root).join("agent-fuzz"))
}

/// The targets the harness lists, by name.
fn target_names(harness: &Path) -> anyhow::Result<Vec<String>> {
    let output = Command::new(harness).arg("--list").output().context("running the harness")?;
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect())
}

/// Runs afl-fuzz on `name` for `seconds` with its output under `out/<name>`; `resume` continues
/// the queue an earlier run left there.
fn afl(
    root: &Path,
    harness: &Path,
    name: &str,
    out: &Path,
    seconds: u64,
    resume: bool,
) -> anyhow::Result<Stats> {
    let corpus = root.join("fuzz").join("corpus").join(name);
    if !corpus.is_dir() {
        bail!("{name}: no corpus at {}", corpus.display());
    }
    let dir = out.join(name);
    std::fs::create_dir_all(&dir)?;
    let log = std::fs::File::create(dir.join("afl.log"))?;
    let status = Command::new("afl-fuzz")
        .arg("-i")
        .arg(&corpus)
        .arg("-o")
        .arg(&dir)
        .args(["-t", TIMEOUT_MS, "-m", "none", "-V", &seconds.to_string(), "--"])
        .arg(harness)
        .arg(name)
        // No screen, no CPU pinning on a shared machine, no demands on the kernel's core dump
        // and frequency settings (AFL++ would refuse to start otherwise).
        .env("AFL_NO_UI", "1")
        .env("AFL_NO_AFFINITY", "1")
        .env("AFL_SKIP_CPUFREQ", "1")
        .env("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1")
        .env("AFL_AUTORESUME", if resume { "1" } else { "0" })
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .context("running afl-fuzz")?;
    if !status.success() {
        bail!("afl-fuzz failed on {name}; its log is {}", dir.join("afl.log").display());
    }
    Stats::read(&dir.join("default").join("fuzzer_stats"))
}

/// What `fuzzer_stats` says of a run.
#[derive(Debug, Default)]
struct Stats {
    run_seconds: u64,
    execs: u64,
    execs_per_sec: f64,
    edges: u64,
    total_edges: u64,
    corpus: u64,
    crashes: u64,
    hangs: u64,
}

impl Stats {
    fn read(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("afl-fuzz left no {}", path.display()))?;
        let field = |key: &str| {
            text.lines()
                .find_map(|line| line.split_once(':').filter(|(k, _)| k.trim() == key))
                .map(|(_, value)| value.trim().to_owned())
                .unwrap_or_default()
        };
        let number = |key: &str| field(key).parse::<u64>().unwrap_or(0);
        Ok(Self {
            run_seconds: number("run_time"),
            execs: number("execs_done"),
            execs_per_sec: field("execs_per_sec").parse().unwrap_or(0.0),
            edges: number("edges_found"),
            total_edges: number("total_edges"),
            corpus: number("corpus_count"),
            crashes: number("saved_crashes"),
            hangs: number("saved_hangs"),
        })
    }

    fn line(&self, name: &str) -> String {
        format!(
            "== xtask fuzz: {name:<17} {:>5} s {:>10} execs ({:.0}/s)  edges {}/{}  corpus {}  \
             crashes {}  hangs {}",
            self.run_seconds,
            self.execs,
            self.execs_per_sec,
            self.edges,
            self.total_edges,
            self.corpus,
            self.crashes,
            self.hangs
        )
    }
}

fn fuzz_dir(root: &Path) -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target.join("fuzz")
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
}
