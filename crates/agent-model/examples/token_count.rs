//! Measures how fast `o200k_base` counts tokens (`tokens.count_mb_per_s`): the loop counts every
//! transcript item once, so this is the cost per megabyte of conversation. The text is this
//! repository's own Rust sources and docs, a mix of code, JSON and English.
//!
//! Run with `cargo run --release -p agent-model --example token_count [-- --json] [--quick]`.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let runs = if args.iter().any(|arg| arg == "--quick") { 3 } else { 9 };
    let sample = [
        include_str!("../src/tokens.rs"),
        include_str!("../src/transport.rs"),
        include_str!("../src/error.rs"),
        include_str!("../../../docs/models.md"),
        include_str!("../../../docs/executor.md"),
        include_str!("../../../docs/BENCHMARKS.md"),
    ]
    .concat();
    let text = sample.repeat((2 << 20) / sample.len() + 1);
    let counter = agent_model::counter_for("gpt-4o");
    // The first count builds the encoding's tables; it is not part of the figure.
    let started = Instant::now();
    let tokens = counter.count(&text);
    let first = started.elapsed();
    let mut rates = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        assert_eq!(counter.count(&text), tokens);
        rates.push(text.len() as f64 / 1e6 / started.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    let (median, min, max) = (rates[rates.len() / 2], rates[0], rates[rates.len() - 1]);
    let chars = text.chars().count();
    if json {
        let line = serde_json::json!({"name": "tokens.count_mb_per_s", "unit": "MB/s", "median": median, "min": min, "max": max, "runs": runs});
        println!("{line}");
    } else {
        println!("o200k_base: {median:.1} MB/s (min {min:.1}, max {max:.1}, {runs} runs)");
    }
    eprintln!(
        "{:.1} MB, {tokens} tokens, {:.2} characters a token; the first count (building the tables) took {:.0} ms",
        text.len() as f64 / 1e6,
        chars as f64 / tokens as f64,
        first.as_secs_f64() * 1e3 - text.len() as f64 / 1e6 / median * 1e3
    );
}
