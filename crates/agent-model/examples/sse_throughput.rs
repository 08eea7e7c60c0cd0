//! Prints the SSE parse throughput of both adapters: `cargo run --release -p agent-model --example sse_throughput --features scripted-server`.

#![allow(clippy::print_stdout)]

use agent_model::scripted::{serde_only_throughput, sse_parse_throughput};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (name, responses) in [("chat completions", false), ("responses", true)] {
        // A warm-up round, then the measured ones.
        sse_parse_throughput(responses, 3).await?;
        let run = sse_parse_throughput(responses, 300).await?;
        println!(
            "{name}: {:.1} MB/s ({} bytes, {} events in {:.2?})",
            run.mb_per_s(),
            run.bytes,
            run.events,
            run.elapsed
        );
        let serde = serde_only_throughput(responses, 300)?;
        println!("{name}, our serde types alone: {:.1} MB/s", serde.mb_per_s());
    }
    Ok(())
}
