//! `acp.first_update_ms`: how soon an editor sees something after it sends a prompt to
//! `agent acp` (the release binary, the scripted model): from writing `session/prompt` to reading
//! the first `session/update`. Starting the process and the session is outside the figure.

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{
    Bins,
    process::{Server, fresh_dir},
};

/// `runs` prompts, each in a fresh process and session, after two warm-up rounds.
pub(crate) fn first_update(bins: &Bins, runs: usize, scratch: &Path) -> anyhow::Result<Vec<f64>> {
    let dir = scratch.join("acp");
    let mut times = Vec::new();
    for round in 0..runs + 2 {
        fresh_dir(&dir)?;
        let server = Server::start(bins, &dir, &json!([{"text": "Hello from the model."}]))?;
        let took = one(bins, &server.url, &dir)?;
        server.finish()?;
        if round >= 2 {
            times.push(took);
        }
    }
    Ok(times)
}

fn one(bins: &Bins, url: &str, dir: &Path) -> anyhow::Result<f64> {
    let workspace = dir.join("workspace");
    let mut child = Command::new(&bins.agent)
        .args(["--base-url", url, "--model", "scripted", "acp"])
        .current_dir(&workspace)
        .env("AGENT_DATA_DIR", dir.join("data"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting agent acp")?;
    let mut stdin = child.stdin.take().context("agent stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("agent stdout")?).lines();
    let mut send = move |message: Value| writeln!(stdin, "{message}").and_then(|()| stdin.flush());
    let mut next = || -> anyhow::Result<Value> {
        let line = lines.next().context("agent acp closed its stdout")??;
        Ok(serde_json::from_str(&line)?)
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    )?;
    next()?;
    let cwd = workspace.to_string_lossy();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
    )?;
    let session = next()?;
    let Some(id) = session["result"]["sessionId"].as_str() else {
        bail!("session/new failed: {session}");
    };
    let prompt = json!({"type": "text", "text": "Say hello."});
    let started = Instant::now();
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": id, "prompt": [prompt]}}))?;
    let first = next()?;
    let took = super::process::ms(started);
    if first["method"] != "session/update" {
        bail!("the first frame after the prompt was not an update: {first}");
    }
    // Read to the prompt's answer, so the run is a whole one, then close the connection.
    while next()?["id"] != 3 {}
    drop(send);
    let _ = child.wait();
    Ok(took)
}
