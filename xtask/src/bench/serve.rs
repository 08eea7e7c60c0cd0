//! `agent serve` under load: 50 sessions at once, 20 prompts each, against the release scripted
//! server, every session's event stream dropped once and resumed with `Last-Event-ID`. Checked
//! on the way: no event reaches another session's stream, none is lost across the reconnect,
//! the server's memory stays under a bound. Measured: the latency from sending a prompt to its
//! first streamed text and to its last event (p50, p99), and the server's peak RSS; beside them
//! the same for one session alone and for `agent exec` (one process per prompt).

use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::Path,
    process::{Child, Command, Stdio},
    time::Instant,
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{
    Bins, Figure, Options,
    http::{Events, call},
    process::{Server, fresh_dir, ms},
    progress,
};

/// The server's resident set may not pass this at the end of the load (MiB).
const RSS_BOUND_MB: f64 = 1024.0;

/// What one session's driver measured.
#[derive(Debug, Default)]
struct Session {
    first_text_ms: Vec<f64>,
    turn_ms: Vec<f64>,
}

/// Runs the group: figures `serve.*` and `exec.*` beside them.
pub(crate) fn run_in(
    bins: &Bins,
    options: &Options,
    figures: &mut Vec<Figure>,
    scratch: &Path,
) -> anyhow::Result<()> {
    let (sessions, turns) = if options.quick { (10, 5) } else { (50, 20) };
    for (count, label) in [(1, "1x"), (sessions, "load")] {
        progress(&format!("agent serve: {count} session(s) x {turns} prompts…"));
        let dir = scratch.join(format!("serve-{count}"));
        fresh_dir(&dir)?;
        let (measured, rss_mb) = load(bins, &dir, count, turns)?;
        let name = |what: &str| format!("serve.{label}.{what}");
        percentiles(
            figures,
            &name("first_text_ms"),
            measured.iter().flat_map(|s| &s.first_text_ms),
        );
        percentiles(figures, &name("turn_ms"), measured.iter().flat_map(|s| &s.turn_ms));
        figures.push(Figure::of(&name("rss_mb"), "MiB", vec![rss_mb]));
    }
    progress(&format!("agent exec --json: {turns} prompts, one process each…"));
    let dir = scratch.join("exec");
    fresh_dir(&dir)?;
    let (first, whole, rss) = exec(bins, &dir, turns)?;
    percentiles(figures, "exec.first_text_ms", first.iter());
    percentiles(figures, "exec.turn_ms", whole.iter());
    figures.push(Figure::of("exec.rss_mb", "MiB", rss));
    Ok(())
}

/// The p50 (as the figure's median, with min and max) and p99 of `values`.
fn percentiles<'a>(figures: &mut Vec<Figure>, name: &str, values: impl Iterator<Item = &'a f64>) {
    let mut values: Vec<f64> = values.copied().collect();
    values.sort_by(f64::total_cmp);
    let p99 = values.get((values.len() * 99).div_ceil(100).saturating_sub(1)).copied();
    figures.push(Figure::of(&format!("{name}.p50"), "ms", values));
    figures.push(Figure::of(&format!("{name}.p99"), "ms", p99.into_iter().collect()));
}

/// A text answer for every request, whichever session sends it.
fn script(turns: usize) -> Value {
    let text = "An answer of a few words, streamed as the model streams it.";
    Value::Array((0..turns).map(|_| json!({"text": text})).collect())
}

/// Starts `agent serve`, drives `count` sessions at once for `turns` prompts each; what each
/// measured and the server's peak RSS.
fn load(
    bins: &Bins,
    dir: &Path,
    count: usize,
    turns: usize,
) -> anyhow::Result<(Vec<Session>, f64)> {
    let model = Server::start(bins, dir, &script(count * turns + 10))?;
    let mut child = Command::new(&bins.agent)
        .args(["--base-url", &model.url, "--model", "scripted", "serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.join("workspace"))
        .env("AGENT_DATA_DIR", dir.join("data"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENT_SERVE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting agent serve")?;
    let result = drive(&mut child, dir, count, turns);
    let _ = child.kill();
    let _ = child.wait();
    model.finish()?;
    result
}

fn drive(
    child: &mut Child,
    dir: &Path,
    count: usize,
    turns: usize,
) -> anyhow::Result<(Vec<Session>, f64)> {
    let mut stderr = BufReader::new(child.stderr.take().context("serve stderr")?);
    let mut line = String::new();
    stderr.read_line(&mut line)?;
    let Some(rest) = line.split("http://").nth(1) else { bail!("agent serve said: {line}") };
    let addr: SocketAddr = rest.split('/').next().unwrap_or_default().parse()?;
    let path =
        line.split("token in ").nth(1).unwrap_or_default().trim_end_matches(" (mode 0600)\n");
    let token = std::fs::read_to_string(path).context("reading the token")?.trim().to_owned();
    // The access log goes on; it is read and dropped so the server never blocks on the pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let drivers: Vec<_> = (0..count)
        .map(|k| {
            let (token, workspace) = (token.clone(), dir.join(format!("ws-{k}")));
            std::thread::spawn(move || one_session(addr, &token, &workspace, k, turns))
        })
        .collect();
    let mut measured = Vec::new();
    for driver in drivers {
        measured.push(driver.join().map_err(|_| anyhow::anyhow!("a session driver panicked"))??);
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))?;
    let rss_mb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.split_whitespace().next()?.parse::<f64>().ok())
        .context("the server's VmHWM")?
        / 1024.0;
    if rss_mb > RSS_BOUND_MB {
        bail!("agent serve's peak RSS was {rss_mb:.0} MiB, over the bound of {RSS_BOUND_MB} MiB");
    }
    Ok((measured, rss_mb))
}

/// One session: `turns` prompts, each read to its last event; the stream is dropped in the
/// middle of the middle prompt and resumed. Every event is checked to be this session's and
/// the ids to have no gap.
fn one_session(
    addr: SocketAddr,
    token: &str,
    workspace: &Path,
    k: usize,
    turns: usize,
) -> anyhow::Result<Session> {
    std::fs::create_dir_all(workspace)?;
    let body = json!({"workspace": workspace});
    let (status, info) = call(addr, token, "POST", "/v1/sessions", Some(&body))?;
    let Some(id) = info["id"].as_str().filter(|_| status == 201) else {
        bail!("opening session {k} answered {status}: {info}");
    };
    let mut events = Events::open(addr, token, id, 0)?;
    let (mut last, mut measured) = (0, Session::default());
    for turn in 0..turns {
        let prompt = format!("session {k} prompt {turn}");
        let started = Instant::now();
        let path = format!("/v1/sessions/{id}/prompt");
        let (status, answer) = call(addr, token, "POST", &path, Some(&json!({"text": prompt})))?;
        if status != 202 {
            bail!("prompt {turn} of session {k} answered {status}: {answer}");
        }
        let mut first_text = None;
        loop {
            let (event_id, event) = events.next()?;
            if event_id != last + 1 {
                bail!("session {k}: event {event_id} followed {last}: an event was lost");
            }
            last = event_id;
            match event["type"].as_str() {
                Some("run.started") if event["session_id"] != id => {
                    bail!("session {k} got another session's run: {event}")
                }
                Some("item.added")
                    if event["item"]["role"] == "user" && event["item"]["content"] != prompt =>
                {
                    bail!("session {k} got another session's prompt: {event}")
                }
                Some("run.started") if turn == turns / 2 => {
                    // Dropped mid-run; the rest of this run comes after the reconnect.
                    drop(events);
                    events = Events::open(addr, token, id, last)?;
                }
                Some("text.delta") if first_text.is_none() => first_text = Some(ms(started)),
                Some("run.completed") => break,
                Some("run.failed") => bail!("session {k} prompt {turn} failed: {event}"),
                _ => {}
            }
        }
        measured.first_text_ms.push(first_text.context("no text streamed")?);
        measured.turn_ms.push(ms(started));
    }
    Ok(measured)
}

/// `agent exec --json` for `runs` prompts, one process each: spawn to first text, spawn to
/// the last event, and the peak RSS read just before the process exits.
fn exec(bins: &Bins, dir: &Path, runs: usize) -> anyhow::Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let model = Server::start(bins, dir, &script(runs + 10))?;
    let (mut first, mut whole, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let started = Instant::now();
        let mut child = Command::new(&bins.agent)
            .args(["--base-url", &model.url, "--model", "scripted", "exec", "--json"])
            .arg(format!("prompt {run}"))
            .current_dir(dir.join("workspace"))
            .env("AGENT_DATA_DIR", dir.join("data"))
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting agent exec")?;
        let stdout = BufReader::new(child.stdout.take().context("exec stdout")?);
        let mut first_text = None;
        for line in stdout.lines() {
            let event: Value = serde_json::from_str(&line?)?;
            match event["type"].as_str() {
                Some("text.delta") if first_text.is_none() => first_text = Some(ms(started)),
                Some("run.completed") => {
                    whole.push(ms(started));
                    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))?;
                    let kb = status.lines().find_map(|line| line.strip_prefix("VmHWM:"));
                    let kb = kb.and_then(|kb| kb.split_whitespace().next()?.parse::<f64>().ok());
                    rss.push(kb.context("exec's VmHWM")? / 1024.0);
                }
                _ => {}
            }
        }
        child.wait()?;
        first.push(first_text.context("exec streamed no text")?);
    }
    model.finish()?;
    Ok((first, whole, rss))
}
