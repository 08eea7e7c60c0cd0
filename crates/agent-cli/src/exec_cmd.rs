//! `agent exec PROMPT`: one prompt, non-interactively, with exit codes a script can rely on.

use std::{io::Read, path::PathBuf, process::ExitCode};

use agent_exec::{PermissionMode, agent::Finish};
use anyhow::Context;
use clap::Args;

use crate::{
    Options,
    render::Renderer,
    setup::{self, Launch},
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
    };
    let runtime = setup::tokio_runtime()?;
    let mut session = match setup::open(options, launch, &runtime)? {
        Ok(session) => session,
        Err(code) => return Ok(code),
    };
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading the prompt from stdin")?;
        text
    } else {
        args.prompt
    };

    let mut renderer = Renderer::new(args.json);
    let finish = runtime.block_on(session.prompt(prompt, &mut |event| renderer.show(event)))?;
    if !args.json {
        let id = session.log.id();
        eprintln!("agent: session {id} (resume with --resume {id})");
    }
    Ok(exit_code(&finish))
}

/// The exit code of a finished run.
pub(crate) fn exit_code(finish: &Finish) -> ExitCode {
    match finish {
        Finish::Answered(_) => ExitCode::SUCCESS,
        Finish::Cancelled => ExitCode::from(130),
        Finish::MaxTurns(turns) => {
            eprintln!("agent: stopped after {turns} turns without an answer (raise --max-turns)");
            ExitCode::from(1)
        }
        Finish::ModelError(_) => ExitCode::from(1),
    }
}
