//! `cargo xtask ci`: every check CI relies on, in the order that fails fastest.
//!
//! `.ci/run` calls this and nothing else, and the README names it as the test command, so what the
//! docs promise (formatted, clippy-clean, tested, documented, tidy, licensed) is what CI checks.
//! The tests run last so that their `test result:` lines close the log.
//!
//! `STEPS` is the one list of what CI runs: `cargo xtask ci --list` prints it, and the README and
//! docs/ARCHITECTURE.md quote that output in a block tidy compares with it (`tidy/docs.rs`).

use std::{path::Path, process::Command, time::Instant};

use anyhow::{Context, bail};

use crate::tidy;

/// One check: a cargo command, or a task that runs inside xtask.
enum Step {
    /// `cargo <args>` with extra environment.
    Cargo(&'static [&'static str], &'static [(&'static str, &'static str)]),
    /// A task of this crate, run in-process, and what it runs in the words `--list` prints.
    Task(fn(&Path) -> anyhow::Result<()>, &'static str),
}

/// The checks, cheapest first; each one stops the run when it fails.
const STEPS: &[(&str, Step)] = &[
    ("fmt", Step::Cargo(&["fmt", "--all", "--", "--check"], &[])),
    ("tidy", Step::Task(run_tidy, "cargo xtask tidy")),
    ("deny", Step::Task(run_deny, DENY_CHECK)),
    (
        "clippy",
        Step::Cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[]),
    ),
    ("doc", Step::Cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])),
    // The offline demos drive the real binary through the real sandbox over loopback HTTP, so the
    // CLI-to-sandbox path ("denied by the sandbox") is checked too: about two seconds, after a
    // debug build of the two binaries with the demo's features (about a minute of CPU).
    ("demo", Step::Task(run_demo, "cargo xtask demo")),
    // The real-server tier: the agent binary against real third-party servers and a real model.
    // Its setup is cached per machine outside the work tree (`$AGENT_REALMODEL_CACHE`).
    ("realmodel", Step::Task(run_realmodel, "cargo xtask realmodel")),
    // The real MCP peers the MCP tests talk to, pinned in `scripts/mcp/` (npm and pip).
    ("mcp-peers", Step::Task(run_mcp_peers, "bash scripts/mcp/setup.sh")),
    // A test that cannot run fails here rather than skipping: the checks CI relies on are the ones
    // that ran (`crates/agent-test-support`).
    ("test", Step::Cargo(&["test", "--workspace"], &[("AGENT_NO_SKIP", "1")])),
];

/// The cargo-deny check CI runs. Advisories are left out: they need the RustSec database from the
/// network, which CI does not have.
const DENY_CHECK: &str = "cargo deny --log-level error check licenses bans sources";

/// How `.ci/run` installs cargo-deny (keep the version in step); the hint when the tool is missing.
const CARGO_DENY: &str = "cargo install --locked cargo-deny --version 0.20.2";

/// Runs every step in order; stops at the first failure.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let mut timings = Vec::new();
    for (name, step) in STEPS {
        let started = Instant::now();
        match step {
            Step::Cargo(args, env) => {
                println!("== xtask ci: {name}: cargo {}", args.join(" "));
                cargo(root, args, env).with_context(|| format!("step `{name}` failed"))?;
            }
            Step::Task(task, _) => {
                println!("== xtask ci: {name}");
                task(root).with_context(|| format!("step `{name}` failed"))?;
            }
        }
        timings.push(format!("{name} {}s", started.elapsed().as_secs()));
    }
    println!("== xtask ci: all steps passed ({})", timings.join(", "));
    Ok(())
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
            let mut words: Vec<String> = env
                .iter()
                .map(|(key, value)| {
                    if value.contains(' ') {
                        format!("{key}='{value}'")
                    } else {
                        format!("{key}={value}")
                    }
                })
                .collect();
            words.push("cargo".to_owned());
            words.extend(args.iter().map(|arg| (*arg).to_owned()));
            words.join(" ")
        }
        Step::Task(_, what) => (*what).to_owned(),
    }
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

/// Every offline demo against both APIs, as a step.
fn run_demo(root: &Path) -> anyhow::Result<()> {
    crate::demo::run(root, None)
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

/// Installs the MCP peers (`scripts/mcp/setup.sh`), so the README's test command works on a fresh
/// machine as written; a second run only checks them.
fn run_mcp_peers(root: &Path) -> anyhow::Result<()> {
    let script = root.join("scripts/mcp/setup.sh");
    let status = Command::new("bash")
        .arg(&script)
        .current_dir(root)
        .status()
        .context("could not start scripts/mcp/setup.sh (needs bash, npm and python3)")?;
    if !status.success() {
        bail!("scripts/mcp/setup.sh exited with {status} (it needs npm and python3 with venv)");
    }
    Ok(())
}

/// The real-server tier (`cargo xtask realmodel`), all of it.
fn run_realmodel(root: &Path) -> anyhow::Result<()> {
    crate::realmodel::run(root, &[])
}

/// Licenses, bans and sources against `deny.toml` (`DENY_CHECK`), after installing cargo-deny when
/// it is missing.
fn run_deny(root: &Path) -> anyhow::Result<()> {
    let cargo_path = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let installed = Command::new(cargo_path)
        .args(["deny", "--version"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !installed {
        // A fresh machine has no cargo-deny: build the pinned version once (a few minutes), so the
        // README's test command works there as it is written.
        println!("== xtask ci: deny: installing it first: {CARGO_DENY}");
        let args: Vec<&str> = CARGO_DENY.split_whitespace().skip(1).collect();
        cargo(root, &args, &[]).context("installing cargo-deny")?;
    }
    let args: Vec<&str> = DENY_CHECK.split_whitespace().skip(1).collect();
    cargo(root, &args, &[])
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
        assert!(
            list.contains("\nclippy     cargo clippy --workspace --all-targets -- -D warnings\n")
        );
        // A value with a space is quoted, so each line can be pasted into a shell as it is.
        assert!(list.contains("\ndoc        RUSTDOCFLAGS='-D warnings' cargo doc --workspace"));
    }
}
