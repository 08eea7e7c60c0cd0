//! What finding a workspace's secret files costs: walks a tree with the built-in secret list, as
//! the sandbox does before the first command of a session, then asks again (the cached answer
//! every later command gets within the reuse window).
//!
//! Run: `cargo run --release -p agent-sandbox --example secret_walk -- <dir> [runs]`.
//! A benchmark, not a test.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::{path::PathBuf, time::Instant};

use agent_sandbox::secret::{SecretFiles, Secrets};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(args.first().expect("usage: secret_walk <dir> [runs]"));
    let runs: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(5);
    let (mut walks, mut cached) = (Vec::new(), Vec::new());
    let mut found = 0;
    for _ in 0..runs {
        // A fresh list each round, so its cache is empty and the tree is walked.
        let secrets = Secrets::new(SecretFiles::default());
        let started = Instant::now();
        found = secrets.to_hide(Some(&root), None).len();
        walks.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        secrets.to_hide(Some(&root), None);
        cached.push(started.elapsed().as_secs_f64() * 1e3);
    }
    walks.sort_by(f64::total_cmp);
    cached.sort_by(f64::total_cmp);
    println!(
        "{}: {found} hidden; walk median {:.1} ms (min {:.1}, max {:.1}); cached {:.3} ms",
        root.display(),
        walks[runs / 2],
        walks[0],
        walks[runs - 1],
        cached[runs / 2]
    );
}
