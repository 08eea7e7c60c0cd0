//! Runs the scripted OpenAI-compatible server as a process, for demos and benchmarks.
//!
//! Usage: `scripted-server SCRIPT.json`. It prints the base URL (`http://127.0.0.1:PORT/v1`) as its
//! first line on stdout, serves until its standard input closes, and then prints every recorded
//! request as one JSON line each.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, Write};

use agent_model::scripted::{Script, ScriptedServer};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scripted-server: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: scripted-server SCRIPT.json")?;
    let script = Script::from_json(&std::fs::read_to_string(&path)?)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let server = runtime.block_on(ScriptedServer::start(script))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", server.url())?;
    stdout.flush()?;
    // The server runs on the runtime while this thread waits for stdin to close.
    let waiter = std::thread::spawn(|| for _ in std::io::stdin().lock().lines() {});
    runtime.block_on(async {
        while !waiter.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    for request in server.requests() {
        let line = serde_json::json!({
            "method": request.method,
            "path": request.path,
            "body": request.json(),
        });
        writeln!(stdout, "{line}")?;
    }
    Ok(())
}
