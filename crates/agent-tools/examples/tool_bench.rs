//! Benchmark figures for the file tools (printed, not asserted): grep against `rg` on the same
//! generated tree of about 210 MB, and read_file near the end of a 100 MB file.
//!
//! Run with `cargo run --release -p agent-tools --example tool_bench [-- --tree DIR] [--json]
//! [--quick]`. Set `RG` to a ripgrep binary to compare; without one, only our figures are printed.
//! `--tree DIR` keeps the generated tree in DIR and reuses it on later runs (`cargo xtask bench`
//! passes `target/bench-data/grep-tree`); without it the tree lives in a temporary directory.
//! With `--json` it prints the headline case (a rare literal, files with matches) as
//! `{"name","unit","median","min","max","runs"}` lines; each run times our grep and `rg` back to
//! back, and the ratio is the median of the per-run ratios.
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::{io::Write as _, path::Path, time::Instant};

use agent_exec::Workspace;
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

/// The tree under `root`, generated unless a complete one is already there.
fn ensure_tree(root: &Path, quiet: bool) -> u64 {
    let marker = root.join(".complete");
    if let Some(bytes) = std::fs::read_to_string(&marker).ok().and_then(|t| t.trim().parse().ok()) {
        return bytes;
    }
    let _ = std::fs::remove_dir_all(root);
    let started = Instant::now();
    let bytes = generate_tree(root, 420, 50, 10_000);
    std::fs::write(&marker, bytes.to_string()).unwrap();
    if !quiet {
        println!(
            "generated 21000 files, {:.1} MB, in {:.1?}",
            bytes as f64 / 1e6,
            started.elapsed()
        );
    }
    bytes
}

/// Milliseconds taken by `f`, and what it returned.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let started = Instant::now();
    let value = f();
    (started.elapsed().as_secs_f64() * 1e3, value)
}

/// Median, min and max.
fn stats(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn json_line(name: &str, unit: &str, values: Vec<f64>) {
    let runs = values.len();
    let (median, min, max) = stats(values);
    let line = serde_json::json!({"name": name, "unit": unit, "median": median, "min": min, "max": max, "runs": runs});
    println!("{line}");
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let runs = if args.iter().any(|arg| arg == "--quick") { 3 } else { 9 };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tree = args
        .iter()
        .position(|arg| arg == "--tree")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| root.join("tree"), std::path::PathBuf::from);
    let bytes = ensure_tree(&tree, json);

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
    // The boundary a session gives the tools, with no allow rules.
    let workspace = Workspace::new(&tree).unwrap();
    // Warm the page cache once so both tools read from memory.
    let _ = grep_blocking(&workspace, &grep_input("warmup", OutputMode::Count, true));
    if !json {
        println!("tree: {:.1} MB at {}; {runs} runs per case", bytes as f64 / 1e6, tree.display());
    }
    for (index, (name, pattern, mode, fixed, rg_flags)) in cases.into_iter().enumerate() {
        // With --json only the headline case runs, to keep `cargo xtask bench` short.
        if json && index > 0 {
            break;
        }
        let input = grep_input(pattern, mode, fixed);
        let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let (mut header, mut rg_lines) = (String::new(), 0);
        for _ in 0..runs {
            let (took, output) = timed(|| grep_blocking(&workspace, &input).unwrap().text);
            header = output.lines().next().unwrap_or("").to_owned();
            ours.push(took);
            if let Some(rg) = &rg {
                let (took_rg, out) = timed(|| {
                    std::process::Command::new(rg)
                        .args(rg_flags)
                        .arg(pattern)
                        .arg(&tree)
                        .output()
                        .unwrap()
                });
                rg_lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
                theirs.push(took_rg);
                ratios.push(took / took_rg);
            }
        }
        if json {
            json_line("grep.tool", "ms", ours);
            if rg.is_some() {
                json_line("grep.rg", "ms", theirs);
                json_line("grep.ratio_vs_rg", "ratio", ratios);
            }
            continue;
        }
        let (median, min, max) = stats(ours);
        println!("grep tool  {name:<22} {median:>8.1} ms (min {min:.1}, max {max:.1})  ({header})");
        if rg.is_some() {
            let (median, min, max) = stats(theirs);
            let ratio = stats(ratios).0;
            println!(
                "  rg       {name:<22} {median:>8.1} ms (min {min:.1}, max {max:.1})  ({rg_lines} output lines); ratio ours/rg = {ratio:.2}"
            );
        }
    }
    if rg.is_none() {
        println!("rg: not installed (set RG=/path/to/rg to compare)");
    }
    if json {
        return;
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
    let workspace = Workspace::new(root).unwrap();
    let input: ReadFileInput = serde_json::from_value(
        serde_json::json!({"path": "big.log", "offset": lines - 150, "limit": 100}),
    )
    .unwrap();
    let mut times = Vec::new();
    let mut out = String::new();
    for _ in 0..runs {
        let (took, text) = timed(|| read_blocking(&workspace, &tracker, &input).unwrap().text);
        times.push(took);
        out = text;
    }
    let (median, min, max) = stats(times);
    println!(
        "read_file  100 MB, {lines} lines, offset={} limit=100: {median:.1} ms (min {min:.1}, max {max:.1})  ({})",
        lines - 150,
        out.lines().next().unwrap_or("")
    );
}
