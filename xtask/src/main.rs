//! `cargo xtask`: developer tasks (bench, ci, demo, fuzz, realmodel, soak, tidy), one module per task.
//!
//! Maintenance tasks use no workspace crate, so they still run when the product does not build.

// Developer tasks print their results and start cargo and the built binaries directly.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

mod bench;
mod ci;
mod demo;
mod fuzz;
mod realmodel;
mod soak;
mod tidy;

use std::path::{Path, PathBuf};

use anyhow::bail;

const HELP: &str = "\
cargo xtask <task>

tasks:
  bench   [--json] [--quick] [--debug] [--only GROUP,…] benchmarks of the release binaries and crates (not part of ci)
  ci      [--list] what .ci/run runs, these steps in order, stopping at the first failure:
{steps}
  demo    [--no-build] [NAME] offline demos: the real agent binary against a scripted model server
          (--no-build: on the debug binaries as they are, e.g. after `cargo test --no-run`)
  fuzz    --list | TARGET --minutes N | --cpu-minutes N TARGET... | --smoke [--seconds S]  the fuzz
          targets under AFL++ (apt package afl++; docs/fuzzing.md): list them, run one for N
          minutes of wall or CPU time, or run each for S seconds (CI)
  realmodel  [--no-build] [--only TEXT | --bench] the real-server tier: the agent binary against
          llama-cpp-python, llama-server and LiteLLM with a real tiny model (setup cached in
          $AGENT_REALMODEL_CACHE)
  soak    [--sessions N] [--every N] [--no-build] thousands of sessions (default 2,000) through two
          long-running `agent acp` processes, asserting every N (100) that no process, descriptor,
          temporary file, checkpoint store or resident memory grows (not part of ci)
  tidy    repository invariants: //! headers, library dependencies, crate edges, lints, file sizes,
          the crate tables and CI lists of the docs
";

/// The help text, with the CI steps quoted from `ci::list` so it cannot keep a list of its own.
fn help() -> String {
    let steps: Vec<String> = ci::list().lines().map(|line| format!("            {line}")).collect();
    HELP.replace("{steps}\n", &format!("{}\n", steps.join("\n")))
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let task = args.next();
    let rest: Vec<String> = args.collect();
    match task.as_deref() {
        Some("bench") => bench::run(&project_root(), &rest),
        Some("ci") if rest.iter().any(|arg| arg == "--list") => {
            print!("{}", ci::list());
            Ok(())
        }
        Some("ci") => ci::run(&project_root()),
        Some("demo") => {
            let name = rest.iter().find(|arg| *arg != "--no-build").map(String::as_str);
            demo::run(&project_root(), name, !rest.iter().any(|arg| arg == "--no-build"))
        }
        Some("fuzz") => fuzz::run(&project_root(), &rest),
        Some("realmodel") => realmodel::run(&project_root(), &rest),
        Some("soak") => soak::run(&project_root(), &rest),
        Some("tidy") => {
            let problems = tidy::check(&project_root())?;
            if problems.is_empty() {
                println!("tidy: ok");
                return Ok(());
            }
            for problem in &problems {
                eprintln!("tidy: {problem}");
            }
            bail!("tidy found {} problem(s)", problems.len())
        }
        Some("help" | "--help" | "-h") | None => {
            print!("{}", help());
            Ok(())
        }
        Some(other) => bail!("unknown task `{other}` (args: {rest:?})\n\n{}", help()),
    }
}

/// The workspace root, found from this crate's manifest directory so the tasks work from anywhere.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Builds with `cargo build --quiet <args>` in the debug profile (shared with the tests, so nothing
/// is compiled twice) and returns the directory the binaries land in.
fn build_debug(root: &Path, args: &[&str]) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .arg("build")
        .arg("--quiet")
        .args(args)
        .current_dir(root)
        .status()
        .map_err(|err| anyhow::anyhow!("running cargo build: {err}"))?;
    if !status.success() {
        bail!("cargo build failed");
    }
    Ok(debug_dir(root))
}

/// Where the debug binaries land (`$CARGO_TARGET_DIR/debug`, else `target/debug`).
fn debug_dir(root: &Path) -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target.join("debug")
}

/// The debug binaries `names` as they are, for `--no-build`: fails naming the build to run first.
fn built_debug(root: &Path, names: &[&str]) -> anyhow::Result<PathBuf> {
    let dir = debug_dir(root);
    for name in names {
        if !dir.join(name).is_file() {
            bail!("{name} is not built in {dir:?} (run `cargo test --workspace --no-run` first)");
        }
    }
    Ok(dir)
}
