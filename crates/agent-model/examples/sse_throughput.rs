//! Prints the SSE parse throughput of both adapters:
//! `cargo run --release -p agent-model --example sse_throughput --features scripted-server [-- --json] [--quick]`.
//!
//! Each run streams the same canned body 300 times through the real client (SSE decoding, our
//! serde types, the accumulator); the figure is the median, min and max MB/s over the runs. Then
//! one answer whose text is a single 20 MB event (`stream.one_event_20mb`, ms). With `--json` it
//! prints `{"name","unit","median","min","max","runs"}` lines for `cargo xtask bench`.

#![allow(clippy::print_stdout)]

use agent_model::scripted::{one_large_event, serde_only_throughput, sse_parse_throughput};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|arg| arg == "--json");
    let runs = if args.iter().any(|arg| arg == "--quick") { 3 } else { 9 };
    for (name, label, responses) in
        [("stream.chat", "chat completions", false), ("stream.responses", "responses", true)]
    {
        // A warm-up round, then the measured ones.
        sse_parse_throughput(responses, 3).await?;
        let mut rates = Vec::with_capacity(runs);
        let mut last = None;
        for _ in 0..runs {
            let run = sse_parse_throughput(responses, 300).await?;
            rates.push(run.mb_per_s());
            last = Some(run);
        }
        rates.sort_by(f64::total_cmp);
        let (median, min, max) = (rates[runs / 2], rates[0], rates[runs - 1]);
        if json {
            let line = serde_json::json!({"name": name, "unit": "MB/s", "median": median, "min": min, "max": max, "runs": runs});
            println!("{line}");
            continue;
        }
        if let Some(run) = last {
            println!(
                "{label}: median {median:.1} MB/s (min {min:.1}, max {max:.1}; {} bytes, {} events per run)",
                run.bytes, run.events
            );
        }
        let serde = serde_only_throughput(responses, 300)?;
        println!("{label}, our serde types alone: {:.1} MB/s", serde.mb_per_s());
    }
    // One 20 MB event: a decoder that re-scanned its buffer per chunk took 68 s here.
    let mut times = Vec::with_capacity(3);
    for _ in 0..3 {
        times.push(one_large_event(20_000_000).await?.as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let (median, min, max) = (times[1], times[0], times[2]);
    if json {
        let line = serde_json::json!({"name": "stream.one_event_20mb", "unit": "ms", "median": median, "min": min, "max": max, "runs": 3});
        println!("{line}");
    } else {
        println!("one 20 MB event: median {median:.0} ms (min {min:.0}, max {max:.0})");
    }
    Ok(())
}
