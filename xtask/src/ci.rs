//! `cargo xtask ci`: every check CI relies on, in the order that fails fastest.
//!
//! `.ci/run` calls this and nothing else, and the README names it as the test command, so what the
//! docs promise (formatted, clippy-clean, tested, documented, tidy, licensed) is what CI checks.
//! The tests run last so that their `test result:` lines close the log.
//!
//! `STEPS` is the one list of what CI runs: `cargo xtask ci --list` prints it, and the README and
//! docs/ARCHITECTURE.md quote that output in a block tidy compares with it (`tidy/docs.rs`).

mod background;
mod clock;

use std::{path::Path, process::Command};

use anyhow::{Context, bail};

use self::{
    background::Job,
    clock::{Clock, Spent},
};
use crate::tidy;

/// One check: a cargo command, a task that runs inside xtask, or a command started in the
/// background when the run begins.
enum Step {
    /// `cargo <args>` with extra environment.
    Cargo(&'static [&'static str], &'static [(&'static str, &'static str)]),
    /// A task of this crate, run in-process, and what it runs in the words `--list` prints.
    Task(fn(&Path) -> anyhow::Result<()>, &'static str),
    /// A command (program and arguments, extra environment) that mostly downloads, or compiles
    /// something the Rust build does not need: it starts with the run, so its network waits and
    /// its compile fill the gaps of the Rust build, and its step waits for it to end. Skipped when
    /// the function says there is nothing to do.
    Background(&'static [&'static str], &'static [(&'static str, &'static str)], fn() -> bool),
}

/// The checks, cheapest first (the background ones are joined where their result is needed);
/// each one stops the run when it fails.
const STEPS: &[(&str, Step)] = &[
    // Every crate the steps need, downloaded once up front: tidy reads the dependency tree with
    // `cargo tree --offline`, which fails on a clean machine before anything was fetched.
    ("fetch", Step::Cargo(&["fetch"], &[])),
    ("fmt", Step::Cargo(&["fmt", "--all", "--", "--check"], &[])),
    ("tidy", Step::Task(run_tidy, "cargo xtask tidy")),
    (
        "clippy",
        Step::Cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[]),
    ),
    ("doc", Step::Cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])),
    // One debug build with the tests' features for the demo, the real-server tier and the tests:
    // `cargo build -p agent-cli` alone resolves features without the dev-dependencies (tokio's
    // `signal`, the SDK's `testing`, …), which compiled tokio, hyper, reqwest, rmcp, the
    // OpenTelemetry crates and every workspace crate a second time.
    ("build", Step::Cargo(&["test", "--workspace", "--no-run"], &[])),
    // A fresh machine has no cargo-deny: the pinned version is built from crates.io in the
    // background while the workspace compiles (see `DENY_INSTALL_ENV` for the lighter profile).
    ("deny-install", Step::Background(DENY_INSTALL, DENY_INSTALL_ENV, deny_missing)),
    ("deny", Step::Task(run_deny, DENY_CHECK)),
    // The offline demos drive the real binary through the real sandbox over loopback HTTP, so the
    // CLI-to-sandbox path ("denied by the sandbox") is checked too: about two seconds.
    ("demo", Step::Task(run_demo, "cargo xtask demo --no-build")),
    // The real-server tier: the agent binary against real third-party servers and a real model.
    // Its setup (a llama.cpp build, two Python venvs, the model) is cached per machine outside the
    // work tree (`$AGENT_REALMODEL_CACHE`); a clean machine builds it beside the Rust build.
    ("realmodel-setup", Step::Background(REALMODEL_SETUP, &[], always)),
    ("realmodel", Step::Task(run_realmodel, "cargo xtask realmodel --no-build")),
    // The real MCP peers the MCP tests talk to, pinned in `scripts/mcp/` and `scripts/peers/`
    // (npm and pip): downloads, so they too run beside the build.
    ("mcp-peers", Step::Background(&["bash", "scripts/mcp/setup.sh"], &[], always)),
    // A test that cannot run fails here rather than skipping: the checks CI relies on are the ones
    // that ran (`crates/agent-test-support`).
    ("test", Step::Cargo(&["test", "--workspace"], &[("AGENT_NO_SKIP", "1")])),
    // A short soak (docs/BENCHMARKS.md, "Soak"): 100 sessions through two long-running
    // `agent acp` processes with every leak check, about 40 s; the 2,000-session run is
    // `cargo xtask soak`, outside ci.
    ("soak", Step::Task(run_soak, "cargo xtask soak --sessions 100 --every 40 --no-build")),
    // Every fuzz target for a few seconds under AFL++ (the `afl++` apt package), on its corpus and
    // the inputs AFL++ derives from it: the instrumented build, then 3 s a target (docs/fuzzing.md).
    ("fuzz", Step::Task(run_fuzz_smoke, "cargo xtask fuzz --smoke")),
];

/// The real-server tier's setup script.
const REALMODEL_SETUP: &[&str] = &["bash", "scripts/realmodel/realmodel.sh", "setup"];

/// The cargo-deny check CI runs. Advisories are left out: they need the RustSec database from the
/// network, which CI does not have.
const DENY_CHECK: &str = "cargo deny --log-level error check licenses bans sources";

/// The pinned cargo-deny; bump it deliberately, since a new one may read deny.toml differently
/// (README.md names the version too).
const CARGO_DENY_VERSION: &str = "0.20.2";

/// How a machine without cargo-deny gets it (keep the version in step with `CARGO_DENY_VERSION`).
const DENY_INSTALL: &[&str] =
    &["cargo", "install", "--locked", "--quiet", "cargo-deny", "--version", "0.20.2"];

/// cargo-deny's own release profile is whole-program LTO in one codegen unit, which is most of its
/// build on two cores; CI runs it once over a few hundred crates, where speed does not matter, so
/// it is built without LTO in parallel codegen units (cargo reads these over the package's own
/// profile).
const DENY_INSTALL_ENV: &[(&str, &str)] = &[
    ("CARGO_PROFILE_RELEASE_LTO", "false"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
    ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1"),
];

/// Runs every step in order; stops at the first failure (and stops the background jobs).
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let run_clock = Clock::start();
    let mut jobs: Vec<(&str, Job)> = Vec::new();
    for (name, step) in STEPS {
        if let Step::Background(args, env, needed) = step
            && needed()
        {
            println!("== xtask ci: {name}: started in the background: {}", command_line(step));
            jobs.push((name, Job::start(root, name, args, env)?));
        }
    }
    let mut spent: Vec<(&str, Spent)> = Vec::new();
    for (name, step) in STEPS {
        let clock = Clock::start();
        let result = run_step(root, name, step, &mut jobs);
        if let Err(error) = result {
            for (_, job) in &mut jobs {
                job.stop();
            }
            return Err(error.context(format!("step `{name}` failed")));
        }
        let step_spent = clock.read();
        println!("== xtask ci: {name}: done ({step_spent})");
        spent.push((name, step_spent));
    }
    println!("== xtask ci: all steps passed in {}", run_clock.read());
    print!("{}", table(&spent, run_clock.read()));
    Ok(())
}

/// Runs one step (a background step waits for its job).
fn run_step(
    root: &Path,
    name: &str,
    step: &Step,
    jobs: &mut Vec<(&str, Job)>,
) -> anyhow::Result<()> {
    match step {
        Step::Cargo(args, env) => {
            println!("== xtask ci: {name}: cargo {}", args.join(" "));
            cargo(root, args, env)
        }
        Step::Task(task, _) => {
            println!("== xtask ci: {name}");
            task(root)
        }
        Step::Background(..) => {
            let Some(at) = jobs.iter().position(|(job, _)| *job == name) else {
                println!("== xtask ci: {name}: nothing to do");
                return Ok(());
            };
            let (_, job) = jobs.remove(at);
            println!("== xtask ci: {name}: waiting for it");
            job.wait()
        }
    }
}

/// The summary: each step's wall and CPU seconds, and the run's. A background step's wall time is
/// how long the run waited for it, its CPU time all that the job used.
fn table(spent: &[(&str, Spent)], total: Spent) -> String {
    let mut out = String::from("== xtask ci: step        wall s   CPU s\n");
    for (name, step) in spent {
        out.push_str(&format!(
            "== xtask ci: {name:<15} {:>6.0} {:>7.0}\n",
            step.wall.as_secs_f64(),
            step.cpu
        ));
    }
    out.push_str(&format!(
        "== xtask ci: {:<15} {:>6.0} {:>7.0}\n",
        "total",
        total.wall.as_secs_f64(),
        total.cpu
    ));
    out
}

/// The steps as `cargo xtask ci --list` prints them: one line each, the name and then the command
/// it runs as a shell would take it.
pub(crate) fn list() -> String {
    let width = STEPS.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (name, step) in STEPS {
        out.push_str(&format!("{name:width$}  {}\n", command_line(step)));
    }
    out
}

/// What one step runs, written as a shell command line (environment first, values quoted when they
/// hold a space).
fn command_line(step: &Step) -> String {
    match step {
        Step::Cargo(args, env) => {
            let mut words = shell_words(env);
            words.push("cargo".to_owned());
            words.extend(args.iter().map(|arg| (*arg).to_owned()));
            words.join(" ")
        }
        Step::Task(_, what) => (*what).to_owned(),
        Step::Background(args, env, _) => {
            let mut words = shell_words(env);
            words.extend(args.iter().map(|arg| (*arg).to_owned()));
            format!("{}  # in the background, from the start", words.join(" "))
        }
    }
}

/// `KEY=value` words, quoted when the value holds a space.
fn shell_words(env: &[(&str, &str)]) -> Vec<String> {
    env.iter()
        .map(|(key, value)| {
            if value.contains(' ') { format!("{key}='{value}'") } else { format!("{key}={value}") }
        })
        .collect()
}

/// Runs `cargo <args>` in `root` with `env` added; fails when cargo does.
fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root)
        .status()
        .context("could not start cargo")?;
    if !status.success() {
        bail!("cargo {} exited with {status}", args.join(" "));
    }
    Ok(())
}

/// Every offline demo against both APIs, on the binaries of the `build` step.
fn run_demo(root: &Path) -> anyhow::Result<()> {
    crate::demo::run(root, None, false)
}

/// The short soak, on the binaries of the `build` step and the peers of `mcp-peers`.
fn run_soak(root: &Path) -> anyhow::Result<()> {
    let args = ["--sessions", "100", "--every", "40", "--no-build"];
    crate::soak::run(root, &args.map(str::to_owned))
}

/// The fuzz smoke as a step.
fn run_fuzz_smoke(root: &Path) -> anyhow::Result<()> {
    crate::fuzz::run(root, &["--smoke".to_owned()])
}

/// The tidy check as a step: prints each problem and fails when there is any.
fn run_tidy(root: &Path) -> anyhow::Result<()> {
    let problems = tidy::check(root)?;
    for problem in &problems {
        eprintln!("tidy: {problem}");
    }
    if !problems.is_empty() {
        bail!("tidy found {} problem(s)", problems.len());
    }
    Ok(())
}

/// The real-server tier (`cargo xtask realmodel`), all of it, on the binary of the `build` step.
fn run_realmodel(root: &Path) -> anyhow::Result<()> {
    crate::realmodel::run(root, &["--no-build".to_owned()])
}

/// Licenses, bans and sources against `deny.toml` (`DENY_CHECK`); cargo-deny was installed by the
/// `deny-install` step when it was missing.
fn run_deny(root: &Path) -> anyhow::Result<()> {
    let args: Vec<&str> = DENY_CHECK.split_whitespace().skip(1).collect();
    cargo(root, &args, &[])
}

/// True when the pinned cargo-deny is not what `cargo deny` runs.
fn deny_missing() -> bool {
    let cargo_path = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let version = Command::new(cargo_path).args(["deny", "--version"]).output();
    let want = format!("cargo-deny {CARGO_DENY_VERSION}");
    !version.is_ok_and(|out| {
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == want
    })
}

/// For the steps that always run.
fn always() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_has_one_line_per_step_in_order() {
        let list = list();
        let names: Vec<&str> = list.lines().filter_map(|line| line.split(' ').next()).collect();
        let steps: Vec<&str> = STEPS.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, steps);
        assert!(list.contains(
            "\nclippy           cargo clippy --workspace --all-targets -- -D warnings\n"
        ));
        // A value with a space is quoted, so each line can be pasted into a shell as it is.
        assert!(
            list.contains("\ndoc              RUSTDOCFLAGS='-D warnings' cargo doc --workspace")
        );
        // The version installed is the version checked for.
        assert!(DENY_INSTALL.windows(2).any(|w| w == ["--version", CARGO_DENY_VERSION]));
    }
}
