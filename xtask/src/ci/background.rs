//! The CI jobs that run beside the others: set-up scripts that mostly download or compile what
//! the Rust build does not need (cargo-deny, llama.cpp, the Python and Node peers).
//!
//! Each runs in its own session (`setsid`), so stopping it stops its whole process tree (pip,
//! ninja, rustc), and writes to a log of its own, printed when its step joins it: the CI log stays
//! in step order.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Instant,
};

use anyhow::{Context, bail};

use super::clock::cpu_seconds;

/// One background job.
pub(super) struct Job {
    child: Child,
    log: PathBuf,
    started: Instant,
}

impl Job {
    /// Starts `args` (program first) in `root` with `env` added, output to a log of its own.
    pub(super) fn start(
        root: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("agent-ci-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).with_context(|| format!("creating {log:?}"))?;
        let (program, rest) = args.split_first().context("a background job needs a program")?;
        let program = if *program == "cargo" {
            std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
        } else {
            (*program).to_owned()
        };
        let mut command = Command::new("setsid");
        if program.ends_with("cargo") {
            // `cargo install` builds in a temporary directory of its own unless told otherwise;
            // sharing the workspace's target directory would make it wait for the workspace
            // build's lock, and that build for it.
            command.env_remove("CARGO_TARGET_DIR");
        }
        let child = command
            .arg(program)
            .args(rest)
            .envs(env.iter().copied())
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {name} (needs setsid from util-linux)"))?;
        Ok(Self { child, log, started: Instant::now() })
    }

    /// Waits for the job, prints its log and what it used, and fails when it did.
    pub(super) fn wait(mut self) -> anyhow::Result<()> {
        // Nothing else is reaped while this waits, so the CPU time that reaches this process now
        // is the job's, all of it (it ran beside the other steps).
        let cpu_before = cpu_seconds();
        let status = self.child.wait()?;
        let cpu = cpu_seconds() - cpu_before;
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        for line in text.lines() {
            println!("   {line}");
        }
        let _ = std::fs::remove_file(&self.log);
        println!(
            "== xtask ci: background job used {cpu:.0} s CPU; {:.0} s since the run began",
            self.started.elapsed().as_secs_f64()
        );
        if !status.success() {
            bail!("exited with {status}");
        }
        Ok(())
    }

    /// Stops the job's whole process group (a step before it failed).
    pub(super) fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // `setsid` made the job the leader of its own group: `-PID` names the whole group.
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", self.child.id())])
                .status();
        }
        let _ = self.child.wait();
    }
}
