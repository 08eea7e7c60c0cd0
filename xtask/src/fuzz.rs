//! `cargo xtask fuzz`: the fuzz targets of `fuzz/` under AFL++ (docs/fuzzing.md).
//!
//! - `--list` names every target (the harness's own list);
//! - `TARGET --minutes N` builds the instrumented harness and runs afl-fuzz on the target for N
//!   minutes, resuming an earlier campaign's queue, and prints its executions, coverage and
//!   findings;
//! - `--cpu-minutes N TARGET...` runs each target in turn until afl-fuzz and its harness have
//!   used N minutes of CPU (read from `/proc`, [`cpu`]), or `--minutes M` of wall time if that
//!   comes first, on a copy of the harness made once, and appends each run's figures to
//!   `target/fuzz/afl/campaign/cpu.tsv`: the campaign of docs/BENCHMARKS.md, meant to run under
//!   `nice -n 19` on a shared machine;
//! - `--smoke [--seconds S]` runs every target for S seconds (3 unless given) on its corpus plus
//!   what AFL++ makes of it, and fails on any crash or hang: the CI step.
//!
//! The engine is Debian's AFL++ (`apt-get install afl++`), driving a harness built by the pinned
//! stable toolchain with LLVM's SanitizerCoverage (`-C passes=sancov-module`, trace-pc-guard) and
//! AFL++'s runtime `afl-compiler-rt.o` linked in: no nightly and no fuzzer built from source. The
//! workspace's crates are instrumented through `RUSTC_WORKSPACE_WRAPPER` (`fuzz/instrument.sh`),
//! which cargo applies to them alone and hashes into their file names: the dependencies are the
//! test build's, reused as they are, and the test build's own artifacts are left alone.

mod cpu;

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
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
    if let Some(cpu_minutes) = value("--cpu-minutes") {
        let cpu_minutes: f64 = cpu_minutes.parse().context("--cpu-minutes")?;
        // Without a wall limit a target that gets no CPU would never end: a day unless told.
        let wall_minutes: u64 =
            value("--minutes").unwrap_or("1440").parse().context("--minutes")?;
        let targets = positional(args, &["--cpu-minutes", "--minutes"]);
        if targets.is_empty() {
            bail!("usage: cargo xtask fuzz --cpu-minutes N [--minutes M] TARGET...");
        }
        return campaign(root, &targets, cpu_minutes * 60.0, wall_minutes * 60);
    }
    let Some(target) = args.first().filter(|arg| !arg.starts_with("--")) else {
        bail!(
            "usage: cargo xtask fuzz --list | --smoke [--seconds S] | TARGET --minutes N \
             | --cpu-minutes N [--minutes M] TARGET..."
        );
    };
    let minutes: u64 = value("--minutes").unwrap_or("1").parse().context("--minutes")?;
    let harness = build(root)?;
    let out = fuzz_dir(root).join("afl").join("campaign");
    let stats = afl(root, &harness, target, &out, Limit::wall(minutes * 60), true)?;
    println!("{}", stats.line(target));
    if stats.crashes + stats.hangs > 0 {
        bail!("{target}: findings in {}", out.join(target).join("default").display());
    }
    Ok(())
}

/// The arguments that are neither flags nor the values of `valued` flags.
fn positional(args: &[String], valued: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    let mut skip = false;
    for arg in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if valued.contains(&arg.as_str()) {
            skip = true;
        } else if !arg.starts_with("--") {
            names.push(arg.clone());
        }
    }
    names
}

/// Each of `targets` in turn until it has used `cpu_seconds` of CPU or `wall_seconds` have
/// passed, resuming the queue of earlier campaigns; every run's figures are printed and appended
/// to `cpu.tsv`. Fails at the end if any run found something.
fn campaign(
    root: &Path,
    targets: &[String],
    cpu_seconds: f64,
    wall_seconds: u64,
) -> anyhow::Result<()> {
    let built = build(root)?;
    let out = fuzz_dir(root).join("afl").join("campaign");
    // A copy of its own, so that a test build replacing `target/debug/agent-fuzz` while the
    // campaign runs (for hours, under nice) changes nothing under it.
    let harness = out.join(format!("agent-fuzz.{}", std::process::id()));
    std::fs::create_dir_all(&out)?;
    std::fs::copy(&built, &harness).context("copying the harness")?;
    let mut found = Vec::new();
    for target in targets {
        let before = Stats::read(&out.join(target).join("default").join("fuzzer_stats")).ok();
        let limit = Limit { wall_seconds, cpu_seconds: Some(cpu_seconds) };
        let stats = afl(root, &harness, target, &out, limit, true)?;
        let hangs = out.join(target).join("default").join("hangs");
        let (replayed, hanging) = replay_hangs(&harness, target, &hangs)?;
        println!("{}  (of {replayed} saved hangs, {hanging} hang again alone)", stats.line(target));
        // A resumed afl-fuzz carries the earlier runs' counts on; this run's are the difference.
        let earlier = before.unwrap_or_default();
        let record = format!(
            "{}\t{target}\t{:.1}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{hanging}\n",
            stats.last_update,
            stats.cpu_seconds / 60.0,
            stats.wall_seconds,
            stats.execs.saturating_sub(earlier.execs),
            stats.execs,
            stats.edges,
            stats.total_edges,
            stats.corpus,
            stats.crashes,
            stats.hangs,
        );
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out.join("cpu.tsv"))
            .context("cpu.tsv")?;
        file.write_all(record.as_bytes())?;
        // A saved hang that finishes in time when replayed alone was a run starved of CPU (the
        // time limit is wall time, and a campaign runs at nice 19), not a finding.
        if stats.crashes > earlier.crashes || hanging > 0 {
            found.push(target.clone());
        }
    }
    let _ = std::fs::remove_file(&harness);
    if !found.is_empty() {
        bail!("findings in {found:?}, under {}", out.display());
    }
    Ok(())
}

/// Replays every saved hang of `dir` through `harness` alone (`afl-showmap`, the same time
/// limit): how many there are, and how many still exceed the limit or crash.
fn replay_hangs(harness: &Path, name: &str, dir: &Path) -> anyhow::Result<(usize, usize)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok((0, 0)) };
    let mut replayed = 0;
    let mut hanging = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("id:") {
            continue;
        }
        let input = std::fs::File::open(&path)?;
        let status = Command::new("afl-showmap")
            .args(["-q", "-t", TIMEOUT_MS, "-m", "none", "-o", "/dev/null", "--"])
            .arg(harness)
            .arg(name)
            .env("AFL_NO_AFFINITY", "1")
            .stdin(input)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .context("running afl-showmap")?;
        replayed += 1;
        if !status.success() {
            hanging += 1;
        }
    }
    Ok((replayed, hanging))
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
        let stats = afl(root, &harness, name, &out, Limit::wall(seconds), false)?;
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

/// When a run ends: after `wall_seconds` (afl-fuzz's own `-V`), or once the process tree has
/// used `cpu_seconds` of CPU.
#[derive(Debug, Clone, Copy)]
struct Limit {
    wall_seconds: u64,
    cpu_seconds: Option<f64>,
}

impl Limit {
    fn wall(seconds: u64) -> Self {
        Self { wall_seconds: seconds, cpu_seconds: None }
    }
}

/// How often a CPU-limited run reads `/proc`: the overshoot is at most this much CPU time.
const CPU_POLL: Duration = Duration::from_secs(2);

/// Runs afl-fuzz on `name` within `limit` with its output under `out/<name>`; `resume`
/// continues the queue an earlier run left there.
fn afl(
    root: &Path,
    harness: &Path,
    name: &str,
    out: &Path,
    limit: Limit,
    resume: bool,
) -> anyhow::Result<Stats> {
    let corpus = root.join("fuzz").join("corpus").join(name);
    if !corpus.is_dir() {
        bail!("{name}: no corpus at {}", corpus.display());
    }
    let dir = out.join(name);
    std::fs::create_dir_all(&dir)?;
    let log = std::fs::File::create(dir.join("afl.log"))?;
    let started = Instant::now();
    let mut child = Command::new("afl-fuzz")
        .arg("-i")
        .arg(&corpus)
        .arg("-o")
        .arg(&dir)
        .args(["-t", TIMEOUT_MS, "-m", "none", "-V", &limit.wall_seconds.to_string(), "--"])
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
        .spawn()
        .context("running afl-fuzz")?;
    let mut cpu_seconds = 0.0;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        // The tree's time just before it is gone is the run's (afl-fuzz's own end, after `-V`,
        // takes a fraction of a second more).
        cpu_seconds = cpu::tree_seconds(child.id()).unwrap_or(cpu_seconds);
        if limit.cpu_seconds.is_some_and(|most| cpu_seconds >= most) {
            // SIGINT: afl-fuzz writes its final stats and stops its fork server.
            let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
            break child.wait()?;
        }
        std::thread::sleep(if limit.cpu_seconds.is_some() {
            CPU_POLL
        } else {
            Duration::from_millis(200)
        });
    };
    if !status.success() {
        bail!("afl-fuzz failed on {name}; its log is {}", dir.join("afl.log").display());
    }
    let mut stats = Stats::read(&dir.join("default").join("fuzzer_stats"))?;
    stats.cpu_seconds = cpu_seconds;
    stats.wall_seconds = started.elapsed().as_secs();
    Ok(stats)
}

/// What `fuzzer_stats` says of a run.
#[derive(Debug, Default)]
struct Stats {
    /// The CPU time of afl-fuzz and the harness, as [`cpu::tree_seconds`] measured it.
    cpu_seconds: f64,
    /// The wall time of this run (`run_time` of a resumed run counts the earlier ones too).
    wall_seconds: u64,
    last_update: u64,
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
            cpu_seconds: 0.0,
            wall_seconds: 0,
            last_update: number("last_update"),
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
            "== xtask fuzz: {name:<17} {:>5} s ({:.1} CPU-min) {:>10} execs ({:.0}/s)  edges {}/{}  \
             corpus {}  crashes {}  hangs {}",
            self.run_seconds,
            self.cpu_seconds / 60.0,
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
