//! What a session has done, read from its folder: the transcript, the checkpoints, and undoing a
//! turn, with the same store and the same report as `agent undo` (docs/checkpoints.md).

use agent_checkpoints::{self as checkpoint, RecordKind, Store, UndoOptions};
use agent_exec::Transcript;

use super::{
    api::{Checkpoint, TranscriptBody, UndoRequest, UndoResult},
    hub::{Live, Refusal},
};
use crate::cmd::undo;

/// The session's conversation as its transcript holds it.
pub(crate) fn transcript(live: &Live) -> Result<TranscriptBody, Refusal> {
    let items = Transcript::read_items(&live.opened.transcript)
        .map_err(|err| Refusal::Failed(format!("reading the transcript: {err}")))?;
    let items = items
        .iter()
        .filter_map(|item| match serde_json::to_value(item) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        })
        .collect();
    Ok(TranscriptBody { items })
}

/// The store, or why there is none.
fn store(live: &Live) -> Result<Option<Store>, Refusal> {
    if !live.opened.dir.join("checkpoints").is_dir() {
        return Ok(None);
    }
    Store::open(&live.opened.dir, u64::MAX)
        .map(Some)
        .map_err(|err| Refusal::Failed(format!("opening the checkpoints: {err}")))
}

/// The session's checkpoints, oldest first (none when checkpoints are off or nothing was
/// written yet).
pub(crate) fn checkpoints(live: &Live) -> Result<Vec<Checkpoint>, Refusal> {
    let Some(store) = store(live)? else { return Ok(Vec::new()) };
    let failed = |err: checkpoint::CheckpointError| Refusal::Failed(err.to_string());
    let turns = store.turns().map_err(failed)?;
    let records = store.records().map_err(failed)?;
    Ok(records
        .into_iter()
        .map(|record| {
            let (prompt, undo_of) = match record.kind {
                RecordKind::Turn => {
                    let mark = turns.iter().find(|mark| mark.turn == record.turn);
                    (mark.map(|mark| mark.prompt.clone()), None)
                }
                RecordKind::Undo { of } => (None, Some(of)),
            };
            Checkpoint {
                id: record.id,
                turn: record.turn,
                prompt,
                undo_of,
                paths: record.changes.iter().map(|c| c.path.display().to_string()).collect(),
                not_covered: record.not_covered.len(),
                undone_by: record.undone_by,
            }
        })
        .collect())
}

/// Undoes a turn (or redoes an undo) while no prompt runs.
pub(crate) fn undo_turn(live: &Live, request: &UndoRequest) -> Result<UndoResult, Refusal> {
    let _idle = live.claim()?;
    let Some(mut store) = store(live)? else {
        return Err(Refusal::Conflict(format!("session {} has no checkpoints", live.opened.id)));
    };
    let failed = |err: checkpoint::CheckpointError| Refusal::Failed(err.to_string());
    let records = store.records().map_err(failed)?;
    let Some(target) = undo::pick(&records, request.turn, request.redo) else {
        let what = if request.redo { "redo" } else { "undo" };
        return Err(Refusal::Conflict(format!("session {} has nothing to {what}", live.opened.id)));
    };
    let Some(root) = store.root() else {
        return Err(Refusal::Failed("the checkpoint store does not name its workspace".into()));
    };
    let options = UndoOptions { dry_run: request.dry_run, force: request.force };
    let report = checkpoint::undo(&mut store, &root, target, options).map_err(failed)?;
    let paths = |paths: &[std::path::PathBuf]| {
        paths.iter().map(|path| path.display().to_string()).collect::<Vec<_>>()
    };
    Ok(UndoResult {
        report: undo::render(&report, options),
        restored: paths(&report.restored),
        removed: paths(&report.removed),
        conflicts: report
            .conflicts
            .iter()
            .filter(|conflict| !conflict.forced)
            .map(|conflict| conflict.path.display().to_string())
            .collect(),
    })
}
