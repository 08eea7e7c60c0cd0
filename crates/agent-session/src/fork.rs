//! `--fork SESSION[:TURN]` and `/rewind`'s conversation half: a new session whose history is the
//! old one's up to the end of a turn. The old session is only read, so it stays whole and
//! resumable (docs/checkpoints.md).

use std::path::Path;

use agent_checkpoints::Store;

use crate::error::{Context, bail};

use crate::log::{SessionLog, new_id};

/// Forks `spec` (`SESSION` or `SESSION:TURN`) into a new session and returns its id. Without a
/// turn the whole history is kept.
pub fn fork(spec: &str) -> crate::Result<String> {
    let (id, turn) = match spec.rsplit_once(':') {
        Some((id, turn)) => {
            let turn: u32 =
                turn.parse().with_context(|| format!("`{turn}` is not a turn number"))?;
            (id, Some(turn))
        }
        None => (spec, None),
    };
    let root = SessionLog::root()?;
    let from = root.join(id);
    let transcript = from.join("transcript.jsonl");
    if !transcript.is_file() {
        bail!("no session `{id}` in {}", root.display());
    }
    let new = new_id();
    let to = root.join(&new);
    fork_into(&from, &to, turn)?;
    Ok(new)
}

/// Copies the session in `from` into `to`, cut after `turn`.
pub fn fork_into(from: &Path, to: &Path, turn: Option<u32>) -> crate::Result<()> {
    let text = std::fs::read(from.join("transcript.jsonl"))?;
    let has_store = from.join("checkpoints").is_dir();
    let turns = if has_store { Store::open(from, u64::MAX)?.turns()? } else { Vec::new() };
    let cut = match turn {
        None => text.len(),
        Some(0) => 0,
        Some(turn) => {
            let Some(last) = turns.last() else {
                bail!(
                    "session {} has no turns recorded, so it can only be forked whole",
                    from.display()
                )
            };
            if turn > last.turn {
                bail!(
                    "session {} has {} turn(s); there is no turn {turn}",
                    from.display(),
                    last.turn
                );
            }
            turns.iter().find(|mark| mark.turn == turn + 1).map_or(text.len(), |mark| {
                usize::try_from(mark.transcript_offset).unwrap_or(usize::MAX)
            })
        }
    };
    std::fs::create_dir_all(to)?;
    std::fs::write(to.join("transcript.jsonl"), &text[..cut.min(text.len())])?;
    if !has_store {
        return Ok(());
    }
    let keep = |t: u32| turn.is_none_or(|turn| t <= turn);
    let (src, dst) = (from.join("checkpoints"), to.join("checkpoints"));
    for sub in ["blobs", "records"] {
        std::fs::create_dir_all(dst.join(sub))?;
    }
    // Blobs never change once written, so the fork shares them by hard link.
    for entry in std::fs::read_dir(src.join("blobs"))?.flatten() {
        let target = dst.join("blobs").join(entry.file_name());
        if std::fs::hard_link(entry.path(), &target).is_err() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    let store = Store::open(from, u64::MAX)?;
    for record in store.records()? {
        if keep(record.turn) {
            let name = format!("{:06}.json", record.id);
            std::fs::copy(src.join("records").join(&name), dst.join("records").join(&name))?;
        }
    }
    let mut lines = String::new();
    for mark in turns.iter().filter(|mark| keep(mark.turn)) {
        lines.push_str(&serde_json::to_string(mark)?);
        lines.push('\n');
    }
    std::fs::write(dst.join("turns.jsonl"), lines)?;
    if let Ok(root) = std::fs::read(src.join("root")) {
        std::fs::write(dst.join("root"), root)?;
    }
    Ok(())
}
