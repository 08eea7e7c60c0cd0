//! `agent undo`: list a session's checkpoints, undo a turn (or redo an undo), headless; the
//! REPL's `/undo` and `/rewind` print the same report (docs/checkpoints.md).

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::ExitCode,
};

use agent_checkpoints::{self as checkpoint, Record, RecordKind, Store, UndoOptions, UndoReport};
use agent_exec::writes::NotCovered;
use anyhow::{Context, bail};
use clap::Args;

use crate::{Options, session::SessionLog, terminal::visible};

#[derive(Debug, Args)]
pub(crate) struct UndoArgs {
    /// The session (default: the latest one that has checkpoints of this workspace).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Undo this turn (default: the last turn not undone yet).
    #[arg(long, value_name = "N")]
    turn: Option<u32>,
    /// List the session's checkpoints instead.
    #[arg(long)]
    list: bool,
    /// Say what would be restored and removed; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Restore paths changed since the turn too (their current content is kept for a redo).
    #[arg(long)]
    force: bool,
    /// Undo the last undo instead.
    #[arg(long, conflicts_with = "turn")]
    redo: bool,
}

/// Runs `agent undo`: 0 when everything asked for was done, 1 when conflicts were left alone.
pub(crate) fn run(options: &Options, args: &UndoArgs) -> anyhow::Result<ExitCode> {
    let workspace = match &options.workspace {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let dir = match &args.session {
        Some(id) => SessionLog::root()?.join(id),
        None => latest_session(&workspace)?,
    };
    if !dir.join("checkpoints").is_dir() {
        bail!("session {} has no checkpoints", dir.display());
    }
    let mut store = Store::open(&dir, u64::MAX)?;
    let records = store.records()?;
    let id = dir.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    if args.list {
        print!("{}", list(&id, &store, &records)?);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(target) = pick(&records, args.turn, args.redo) else {
        bail!("session {id} has nothing to {}", if args.redo { "redo" } else { "undo" });
    };
    let root = store.root().context("the checkpoint store does not name its workspace")?;
    let options = UndoOptions { dry_run: args.dry_run, force: args.force };
    let report = checkpoint::undo(&mut store, &root, target, options)?;
    print!("{}", render(&report, options));
    let left = report.conflicts.iter().any(|conflict| !conflict.forced);
    Ok(if left { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The record to undo: the newest standing turn (of `turn`, when given), or the newest standing
/// undo for a redo.
pub(crate) fn pick(records: &[Record], turn: Option<u32>, redo: bool) -> Option<u32> {
    records
        .iter()
        .rev()
        .filter(|record| record.undone_by.is_none())
        .find(|record| match record.kind {
            RecordKind::Undo { .. } => redo,
            RecordKind::Turn => !redo && turn.is_none_or(|turn| record.turn == turn),
        })
        .map(|record| record.id)
}

/// The newest session whose store belongs to `workspace`.
fn latest_session(workspace: &Path) -> anyhow::Result<PathBuf> {
    let root = SessionLog::root()?;
    let workspace = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in
        std::fs::read_dir(&root).with_context(|| format!("reading {}", root.display()))?.flatten()
    {
        let store = entry.path().join("checkpoints");
        let Ok(recorded) = std::fs::read(store.join("root")) else { continue };
        if recorded != workspace.as_os_str().as_encoded_bytes() {
            continue;
        }
        let when = std::fs::metadata(store.join("turns.jsonl")).and_then(|m| m.modified());
        let Ok(when) = when else { continue };
        if best.as_ref().is_none_or(|(newest, _)| when > *newest) {
            best = Some((when, entry.path()));
        }
    }
    best.map(|(_, dir)| dir)
        .with_context(|| format!("no session has checkpoints of {}", workspace.display()))
}

/// The `--list` table.
fn list(id: &str, store: &Store, records: &[Record]) -> anyhow::Result<String> {
    let mut out = format!("session {id}: {} of {} bytes stored\n", store.used(), store.cap());
    let turns = store.turns()?;
    for record in records {
        let what = match record.kind {
            RecordKind::Turn => {
                let prompt =
                    turns.iter().find(|t| t.turn == record.turn).map_or("", |t| t.prompt.as_str());
                format!("turn {} \"{}\"", record.turn, visible(prompt))
            }
            RecordKind::Undo { of } => format!("undo of checkpoint {of} (turn {})", record.turn),
        };
        let state = record.undone_by.map_or(String::new(), |by| format!(", undone by {by}"));
        let _ = writeln!(
            out,
            "{:>4}  {what}: {} path(s), {} not covered{state}",
            record.id,
            record.changes.len(),
            record.not_covered.len()
        );
    }
    Ok(out)
}

/// The report, one line a path.
pub(crate) fn render(report: &UndoReport, options: UndoOptions) -> String {
    let mut out = String::new();
    let verb = if options.dry_run { "would undo" } else { "undid" };
    let _ = writeln!(out, "agent: {verb} turn {} (checkpoint {})", report.turn, report.record);
    let path = |path: &Path| visible(&path.display().to_string()).into_owned();
    for (now, back) in &report.renamed_back {
        let _ = writeln!(out, "  renamed back {} -> {}", path(now), path(back));
    }
    for restored in &report.restored {
        let _ = writeln!(out, "  restored     {}", path(restored));
    }
    for removed in &report.removed {
        let _ = writeln!(out, "  removed      {}", path(removed));
    }
    for unchanged in &report.unchanged {
        let _ = writeln!(out, "  unchanged    {} (already as before the turn)", path(unchanged));
    }
    for conflict in &report.conflicts {
        let how = if conflict.forced {
            "restored anyway (--force)"
        } else {
            "left alone; --force restores it"
        };
        let _ =
            writeln!(out, "  conflict     {}: changed since the turn, {how}", path(&conflict.path));
        for line in conflict.diff.lines() {
            let _ = writeln!(out, "    {}", visible(line));
        }
    }
    for skipped in &report.not_covered {
        let _ = writeln!(out, "  not covered  {} ({})", path(&skipped.path), why(&skipped.why));
    }
    if let Some(id) = report.recorded_as {
        let _ = writeln!(
            out,
            "agent: recorded as checkpoint {id}; `agent undo --redo` puts the turn back"
        );
    }
    out
}

/// Why a path is not covered, in words.
pub(crate) fn why(why: &NotCovered) -> String {
    match why {
        NotCovered::TooLarge { bytes, limit } => {
            format!("{bytes} bytes, over the {limit}-byte limit")
        }
        NotCovered::IgnoredDir { dir } => format!("inside the ignored directory {}", dir.display()),
        NotCovered::NotScanned => "an ignored directory too large to scan".to_owned(),
        NotCovered::GitDir => "inside .git, which checkpoints never touch".to_owned(),
        NotCovered::OutsideRoot => "outside the workspace".to_owned(),
        NotCovered::OverCap { cap } => format!("the session's store is at its {cap}-byte cap"),
        NotCovered::OutsideCall => {
            "changed while no call was running (a background job, or another program)".to_owned()
        }
        NotCovered::Unreadable { error } => format!("unreadable: {error}"),
    }
}
