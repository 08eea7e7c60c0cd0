//! `cargo xtask realmodel`: the real-server tier. The real `agent` binary runs end-to-end tasks
//! against real third-party servers with a real (tiny) model, SmolLM2-135M-Instruct:
//! llama-cpp-python's server in its two chat modes, llama.cpp's `llama-server`, and LiteLLM's
//! proxy serving `/v1/responses` in front of llama-cpp-python.
//!
//! A 135M model is erratic, so the checks are about what the harness controls: the server accepted
//! the requests, the model's tool call ran, the transcript is valid (every call has exactly one
//! output), and the run ended clearly (an answer, the turn limit named, or a model error named).
//! One case checks meaning: on the server mode that shows tool results to the model, the final
//! answer carries the tool's `HELLO WORLD`.
//!
//! Setup (venvs, the model, `llama-server`) lives in `scripts/realmodel/realmodel.sh` and is cached
//! across runs in `$AGENT_REALMODEL_CACHE` (default `~/.cache/agent-realmodel`).

mod cases;
mod servers;

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::Value;

use self::{
    cases::{Case, End, NOTES, UPPERCASE, UPPERCASE_JSON, cases},
    servers::{Kind, LITELLM_KEY, Server},
};
use crate::bench::Figure;

/// What one `agent exec --json` run left behind.
struct Outcome {
    code: Option<i32>,
    /// The `--json` events with the time each line arrived, from the spawn.
    events: Vec<(Duration, Value)>,
    stderr: String,
    items: Vec<Value>,
}

/// Runs the tier (`cargo xtask realmodel`), only the cases whose title contains a text
/// (`cargo xtask realmodel --only TEXT`, for working on one case), or only prints the real-model
/// figures (`cargo xtask realmodel --bench`).
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    // `--no-build`: the debug binary as it is (CI's `build` step made it with the tests' features).
    let build = !args.iter().any(|arg| arg == "--no-build");
    let args: Vec<String> = args.iter().filter(|arg| *arg != "--no-build").cloned().collect();
    let mut only = None;
    match args.first().map(String::as_str) {
        None => {}
        Some("--only") => only = Some(args.get(1).context("--only needs a text")?.clone()),
        Some("--bench") => {
            let agent = agent_binary(root, build)?;
            for figure in bench_figures(root, &agent)? {
                println!("{:<48} {:>10.0} {}", figure.name, figure.median, figure.unit);
            }
            return Ok(());
        }
        Some(other) => {
            bail!("unknown realmodel option `{other}` (expected --bench or --only TEXT)")
        }
    }
    let started = Instant::now();
    println!("realmodel: setting up the servers (cached in $AGENT_REALMODEL_CACHE)…");
    let setup = servers::setup(root)?;
    println!("realmodel: setup took {setup:.0} s");
    let agent = agent_binary(root, build)?;
    let scratch = std::env::temp_dir().join(format!("agent-realmodel-{}", std::process::id()));
    let (mut passed, mut failed) = (0, 0);
    let mut running: Vec<Server> = Vec::new();
    for case in cases() {
        let wanted = format!("{} · {} · {}", case.server.label(), case.api, case.name);
        if only.as_ref().is_some_and(|text| !wanted.contains(text.as_str())) {
            continue;
        }
        if !running.iter().any(|server| server.kind == case.server) {
            start_for(root, case.server, &mut running, &scratch.join("logs"))?;
        }
        let server = running.iter().find(|server| server.kind == case.server).context("server")?;
        let title = format!("{} · {} · {}", server.kind.label(), case.api, case.name);
        let dir = scratch.join(format!("case-{}", passed + failed));
        let case_started = Instant::now();
        let result =
            run_case(&agent, server, &case, &dir).and_then(|outcome| check(&case, &outcome));
        let secs = case_started.elapsed().as_secs_f64();
        match result {
            Ok(note) => {
                passed += 1;
                println!("✔ {title} ({secs:.1} s){note}");
            }
            Err(error) => {
                failed += 1;
                println!("✘ {title} ({secs:.1} s): {error:#}");
            }
        }
    }
    drop(running);
    let _ = std::fs::remove_dir_all(&scratch);
    println!("realmodel: {:.0} s in all ({setup:.0} s of setup)", started.elapsed().as_secs_f64());
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} real-server case(s) failed");
    }
    Ok(())
}

/// Starts `kind` (and, for LiteLLM, the llama-cpp-python server it forwards to) unless running.
fn start_for(
    root: &Path,
    kind: Kind,
    running: &mut Vec<Server>,
    logs: &Path,
) -> anyhow::Result<()> {
    let mut upstream = Vec::new();
    if kind == Kind::Litellm {
        for needed in [Kind::Chatml, Kind::LlamaServer] {
            if !running.iter().any(|server| server.kind == needed) {
                println!("realmodel: starting {}…", needed.label());
                running.push(servers::start(root, needed, &[], logs)?);
            }
            upstream.extend(running.iter().filter(|s| s.kind == needed).map(|s| s.port));
        }
    }
    println!("realmodel: starting {}…", kind.label());
    running.push(servers::start(root, kind, &upstream, logs)?);
    Ok(())
}

/// The `agent` binary (debug profile), built first when `build` is set.
fn agent_binary(root: &Path, build: bool) -> anyhow::Result<PathBuf> {
    let dir = if build {
        crate::build_debug(root, &["-p", "agent-cli", "--bin", "agent"])?
    } else {
        crate::built_debug(root, &["agent"])?
    };
    Ok(dir.join("agent"))
}

/// Runs `agent exec --json` for one case in a fresh workspace and data directory.
fn run_case(agent: &Path, server: &Server, case: &Case, dir: &Path) -> anyhow::Result<Outcome> {
    let mut args: Vec<String> = vec!["--api".into(), case.api.into()];
    if !case.stream {
        args.push("--no-stream".into());
    }
    args.extend(case.args.iter().map(|arg| (*arg).to_owned()));
    let model = case.model.unwrap_or(server.kind.model());
    run_agent(agent, server, model, &args, case.prompt, dir)
}

fn run_agent(
    agent: &Path,
    server: &Server,
    model: &str,
    args: &[String],
    prompt: &str,
    dir: &Path,
) -> anyhow::Result<Outcome> {
    let workspace = dir.join("workspace");
    let data = dir.join("data");
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(workspace.join("notes.txt"), NOTES)?;
    let mut command = Command::new(agent);
    command
        .args(["--base-url", &server.base_url(), "--model", model])
        .args(args)
        .args(["exec", "--json", prompt])
        .current_dir(&workspace)
        .env("AGENT_DATA_DIR", &data)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("AGENT_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if server.kind == Kind::Litellm {
        command.env("OPENAI_API_KEY", LITELLM_KEY);
    }
    let started = Instant::now();
    let mut child = command.spawn().context("starting agent")?;
    let mut stderr_pipe = child.stderr.take().context("agent stderr")?;
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let stdout = BufReader::new(child.stdout.take().context("agent stdout")?);
    let mut events = Vec::new();
    // The run ends when the agent closes stdout; a hung run is killed after ten minutes.
    let deadline = started + Duration::from_secs(600);
    for line in stdout.lines() {
        let line = line?;
        if let Ok(event) = serde_json::from_str::<Value>(&line) {
            events.push((started.elapsed(), event));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
    }
    let status = child.wait()?;
    let stderr = stderr_reader.join().unwrap_or_default();
    let items = crate::demo::transcript(&data).unwrap_or_default();
    Ok(Outcome { code: status.code(), events, stderr, items })
}

/// Checks a run; on success returns a note for the report line (what the model said).
fn check(case: &Case, outcome: &Outcome) -> anyhow::Result<String> {
    let finished = outcome
        .events
        .iter()
        .rev()
        .find(|(_, event)| event["type"] == "run.completed" || event["type"] == "run.failed");
    let reason = finished
        .map(|(_, event)| {
            if event["type"] == "run.completed" {
                "answered"
            } else {
                event["reason"].as_str().unwrap_or("")
            }
        })
        .unwrap_or("");
    let text = finished.and_then(|(_, event)| event["answer"].as_str()).unwrap_or("");
    let error = outcome
        .events
        .iter()
        .find(|(_, event)| event["type"] == "error")
        .and_then(|(_, event)| event["message"].as_str())
        .unwrap_or("");
    let context = || {
        format!(
            "exit {:?}, finished {reason:?}, text {text:?}, error {error:?}\nstderr: {}",
            outcome.code,
            outcome.stderr.trim()
        )
    };
    valid_transcript(&outcome.items)
        .map_err(|problem| anyhow::anyhow!("{problem}; {}", context()))?;
    if let Some(tool) = case.tool {
        let ran = outcome.items.iter().any(|item| {
            item["type"] == "tool_call"
                && item["name"] == tool
                && outcome.items.iter().any(|other| {
                    other["type"] == "tool_output" && other["call_id"] == item["call_id"]
                })
        });
        if !ran {
            bail!("the model's {tool} call did not run; {}", context());
        }
    }
    let answered = outcome.code == Some(0) && reason == "answered" && !text.trim().is_empty();
    let turn_limit = outcome.code == Some(1) && reason == "max_turns";
    let model_error = outcome.code == Some(1) && reason == "model_error" && !error.is_empty();
    let ok = match case.end {
        End::Clean => answered || turn_limit,
        // The words, whatever joins them: a 135M model quoting the tool's `HELLO WORLD` back
        // sometimes writes `HELLO_WORLD` (it did once the instructions stopped naming tools the
        // agent did not have), and what the case checks is that the tool's output reached it.
        End::AnswerWith(expected) => answered && text.replace('_', " ").contains(expected),
        End::TurnLimit => turn_limit,
        End::ModelError(expected) => model_error && error.contains(expected),
        End::Clear => answered || turn_limit || model_error,
    };
    if !ok {
        bail!("expected {:?}; {}", case.end, context());
    }
    Ok(match reason {
        "answered" => format!(" — answered {:?}", shorten(text)),
        "max_turns" => " — turn limit".to_owned(),
        _ => format!(" — model error: {}", shorten(error)),
    })
}

/// Every tool call has exactly one output, after it, and every output answers a call.
fn valid_transcript(items: &[Value]) -> Result<(), String> {
    if items.is_empty() {
        return Err("no transcript was written".to_owned());
    }
    for (position, item) in items.iter().enumerate() {
        let id = &item["call_id"];
        match item["type"].as_str() {
            Some("tool_call") => {
                let outputs = items[position..]
                    .iter()
                    .filter(|other| other["type"] == "tool_output" && other["call_id"] == *id)
                    .count();
                if outputs != 1 {
                    return Err(format!("call {id} has {outputs} outputs"));
                }
            }
            Some("tool_output")
                if !items[..position]
                    .iter()
                    .any(|o| o["type"] == "tool_call" && o["call_id"] == *id) =>
            {
                return Err(format!("output {id} answers no earlier call"));
            }
            _ => {}
        }
    }
    Ok(())
}

fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(100) {
        Some((end, _)) => format!("{}…", &one_line[..end]),
        None => one_line,
    }
}

/// The real-model figures for `cargo xtask bench`: against llama-cpp-python (chatml) and
/// llama-server, one whole run each with every default tool, turn 1 forced to a tool call:
/// `realmodel.<server>.first_request_tokens` (the server's `usage.prompt_tokens` of turn 1),
/// `realmodel.<server>.turn1_ms` and `.turn2_ms` (turn start to the turn's usage event; a turn 2
/// well under turn 1 shows the server's prompt cache being hit).
pub(crate) fn bench_figures(root: &Path, agent: &Path) -> anyhow::Result<Vec<Figure>> {
    servers::setup(root)?;
    let scratch =
        std::env::temp_dir().join(format!("agent-realmodel-bench-{}", std::process::id()));
    let mut figures = Vec::new();
    for (kind, label) in [(Kind::Chatml, "llama_cpp_python"), (Kind::LlamaServer, "llama_server")] {
        let server = servers::start(root, kind, &[], &scratch.join("logs"))?;
        // llama-server reads only the string forms of `tool_choice` (see its cases).
        let (choice, prompt) = match kind {
            Kind::LlamaServer => ("required", UPPERCASE_JSON),
            _ => ("uppercase", UPPERCASE),
        };
        let args: Vec<String> =
            ["--api", "chat", "--no-stream", "--tool-choice", choice, "--max-turns", "2"]
                .iter()
                .map(|arg| (*arg).to_owned())
                .collect();
        let outcome = run_agent(agent, &server, kind.model(), &args, prompt, &scratch.join(label))?;
        let turns = turn_times(&outcome.events);
        let tokens = outcome
            .events
            .iter()
            .find(|(_, event)| event["type"] == "usage")
            .and_then(|(_, event)| event["turn_usage"]["input_tokens"].as_f64())
            .with_context(|| format!("{label}: no usage reported; stderr: {}", outcome.stderr))?;
        figures.push(Figure::of(
            &format!("realmodel.{label}.first_request_tokens"),
            "tokens",
            vec![tokens],
        ));
        for (turn, ms) in turns.iter().enumerate().take(2) {
            figures.push(Figure::of(
                &format!("realmodel.{label}.turn{}_ms", turn + 1),
                "ms",
                vec![*ms],
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(figures)
}

/// Milliseconds from each `turn.started` to the first `usage` event after it.
fn turn_times(events: &[(Duration, Value)]) -> Vec<f64> {
    let mut times = Vec::new();
    let mut started = None;
    for (at, event) in events {
        match event["type"].as_str() {
            Some("turn.started") => started = Some(*at),
            Some("usage") => {
                if let Some(start) = started.take() {
                    times.push(at.saturating_sub(start).as_secs_f64() * 1000.0);
                }
            }
            _ => {}
        }
    }
    times
}
