//! `cargo xtask ci`: the same checks CI relies on, in the order that fails fastest.

use std::{path::Path, process::Command};

use anyhow::{Context, bail};

/// One step: its name, cargo's arguments, and extra environment.
type Step = (&'static str, &'static [&'static str], &'static [(&'static str, &'static str)]);

/// Runs fmt, clippy, tests and docs; stops at the first failure.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let steps: [Step; 4] = [
        ("fmt", &["fmt", "--all", "--", "--check"], &[]),
        ("clippy", &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[]),
        ("test", &["test", "--workspace"], &[]),
        ("doc", &["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")]),
    ];
    for (name, args, env) in steps {
        println!("== xtask ci: {name}: cargo {}", args.join(" "));
        let status = Command::new(&cargo)
            .args(args)
            .envs(env.iter().copied())
            .current_dir(root)
            .status()
            .with_context(|| format!("could not start cargo for step {name}"))?;
        if !status.success() {
            bail!("step `{name}` failed ({status})");
        }
    }
    println!("== xtask ci: all steps passed");
    Ok(())
}
