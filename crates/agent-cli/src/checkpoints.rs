//! The REPL's `/undo` and `/rewind` over the session's checkpoints (docs/checkpoints.md).

use agent_checkpoints::{self as checkpoint, Store, UndoOptions};
use agent_session::{Session, fork, log::SessionLog};

use crate::cmd::undo::{pick, render};

/// `/undo`: the last turn not undone yet, conflicts left alone.
pub(crate) fn undo_last(session: &Session) -> anyhow::Result<String> {
    let mut store = Store::open(session.log.dir(), u64::MAX)?;
    let Some(id) = pick(&store.records()?, None, false) else {
        return Ok("agent: no turn of this session changed a file; nothing to undo\n".to_owned());
    };
    let root = session.agent.executor().policy().workspace().root().to_path_buf();
    let report = checkpoint::undo(&mut store, &root, id, UndoOptions::default())?;
    Ok(render(&report, UndoOptions::default()))
}

/// `/rewind N [files|conversation|both]` (default both): files undoes every turn after N, newest
/// first; conversation continues in a new session forked at turn N, the old one kept whole.
pub(crate) fn rewind(session: &mut Session, args: &str) -> anyhow::Result<String> {
    let mut words = args.split_whitespace();
    let Some(turn) = words.next().and_then(|word| word.parse::<u32>().ok()) else {
        return Ok(
            "agent: /rewind takes a turn number: /rewind N [files|conversation|both]\n".to_owned()
        );
    };
    let what = words.next().unwrap_or("both");
    let (files, conversation) = match what {
        "files" => (true, false),
        "conversation" => (false, true),
        "both" => (true, true),
        other => {
            return Ok(format!("agent: /rewind {turn} {other}: say files, conversation or both\n"));
        }
    };
    let mut out = String::new();
    if files {
        let mut store = Store::open(session.log.dir(), u64::MAX)?;
        let root = session.agent.executor().policy().workspace().root().to_path_buf();
        loop {
            let records = store.records()?;
            let Some(id) = pick(&records, None, false) else { break };
            if records.iter().find(|r| r.id == id).is_none_or(|r| r.turn <= turn) {
                break;
            }
            let report = checkpoint::undo(&mut store, &root, id, UndoOptions::default())?;
            out.push_str(&render(&report, UndoOptions::default()));
            if report.recorded_as.is_none() && !report.conflicts.is_empty() {
                break;
            }
        }
    }
    if conversation {
        let old = session.log.id().to_owned();
        let new = fork::fork(&format!("{old}:{turn}"))?;
        let secrets = session.log.transcript().secrets().to_vec();
        session.log = SessionLog::open(Some(&new), secrets)?;
        let resumed = session.log.resumed_conversation(&crate::setup::Terminal)?;
        session.agent.set_conversation(resumed);
        if let Some(checkpoints) = session.agent.executor().checkpoints() {
            checkpoints.switch(session.log.dir())?;
        }
        out.push_str(&format!(
            "agent: the conversation continues in session {new}, forked at turn {turn}; \
             session {old} is kept whole (--resume {old})\n"
        ));
    }
    Ok(out)
}
