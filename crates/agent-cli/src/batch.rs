//! `agent batch TASKS.jsonl`: many prompts, each in its own copy of its workspace, each run by a
//! child `agent exec --json` of this binary, with one result line per task, resumable after any
//! kill. The format, resume semantics and isolation are described in docs/batch.md.

mod child;
mod forward;
mod isolation;
mod journal;
mod progress;
mod record;
mod task;

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use anyhow::Context;
use clap::Args;
use tokio::{sync::watch, task::JoinSet};

use self::{
    child::Launcher,
    isolation::Place,
    journal::Journal,
    progress::Progress,
    record::{Status, TaskResult},
    task::Task,
};
use crate::Options;

/// Memory set aside for each task when `--jobs` is not given: an agent and the commands it
/// runs (a test suite, a build) rarely need more.
const MEMORY_PER_TASK: u64 = 1 << 30;

#[derive(Debug, Args)]
pub(crate) struct BatchArgs {
    /// The task file: one JSON task per line (docs/batch.md).
    tasks: PathBuf,
    /// How many tasks run at once (default: twice the cores, at most one per GiB of available
    /// memory).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    /// The batch directory: RESULTS.jsonl, patches, transcripts, state (default: the task file's
    /// path with `.batch` for its extension). Run the same command again to resume.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep each task's copy of its workspace (under DIR/work) after its result is written.
    #[arg(long)]
    keep: bool,
    /// The wall limit of tasks whose line names none, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    wall_limit: u64,
    /// The token limit (input plus output) of tasks whose line names none.
    #[arg(long, value_name = "TOKENS")]
    token_limit: Option<u64>,
}

/// What every task's future shares.
struct Shared {
    journal: Journal,
    launcher: Launcher,
    progress: Mutex<Progress>,
    /// Held while a result is written, so lines of RESULTS.jsonl never interleave.
    writing: Mutex<()>,
    keep: bool,
    node: String,
}

/// Runs the batch; 0 when every task completed, 1 when one did not, 2 for a bad task file or
/// options, 130 on Ctrl-C.
pub(crate) fn run(options: &Options, args: BatchArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.tasks)
        .with_context(|| format!("reading {}", args.tasks.display()))?;
    let tasks_path = std::path::absolute(&args.tasks)?;
    let base = tasks_path.parent().map(PathBuf::from).unwrap_or_default();
    let tasks = match task::parse(&text, &base) {
        Ok(tasks) => tasks,
        Err(errors) => {
            for error in &errors {
                eprintln!("agent: {}:{error}", args.tasks.display());
            }
            eprintln!("agent: {} bad lines; no task was started", errors.len());
            return Ok(ExitCode::from(2));
        }
    };
    let forwarded = forward::flags(options)?;
    let out = args.out.clone().unwrap_or_else(|| tasks_path.with_extension("batch"));
    let journal = Journal::open(&std::path::absolute(out)?)?;

    // Resume: what finished is kept, what the last run left running is killed, RESULTS.jsonl
    // holds each finished task once.
    let finished = journal.finished();
    let killed = journal.kill_leftovers();
    journal.repair(&finished)?;
    let place = |id: &str| Place {
        dir: journal.work().join(id),
        git_dir: journal.root().join("state/git").join(id),
    };
    let (done, pending): (Vec<Task>, Vec<Task>) =
        tasks.into_iter().partition(|task| finished.contains_key(&task.id));
    if !args.keep {
        for task in &done {
            isolation::remove(&task.source, &place(&task.id));
        }
    }
    let jobs = args.jobs.map_or_else(default_jobs, usize::from);
    let launcher = Launcher {
        exe: std::env::current_exe().context("finding this binary")?,
        forwarded,
        data_dir: journal.root().join("data"),
        logs: journal.root().join("state/logs"),
        wall: Duration::from_secs(args.wall_limit),
        tokens: args.token_limit,
    };
    let progress = Progress::new(done.len() + pending.len(), done.len());
    if killed > 0 {
        progress.line(&format!("stopped {killed} agents an earlier run left running"));
    }
    let shared = Arc::new(Shared {
        journal,
        launcher,
        progress: Mutex::new(progress),
        writing: Mutex::new(()),
        keep: args.keep,
        node: record::host_name(),
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cancelled = runtime.block_on(schedule(Arc::clone(&shared), pending, jobs))?;
    let progress = shared.progress.lock().unwrap_or_else(PoisonError::into_inner);
    progress.clear();
    let results_path = shared.journal.root().join("RESULTS.jsonl");
    if cancelled {
        eprintln!("agent: batch interrupted; run the same command again to resume");
        return Ok(ExitCode::from(130));
    }
    let finished = shared.journal.finished();
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for result in finished.values() {
        *counts.entry(result.status.name()).or_default() += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(name, n)| format!("{n} {name}")).collect();
    eprintln!("agent: {}; results in {}", summary.join(", "), results_path.display());
    let all_completed = finished.values().all(|result| result.status == Status::Completed);
    Ok(ExitCode::from(if all_completed { 0 } else { 1 }))
}

/// Runs `pending` tasks, `jobs` at a time, until all have results or Ctrl-C (or SIGTERM)
/// stops them; true when stopped.
async fn schedule(shared: Arc<Shared>, pending: Vec<Task>, jobs: usize) -> anyhow::Result<bool> {
    let (cancel, cancelled) = watch::channel(false);
    let permits = Arc::new(tokio::sync::Semaphore::new(jobs));
    let mut set = JoinSet::new();
    for task in pending {
        let (shared, permits, cancelled) =
            (Arc::clone(&shared), Arc::clone(&permits), cancelled.clone());
        set.spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else { return };
            if !*cancelled.borrow() {
                one(&shared, task, cancelled).await;
            }
        });
    }
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let mut stopping = false;
    loop {
        tokio::select! {
            joined = set.join_next() => if joined.is_none() { break },
            _ = &mut interrupt, if !stopping => stopping = true,
            _ = terminate.recv(), if !stopping => stopping = true,
        }
        if stopping && !*cancel.borrow() {
            let _ = cancel.send(true);
            permits.close();
            let progress = shared.progress.lock().unwrap_or_else(PoisonError::into_inner);
            progress.line("stopping: killing every running task");
        }
    }
    Ok(stopping)
}

/// Runs one task from its copy to its result line.
async fn one(shared: &Arc<Shared>, task: Task, cancelled: watch::Receiver<bool>) {
    let place = Place {
        dir: shared.journal.work().join(&task.id),
        git_dir: shared.journal.root().join("state/git").join(&task.id),
    };
    let source = task.source.clone();
    let prepare_place = place.clone();
    let prepared =
        tokio::task::spawn_blocking(move || isolation::prepare(&source, &prepare_place)).await;
    let copy = match prepared {
        Ok(Ok(copy)) => copy,
        failed => {
            let why = match failed {
                Ok(Err(err)) => format!("{err:#}"),
                Err(err) => err.to_string(),
                Ok(Ok(_)) => String::new(),
            };
            let message = format!("preparing its workspace: {why}");
            let result = TaskResult::error(&task.id, message, &shared.node);
            return finish(shared, task, place, result).await;
        }
    };
    let attempt = shared.journal.attempts(&task.id) + 1;
    let on_start = Arc::clone(shared);
    let (id, dir) = (task.id.clone(), copy.dir.clone());
    let started = move |pgid| {
        on_start.journal.started(&id, attempt, pgid, &dir);
        on_start.progress.lock().unwrap_or_else(PoisonError::into_inner).started();
    };
    let outcome = shared.launcher.run(&task, &copy.dir, cancelled, started).await;
    if outcome.interrupted {
        // No result: the next run starts this task again, from a fresh copy.
        return;
    }
    let patched = tokio::task::spawn_blocking(move || isolation::patch(&copy)).await;
    let mut message = outcome.message;
    let patch = match patched {
        Ok(Ok(bytes)) if bytes.is_empty() => None,
        Ok(Ok(bytes)) => shared.journal.patch(&task.id, &bytes).ok(),
        Ok(Err(err)) => {
            message.get_or_insert_with(|| format!("taking its patch: {err:#}"));
            None
        }
        Err(_) => None,
    };
    let transcript = outcome
        .session_id
        .as_ref()
        .map(|id| format!("data/sessions/{id}/transcript.jsonl"))
        .filter(|path| shared.journal.root().join(path).is_file());
    let result = TaskResult {
        id: task.id.clone(),
        status: outcome.status.unwrap_or(Status::Error),
        exit_code: outcome.exit_code,
        reason: outcome.reason,
        message,
        answer: outcome.answer,
        patch,
        tokens_in: outcome.tokens_in,
        tokens_out: outcome.tokens_out,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        session_id: outcome.session_id,
        transcript,
        node: shared.node.clone(),
    };
    finish(shared, task, place, result).await;
}

/// Writes a task's result, shows it, and removes its copy unless `--keep` (off the runtime's
/// thread, so the other tasks' streams are read meanwhile).
async fn finish(shared: &Shared, task: Task, place: Place, result: TaskResult) {
    {
        let _writing = shared.writing.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = shared.journal.record(&result) {
            let progress = shared.progress.lock().unwrap_or_else(PoisonError::into_inner);
            progress.line(&format!("{}: writing its result failed: {err:#}", task.id));
            return;
        }
    }
    shared.progress.lock().unwrap_or_else(PoisonError::into_inner).finished(&result);
    if !shared.keep {
        let _ = tokio::task::spawn_blocking(move || isolation::remove(&task.source, &place)).await;
    }
}

/// Twice the cores (tasks mostly wait for the model), at most one task per [`MEMORY_PER_TASK`]
/// of available memory, at least one.
fn default_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|line| line.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    let by_memory = available.map_or(usize::MAX, |bytes| (bytes / MEMORY_PER_TASK) as usize);
    (2 * cores).min(by_memory).max(1)
}
