//! The interactive REPL (`agent` or `agent chat`): line editing with history, streaming answers,
//! approval prompts and slash commands. One conversation lasts until `/clear` or the end.

use std::{io::IsTerminal as _, path::PathBuf, process::ExitCode, sync::Arc, time::Instant};

use agent_exec::{
    PermissionMode,
    agent::{AgentEvent, Finish, FinishReason},
    jobs::EndPolicy,
};
use clap::Args;
use rustyline::{Editor, error::ReadlineError, history::FileHistory};

use crate::organizer::Shown as _;
use crate::{
    Options,
    approval::TerminalApprover,
    hooks::Trust,
    markdown::Screen,
    notify::{Event, Notifier},
    preview::{Style, short},
    render::Renderer,
    session::SessionLog,
    setup::{self, Launch, Session, StoppedByHook},
    spinner::Spinner,
    status::{self, Tally},
    status_line::StatusLine,
    terminal::visible_line,
};

#[derive(Debug, Default, Args)]
pub(crate) struct ChatArgs {
    /// Continue the session with this id.
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Play a recorded transcript (a session's transcript.jsonl) back as the model, offline.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
}

const HELP: &str = "\
Type a request and press Enter. Ctrl-C cancels the running turn (background jobs keep running);
Ctrl-D or /exit quits and kills the jobs.
  /help   this help
  /tools  the tools the model may call
  /jobs   the background jobs, running and finished
  /plan   the model's plan, as a checklist
  /status  the model, server, session, sandbox, permissions, tokens used and context filled
  /network [allow NAME]  the session proxy's refusals, or allow NAME on the spot (allow-list mode)
  /model [NAME]  show the model, or switch to NAME from the next prompt on
  /context  what the next request carries, the window, and the AGENTS.md files read
  /compact  compact the conversation now (summary and ledger of the older turns)
  /last   the last tool call in full: arguments, status, diff and whole output
  /diff   every file change of this session
  /clear  start a new conversation (a new session)
  /undo   undo the last turn's file changes (commands' writes included)
  /rewind N [files|conversation|both]  back to the end of turn N; the conversation forks
  /exit   quit";

/// The built-in slash commands, for Tab completion.
const BUILTINS: &[&str] = &[
    "help", "tools", "jobs", "status", "model", "context", "compact", "last", "diff", "clear",
    "exit",
];

/// What one input line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A request for the model.
    Prompt(String),
    Help,
    Tools,
    Jobs,
    Status,
    Plan,
    /// `/model` alone shows the model; with a name, switches to it.
    Model(Option<String>),
    Context,
    Compact,
    Last,
    Diff,
    Clear,
    /// `/undo`: the last turn's file changes.
    Undo,
    /// `/rewind N [files|conversation|both]`.
    Rewind(String),
    Exit,
    /// Nothing to do (a blank line).
    Empty,
    /// `/network` shows the proxy's refusals; `/network allow NAME` allows a name on the spot.
    Network(Option<String>),
    /// A slash command that does not exist.
    Unknown(String),
}

fn parse_line(line: &str) -> Line {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Line::Empty;
    }
    if let Some(rest) = trimmed.strip_prefix("/network")
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    {
        return Line::Network(rest.trim().strip_prefix("allow").map(|name| name.trim().to_owned()));
    }
    // `/model NAME` is the one command with an argument; model names hold no spaces.
    if let Some(rest) = trimmed.strip_prefix("/model")
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
        && rest.split_whitespace().count() <= 1
    {
        return Line::Model(rest.split_whitespace().next().map(str::to_owned));
    }
    if let Some(rest) = trimmed.strip_prefix("/rewind")
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    {
        return Line::Rewind(rest.trim().to_owned());
    }
    // A path such as `/etc/hosts what is this?` is a prompt, not a command: commands are one word.
    let Some(command) = trimmed.strip_prefix('/').filter(|rest| !rest.contains(['/', ' '])) else {
        return Line::Prompt(trimmed.to_owned());
    };
    match command {
        "help" | "?" => Line::Help,
        "tools" => Line::Tools,
        "jobs" => Line::Jobs,
        "context" => Line::Context,
        "status" => Line::Status,
        "plan" => Line::Plan,
        "compact" => Line::Compact,
        "last" => Line::Last,
        "diff" => Line::Diff,
        "clear" | "new" => Line::Clear,
        "undo" => Line::Undo,
        "exit" | "quit" | "q" => Line::Exit,
        other => Line::Unknown(other.to_owned()),
    }
}

/// Runs the REPL until `/exit` or end of input; 0 unless it could not start.
pub(crate) fn run(options: &Options, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let approver = Arc::new(TerminalApprover::new());
    let launch = Launch {
        resume: args.resume.as_deref(),
        replay: args.replay.clone(),
        default_mode: PermissionMode::Default,
        approver: Some(approver.clone()),
        // The approval prompts' reader answers the model's questions too (question.rs).
        asker: Some(approver.clone()),
        mcp_servers: Vec::new(),
        trust: Trust::Ask,
    };
    let tokio = setup::tokio_runtime()?;
    let mut session = match setup::open(options, launch, &tokio)? {
        Ok(session) => session,
        Err(code) => return Ok(code),
    };
    approver.set_previewer(crate::preview::Previewer::for_session(&session));
    let config = options.config.clone().or_else(crate::config::ConfigFile::default_path);
    let notifier = Arc::new(Notifier::load(config.as_deref(), session.log.id())?);
    notifier.set_session(session.log.id(), session.agent.executor().hooks().clone());
    approver.set_notifier(notifier.clone());
    let mut status_line = StatusLine::load(config.as_deref())?;
    let source = if args.resume.is_some() { "resume" } else { "startup" };
    if let Err(StoppedByHook(reason)) = tokio.block_on(session.start(source)) {
        eprintln!("agent: a SessionStart hook stopped the session: {reason}");
        return Ok(ExitCode::from(1));
    }
    let mut editor = Editor::<crate::completer::SlashCompleter, FileHistory>::new()?;
    editor.set_helper(Some(crate::completer::SlashCompleter::new(
        BUILTINS,
        &session.extras.commands,
    )));
    let history = SessionLog::root()?.parent().map(|dir| dir.join("history.txt"));
    if let Some(path) = &history {
        // A missing history file is the normal first run.
        let _ = editor.load_history(path);
    }
    eprintln!(
        "agent {} · {} · session {} · /help for commands, Ctrl-D to quit",
        env!("CARGO_PKG_VERSION"),
        session.agent.model().name(),
        session.log.id()
    );
    let spinner = Arc::new(Spinner::new(session.waiting.clone(), session.waiting_notice));
    let mut renderer = Renderer::new(false);
    renderer.organizer = Some(session.organizer.clone());
    // A rendered answer prints nothing until its first block is complete: the spinner keeps
    // turning until then.
    let stopper = Arc::clone(&spinner);
    renderer.before_text = Some(Box::new(move || stopper.stop()));
    // What the server reported for this session (reset by `/clear`, which starts a new one).
    let mut tokens = Tally::default();
    renderer.work.set_previewer(crate::preview::Previewer::for_session(&session));
    loop {
        // After Ctrl-C at an approval prompt, its reader still owns the next line typed.
        if approver.is_reading() {
            eprint!("› ");
        } else if std::io::stderr().is_terminal() {
            // The status line is drawn above the prompt when it changed: after a turn, a new
            // model, a job that started or ended; never over what the user types.
            let facts = status::Facts::of(&session, tokens);
            let snapshot = status_line.snapshot(&facts, session.running_jobs().len());
            if let Some(line) = status_line.next(&snapshot, Style::stderr().width) {
                eprintln!("{line}");
            }
        }
        let read = match approver.take_line() {
            Some(Some(line)) => Ok(line),
            Some(None) => Err(ReadlineError::Eof),
            None => editor.readline(&prompt_text(session.running_jobs().len())),
        };
        let line = match read {
            Ok(line) => line,
            // Ctrl-C at the prompt only clears the line, as in a shell.
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(err) => return Err(err.into()),
        };
        // A custom command runs as its prompt; a built-in of the same name wins.
        let parsed = match parse_line(&line) {
            Line::Unknown(_) | Line::Prompt(_)
                if let Some(expanded) = session.extras.commands.expand_line(&line) =>
            {
                match expanded {
                    Ok(prompt) => Line::Prompt(prompt),
                    // A command that repeats its arguments too often is not sent (docs/skills.md).
                    Err(err) => {
                        eprintln!("{err}");
                        Line::Empty
                    }
                }
            }
            parsed => parsed,
        };
        match parsed {
            Line::Empty => {}
            Line::Help => {
                eprintln!("{HELP}{}", crate::commands::help_section(&session.extras.commands))
            }
            Line::Tools => eprintln!("{}", tool_list(&session)),
            Line::Context => {
                // The user asked about the window, so the server's answer is worth waiting for.
                if let Some(probe) = session.window_probe.take() {
                    let _ = tokio.block_on(probe);
                }
                eprintln!("{}", context_report(&session));
            }
            Line::Status => eprintln!("{}", status::report(&status::Facts::of(&session, tokens))),
            Line::Network(allow) => {
                eprintln!("{}", crate::network::repl(session.proxy.as_deref(), allow.as_deref()))
            }
            Line::Plan => eprintln!("{}", session.organizer.checklist()),
            Line::Model(None) => eprintln!("  {}", session.model_name()),
            Line::Model(Some(name)) => match session.switch_model(&name) {
                Ok(()) => eprintln!("agent: model {name} from the next prompt on"),
                Err(err) => eprintln!("agent: {}", crate::terminal::error_text(&err.into())),
            },
            Line::Compact => {
                let cancel = agent_core::CancellationToken::new();
                let log = &mut session.log;
                let compacted = tokio.block_on(session.agent.compact(&cancel, |event| {
                    eprintln!("{}", render_compaction(&event));
                    // The compacted state goes to the transcript, so `--resume` starts from it.
                    let _ = log.transcript_mut().record(&event);
                }));
                if compacted.is_none() {
                    eprintln!("agent: this session manages no context window");
                }
            }
            Line::Last => eprint!("{}", renderer.work.last(&Style::stderr())),
            Line::Diff => eprint!("{}", renderer.work.diff(&Style::stderr())),
            Line::Undo => eprint!("{}", crate::checkpoints::undo_last(&session)?),
            Line::Rewind(args) => eprint!("{}", crate::checkpoints::rewind(&mut session, &args)?),
            Line::Jobs => {
                let lines = session.job_lines();
                if lines.is_empty() {
                    eprintln!("  (no jobs)");
                }
                for line in lines {
                    eprintln!("  {line}");
                }
            }
            Line::Clear => {
                // A new session: the old one's jobs end with it.
                report_jobs(&tokio.block_on(session.end_jobs(EndPolicy::Kill)));
                tokio.block_on(session.end("clear"));
                session.clear()?;
                renderer.work.clear();
                if let Err(StoppedByHook(reason)) = tokio.block_on(session.start("clear")) {
                    eprintln!("agent: a SessionStart hook stopped the session: {reason}");
                    break;
                }
                tokens = Tally::default();
                notifier.set_session(session.log.id(), session.agent.executor().hooks().clone());
                eprintln!("agent: new conversation, session {}", session.log.id());
            }
            Line::Exit => break,
            Line::Unknown(command) => eprintln!("agent: no command /{command}; /help lists them"),
            Line::Prompt(prompt) => {
                let _ = editor.add_history_entry(&prompt);
                // Asked again for each prompt, so a resized terminal wraps at its new width.
                renderer.markdown = Screen::detect();
                let started = Instant::now();
                let mut turn = Tally::default();
                let mut show = |event: &AgentEvent| {
                    if let AgentEvent::Usage { usage } = event {
                        turn.add(usage);
                    }
                    match event {
                        // The request follows the turn's start (and any compaction line): the
                        // spinner turns while the model is asked.
                        AgentEvent::TurnStarted { .. } | AgentEvent::Request { .. } => {
                            spinner.start();
                        }
                        AgentEvent::Usage { .. }
                        | AgentEvent::ReasoningDelta { .. }
                        | AgentEvent::TextDelta { .. }
                        | AgentEvent::ItemAdded { .. } => {}
                        _ => spinner.stop(),
                    }
                    renderer.show(event);
                    if let AgentEvent::Finished { reason: FinishReason::Cancelled, .. } = event {
                        eprintln!("agent: turn cancelled");
                    }
                };
                let finish = tokio.block_on(session.prompt(prompt, &mut show))?;
                spinner.stop();
                tokens.merge(&turn);
                let line = status::turn_line(&turn, started.elapsed(), status::fill(&session));
                eprintln!("{}", status::dim_on_stderr(&line));
                let last = if let Finish::Answered(text) = &finish { text.as_str() } else { "" };
                notifier.notify(Event::TurnEnded, last);
                if let Finish::MaxTurns(turns) = finish {
                    eprintln!(
                        "agent: stopped after {turns} turns without an answer (raise --max-turns)"
                    );
                }
            }
        }
    }
    if let Some(path) = &history
        && let Err(err) = editor.save_history(path)
    {
        eprintln!("agent: warning: history not saved to {}: {err}", path.display());
    }
    // The session ends here: its jobs are killed (SIGTERM, SIGKILL after 2 s).
    report_jobs(&tokio.block_on(session.end_jobs(EndPolicy::Kill)));
    tokio.block_on(session.end("exit"));
    eprintln!("{}", session.log.farewell());
    Ok(ExitCode::SUCCESS)
}

fn render_compaction(event: &AgentEvent) -> String {
    match event {
        AgentEvent::Compaction { info, .. } => crate::render::compaction_line(info),
        _ => String::new(),
    }
}

/// What the next request carries, the window and where it came from, and the project
/// instructions read.
fn context_report(session: &Session) -> String {
    let mut text = String::new();
    if let Some(usage) = session.agent.context_usage() {
        let percent = |tokens: u64| tokens * 100 / usage.window.max(1);
        text.push_str(&format!(
            "  instructions  {:>8} tokens\n  tools         {:>8} tokens\n  \
             transcript    {:>8} tokens\n  total         {:>8} tokens ({}% of the window)\n  \
             free          {:>8} tokens\n  window        {:>8} tokens ({}); compaction at {} \
             tokens\n  counted with  {}\n",
            usage.instructions,
            usage.tools,
            usage.transcript,
            usage.total(),
            percent(usage.total() as u64),
            usage.free(),
            usage.window,
            usage.window_source,
            usage.threshold,
            usage.counter,
        ));
    }
    if session.project_docs.is_empty() {
        text.push_str("  project instructions: none (no AGENTS.md found, or --no-project-doc)");
    } else {
        text.push_str("  project instructions:");
        for path in &session.project_docs {
            text.push_str(&format!("\n    {}", path.display()));
        }
    }
    text
}

/// The prompt, with the number of running background jobs beside it.
fn prompt_text(jobs: usize) -> String {
    match jobs {
        0 => "› ".to_owned(),
        1 => "[1 job] › ".to_owned(),
        n => format!("[{n} jobs] › "),
    }
}

/// Says which jobs the end of a session killed.
fn report_jobs(ended: &[agent_exec::jobs::JobEnd]) {
    for job in ended {
        eprintln!("agent: killed job {} `{}`: {}", job.id, short(&job.command, 80), job.status);
    }
}

/// Each tool's name and the first line of its description.
fn tool_list(session: &Session) -> String {
    let specs = session.agent.executor().specs();
    let width = specs.iter().map(|spec| spec.name.len()).max().unwrap_or(0);
    specs
        .iter()
        .map(|spec| {
            let first = spec.description.lines().next().unwrap_or_default();
            format!("  {:width$}  {}", visible_line(&spec.name), visible_line(first))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(line: &str, expect: Line) {
        assert_eq!(parse_line(line), expect);
    }

    #[test]
    fn the_prompt_counts_running_jobs() {
        assert_eq!(prompt_text(0), "› ");
        assert_eq!(prompt_text(1), "[1 job] › ");
        assert_eq!(prompt_text(3), "[3 jobs] › ");
    }

    #[test]
    fn lines() {
        check("", Line::Empty);
        check("   \t", Line::Empty);
        check("/help", Line::Help);
        check(" /tools ", Line::Tools);
        check("/context", Line::Context);
        check("/status", Line::Status);
        check("/plan", Line::Plan);
        check("/model", Line::Model(None));
        check(" /model  gpt-5 ", Line::Model(Some("gpt-5".to_owned())));
        check("/model openai/gpt-oss-20b", Line::Model(Some("openai/gpt-oss-20b".to_owned())));
        check("/models", Line::Unknown("models".to_owned()));
        check("/model which one is best?", Line::Prompt("/model which one is best?".to_owned()));
        check("/compact", Line::Compact);
        check("/last", Line::Last);
        check("/diff", Line::Diff);
        check("/clear", Line::Clear);
        check("/undo", Line::Undo);
        check("/rewind 2 files", Line::Rewind("2 files".to_owned()));
        check("/exit", Line::Exit);
        check("/jobs", Line::Jobs);
        check("/quit", Line::Exit);
        check("/frobnicate", Line::Unknown("frobnicate".to_owned()));
        check("list the files", Line::Prompt("list the files".to_owned()));
        check("/etc/hosts: what is this?", Line::Prompt("/etc/hosts: what is this?".to_owned()));
        check("/help me please", Line::Prompt("/help me please".to_owned()));
    }
}
