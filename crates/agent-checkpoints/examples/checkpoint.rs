//! What checkpoints cost: a command that changes 3 files in a 50,000-file workspace
//! (`checkpoint.command_scan_ms`: both scans, the hashing of what changed, the record), the bytes
//! that turn adds to the store (`checkpoint.bytes`), the first command of a session, which reads
//! the whole workspace once (`checkpoint.first_scan_ms`), and a turn that writes nothing
//! (`checkpoint.idle_turn_us`). `--json` prints one figure a line for `cargo xtask bench`;
//! `--quick` runs fewer rounds.

#![allow(clippy::print_stdout, reason = "an example reports its figures on stdout")]

use std::time::Instant;

use agent_checkpoints::{CheckpointConfig, Checkpoints, Store};
use agent_core::Access;

const FILES: usize = 50_000;
const PER_DIR: usize = 500;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|arg| arg == "--json");
    let runs = if args.iter().any(|arg| arg == "--quick") { 5 } else { 15 };
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("work");
    for n in 0..FILES {
        let sub = root.join(format!("d{:03}", n / PER_DIR));
        if n % PER_DIR == 0 {
            std::fs::create_dir_all(&sub)?;
        }
        std::fs::write(sub.join(format!("f{n}.rs")), format!("// file {n}\nfn f{n}() {{}}\n"))?;
    }
    let session = dir.path().join("session");
    let checkpoints = Checkpoints::open(&session, &root, CheckpointConfig::default())?;
    let command = [Access::Command { line: "sed -i …".to_owned(), workdir: None }];

    let started = Instant::now();
    checkpoints.begin_turn(0, "first")?;
    if let Some(guard) = checkpoints.before_call(&command, true, false) {
        checkpoints.after_call(guard);
    }
    let first = started.elapsed().as_secs_f64() * 1e3;

    let (mut scan, mut bytes, mut idle) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..runs {
        let used = Store::open(&session, u64::MAX)?.used();
        let started = Instant::now();
        checkpoints.begin_turn(0, "change three files")?;
        let guard = checkpoints.before_call(&command, true, false);
        for n in 0..3 {
            let path = root.join(format!("d{n:03}/f{}.rs", n * PER_DIR));
            std::fs::write(path, format!("// round {round}\n"))?;
        }
        if let Some(guard) = guard {
            checkpoints.after_call(guard);
        }
        scan.push(started.elapsed().as_secs_f64() * 1e3);
        bytes.push((Store::open(&session, u64::MAX)?.used() - used) as f64);

        let started = Instant::now();
        checkpoints.begin_turn(0, "just look")?;
        let read = [Access::Read("d000/f0.rs".to_owned())];
        assert!(checkpoints.before_call(&read, false, false).is_none());
        idle.push(started.elapsed().as_secs_f64() * 1e6);
    }
    for (name, unit, values) in [
        ("checkpoint.command_scan_ms", "ms", scan),
        ("checkpoint.bytes", "bytes", bytes),
        ("checkpoint.idle_turn_us", "us", idle),
        ("checkpoint.first_scan_ms", "ms", vec![first]),
    ] {
        let mut values = values;
        values.sort_by(f64::total_cmp);
        let (median, min, max) = (values[values.len() / 2], values[0], values[values.len() - 1]);
        if json {
            let line = serde_json::json!({"name": name, "unit": unit, "median": median, "min": min, "max": max, "runs": values.len()});
            println!("{line}");
        } else {
            println!(
                "{name}: median {median:.2} {unit} (min {min:.2}, max {max:.2}, {} runs)",
                values.len()
            );
        }
    }
    Ok(())
}
