//! Benchmark figures for the file tools (printed, not asserted): grep against `rg` on the same
//! generated tree, and read_file near the end of a 100 MB file.
//!
//! Run with `cargo run --release -p agent-tools --example tool_bench`. Set `RG` to a ripgrep binary
//! to compare; without one, only our figures are printed.
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::{
    io::Write as _,
    path::Path,
    time::{Duration, Instant},
};

use agent_tools::{
    FileTracker, GrepInput, OutputMode, ReadFileInput, grep_blocking, read_blocking,
};

/// A deterministic pseudo-random generator, so every run searches the same text.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const WORDS: &[&str] = &[
    "let", "fn", "value", "return", "match", "struct", "impl", "self", "config", "error", "result",
    "buffer", "index", "handler", "request", "response", "parse", "write", "read", "into",
];

fn generate_tree(root: &Path, dirs: usize, files_per_dir: usize, file_bytes: usize) -> u64 {
    let mut rng = Lcg(42);
    let mut total = 0u64;
    for d in 0..dirs {
        let dir = root.join(format!("pkg{:03}/src/mod{}", d, d % 7));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..files_per_dir {
            let mut text = String::with_capacity(file_bytes + 100);
            while text.len() < file_bytes {
                let words = 4 + rng.next() % 10;
                text.push_str("    ");
                for _ in 0..words {
                    text.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
                    text.push(' ');
                }
                if rng.next().is_multiple_of(2000) {
                    text.push_str("NEEDLE_XYZ ");
                }
                if rng.next().is_multiple_of(500) {
                    text.push_str("fn on_request_handler(");
                }
                text.push('\n');
            }
            total += text.len() as u64;
            std::fs::write(dir.join(format!("file{f}.rs")), text).unwrap();
        }
    }
    total
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let value = f();
        best = best.min(started.elapsed());
        last = Some(value);
    }
    (best, last.unwrap())
}

fn grep_input(pattern: &str, mode: OutputMode, fixed: bool) -> GrepInput {
    serde_json::from_value(serde_json::json!({
        "pattern": pattern,
        "fixed_strings": fixed,
        "output_mode": match mode { OutputMode::FilesWithMatches => "files_with_matches", OutputMode::Content => "content", OutputMode::Count => "count" },
        "head_limit": 2000,
    }))
    .unwrap()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tree = root.join("tree");
    let started = Instant::now();
    let bytes = generate_tree(&tree, 200, 50, 10_000);
    println!("generated 10000 files, {:.1} MB, in {:.1?}", bytes as f64 / 1e6, started.elapsed());

    let rg = std::env::var("RG").ok().or_else(|| {
        std::process::Command::new("which")
            .arg("rg")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    });
    let cases: [(&str, &str, OutputMode, bool, &[&str]); 3] = [
        ("rare literal, files", "NEEDLE_XYZ", OutputMode::FilesWithMatches, true, &["-l", "-F"]),
        ("regex, content", r"fn [a-z_]+_handler\(", OutputMode::Content, false, &["-n"]),
        ("common word, count", "handler", OutputMode::Count, true, &["-c", "-F"]),
    ];
    // Warm the page cache once so both tools read from memory.
    let _ = grep_blocking(&tree, &grep_input("warmup", OutputMode::Count, true));
    for (name, pattern, mode, fixed, rg_flags) in cases {
        let input = grep_input(pattern, mode, fixed);
        let (ours, output) = best_of(5, || grep_blocking(&tree, &input).unwrap().text);
        let header = output.lines().next().unwrap_or("").to_owned();
        print!("grep tool  {name:<22} {:>8.1} ms  ({header})", ours.as_secs_f64() * 1e3);
        if let Some(rg) = &rg {
            let (theirs, out) = best_of(5, || {
                std::process::Command::new(rg)
                    .args(rg_flags)
                    .arg(pattern)
                    .arg(&tree)
                    .output()
                    .unwrap()
            });
            let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
            print!(
                "\n  rg       {name:<22} {:>8.1} ms  ({lines} output lines); ratio ours/rg = {:.2}",
                theirs.as_secs_f64() * 1e3,
                ours.as_secs_f64() / theirs.as_secs_f64()
            );
        }
        println!();
    }
    if rg.is_none() {
        println!("rg: not installed (set RG=/path/to/rg to compare)");
    }

    // read_file of a 100 MB file with offset near the end.
    let big = root.join("big.log");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
        let mut written = 0usize;
        let mut n = 0u64;
        while written < 100 * 1024 * 1024 {
            let line =
                format!("{n:>10} INFO request handled in {} ms by worker {}\n", n % 997, n % 13);
            written += line.len();
            file.write_all(line.as_bytes()).unwrap();
            n += 1;
        }
    }
    let lines = std::fs::read_to_string(&big).unwrap().lines().count();
    let tracker = FileTracker::new();
    let input: ReadFileInput = serde_json::from_value(
        serde_json::json!({"path": "big.log", "offset": lines - 150, "limit": 100}),
    )
    .unwrap();
    let (took, out) = best_of(5, || read_blocking(root, &tracker, &input).unwrap().text);
    println!(
        "read_file  100 MB, {lines} lines, offset={} limit=100: {:.1} ms  ({})",
        lines - 150,
        took.as_secs_f64() * 1e3,
        out.lines().next().unwrap_or("")
    );
}
