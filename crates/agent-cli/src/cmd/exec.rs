//! `agent exec PROMPT`: one prompt, non-interactively, with exit codes a script can rely on.

use std::{io::Read, panic::AssertUnwindSafe, path::PathBuf, process::ExitCode};

use agent_exec::{PermissionMode, agent::Finish, jobs::EndPolicy};
use anyhow::Context;
use clap::Args;

use crate::organizer::Shown as _;
use crate::{
    Options,
    events::{self, ExecEvent, FailReason},
    hooks::Trust,
    markdown::Screen,
    notices::Notices,
    render::Renderer,
    setup::{self, Launch, StoppedByHook},
};

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The prompt; `-` reads it from standard input.
    prompt: String,
    /// Print one JSON event per line on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Continue the session with this id (printed at the end of every run).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Play a recorded transcript (a session's transcript.jsonl) back as the model, offline;
    /// the tools run again for real.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Ask for a final answer matching this JSON Schema (a file), check it, ask once more when
    /// it does not fit, and print the JSON alone on stdout.
    #[arg(long, value_name = "FILE")]
    output_schema: Option<PathBuf>,
    /// Also write the final answer to this file.
    #[arg(short = 'o', long, value_name = "FILE")]
    output_last_message: Option<PathBuf>,
    /// What happens to background jobs still running when the model has answered: `kill` them
    /// (SIGTERM, SIGKILL after 2 s) or `wait` until they finish. The last event reports it.
    #[arg(long, value_enum, default_value_t = JobsAtEnd::Kill)]
    jobs: JobsAtEnd,
}

/// `--jobs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum JobsAtEnd {
    Kill,
    Wait,
}

/// Runs the prompt; 0 answered, 1 agent failure, 2 usage or configuration error, 130 interrupted.
pub(crate) fn run(options: &Options, args: ExecArgs) -> anyhow::Result<ExitCode> {
    // Nobody is there to answer an approval prompt, so calls that would ask are denied; the
    // renderer names the flag that would allow them.
    let launch = Launch {
        resume: args.resume.as_deref(),
        replay: args.replay.clone(),
        default_mode: PermissionMode::DontAsk,
        approver: None,
        asker: None,
        mcp_servers: Vec::new(),
        trust: Trust::OnlyTrusted,
    };
    // Read before the session starts, so a bad schema is a usage error with nothing begun.
    let output_schema = args.output_schema.as_deref().map(read_output_schema).transpose()?;
    let runtime = setup::tokio_runtime()?;
    let mut session = match setup::open(options, launch, &runtime)? {
        Ok(session) => session,
        Err(code) => return Ok(code),
    };
    let structured = output_schema.is_some();
    session.agent.config_mut().output_schema = output_schema;
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading the prompt from stdin")?;
        text
    } else {
        args.prompt
    };
    // `agent exec '/name args'` runs a custom command (docs/skills.md).
    let prompt = match session.extras.commands.expand_line(&prompt) {
        Some(expanded) => expanded?,
        None => prompt,
    };

    let mut renderer = Renderer::new(args.json);
    renderer.work.set_previewer(crate::preview::Previewer::for_session(&session));
    renderer.organizer = Some(session.organizer.clone());
    if args.json {
        session.organizer.stream_json();
    }
    // With an output schema, stdout is the checked JSON alone: nothing is streamed, since a
    // first answer that does not fit is asked for again.
    renderer.stream_text = !structured;
    // On a terminal the answer is rendered; through a pipe it is the model's text unchanged.
    if !args.json && !structured {
        renderer.markdown = Screen::detect();
    }
    if args.json {
        events::print(&ExecEvent::RunStarted {
            schema_version: events::SCHEMA_VERSION,
            session_id: session.log.id().to_owned(),
            model: session.agent.model().name().to_owned(),
        });
    }
    let source = if args.resume.is_some() { "resume" } else { "startup" };
    if let Err(StoppedByHook(reason)) = runtime.block_on(session.start(source)) {
        eprintln!("agent: a SessionStart hook stopped the session: {reason}");
        renderer.failed(FailReason::Stopped, reason, 1);
        return Ok(ExitCode::from(1));
    }
    // While the model is silent, stderr says so every `model_waiting_notice_secs`.
    let notices =
        session.waiting_notice.map(|every| Notices::start(session.waiting.clone(), every));
    // Whatever ends the run, a `--json` reader gets its last event: a panic is caught here (a
    // panic inside a tool is already an observation) and reported before the process exits.
    let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(session.prompt(prompt, &mut |event| renderer.show(event)))
    }));
    drop(notices);
    let finish = match run {
        Ok(Ok(finish)) => finish,
        Ok(Err(err)) => {
            let err = anyhow::Error::from(err);
            renderer.failed(FailReason::Error, crate::terminal::error_text(&err), 1);
            return Err(err);
        }
        Err(panic) => {
            renderer.failed(FailReason::Panic, "the agent crashed; this is a bug".to_owned(), 101);
            std::panic::resume_unwind(panic);
        }
    };
    let policy = match args.jobs {
        JobsAtEnd::Kill => EndPolicy::Kill,
        JobsAtEnd::Wait => EndPolicy::Wait,
    };
    let ended = runtime.block_on(session.end_jobs(policy));
    renderer.jobs_ended(events::BackgroundJobs::new(policy, ended));
    runtime.block_on(session.end("other"));
    if let (Some(path), Finish::Answered(answer)) = (&args.output_last_message, &finish) {
        std::fs::write(path, answer).with_context(|| format!("writing {}", path.display()))?;
    }
    let code = exit_code(&finish);
    renderer.finish(&finish, code);
    if !args.json {
        eprintln!("{}", session.log.farewell());
    }
    Ok(ExitCode::from(code))
}

/// The exit code of a finished run.
pub(crate) fn exit_code(finish: &Finish) -> u8 {
    match finish {
        Finish::Answered(_) => 0,
        Finish::Cancelled => 130,
        Finish::MaxTurns(turns) => {
            eprintln!("agent: stopped after {turns} turns without an answer (raise --max-turns)");
            1
        }
        Finish::InvalidOutput(problem) => {
            eprintln!("agent: the answer does not match the output schema: {problem}");
            1
        }
        Finish::ModelError(_) | Finish::Stopped(_) => 1,
    }
}

/// Reads `--output-schema FILE`: a JSON Schema with a strict form, or a usage error saying why
/// not.
fn read_output_schema(path: &std::path::Path) -> anyhow::Result<agent_core::OutputSchema> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the output schema {}", path.display()))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("the output schema {} is not JSON", path.display()))?;
    agent_core::OutputSchema::new("final_answer", schema).with_context(|| {
        format!("the output schema {} cannot be sent in strict form", path.display())
    })
}
