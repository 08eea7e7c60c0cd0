//! Sessions on disk: one directory per session under the data directory, holding the transcript
//! (`transcript.jsonl`, written by the library's [`Transcript`]) and the full outputs of capped
//! calls.

use std::{
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use crate::error::bail;
use agent_exec::{Transcript, agent::Conversation};

/// An open session: its id, its directory and its transcript.
pub struct SessionLog {
    id: String,
    dir: PathBuf,
    transcript: Transcript,
}

impl SessionLog {
    /// The conversation of a resumed session, from the last compaction on (so it starts from the
    /// compacted state), with what a crash left repaired (docs/cli.md, "Crash recovery"): torn
    /// lines are left out with a warning, and calls that never finished get an `interrupted`
    /// output, written now so every later load and request carries them too.
    pub fn resumed_conversation(
        &mut self,
        frontend: &dyn crate::Frontend,
    ) -> crate::Result<Conversation> {
        let path = self.transcript.path().to_path_buf();
        let loaded = Transcript::load(&path)?;
        for line in &loaded.torn_lines {
            frontend.say(&format!(
                "warning: {}:{line} was cut off mid-write (a crash or a full disk) and is left \
                 out; the session resumes without it",
                path.display()
            ));
        }
        if !loaded.interrupted.is_empty() {
            frontend.say(&format!(
                "warning: {} call(s) of this session never finished (the agent was stopped while \
                 they ran); they are recorded as interrupted",
                loaded.interrupted.len()
            ));
        }
        for output in loaded.interrupted {
            self.transcript.item(&agent_core::Item::ToolOutput(output))?;
        }
        Ok(Conversation { continuation: None, ..loaded.conversation })
    }

    /// Where sessions are kept: `AGENT_DATA_DIR`, else the platform data directory.
    pub fn root() -> crate::Result<PathBuf> {
        if let Some(dir) = std::env::var_os("AGENT_DATA_DIR") {
            return Ok(PathBuf::from(dir).join("sessions"));
        }
        let Some(data) = dirs::data_dir() else {
            bail!("no data directory on this platform; set AGENT_DATA_DIR")
        };
        Ok(data.join("agent").join("sessions"))
    }

    /// Starts a new session, or reopens `resume` for appending; `secrets` are redacted from
    /// every line.
    pub fn open(resume: Option<&str>, secrets: Vec<String>) -> crate::Result<Self> {
        let root = Self::root()?;
        let id = match resume {
            Some(id) => id.to_owned(),
            None => new_id(),
        };
        let dir = root.join(&id);
        let path = dir.join("transcript.jsonl");
        if resume.is_some() && !path.is_file() {
            bail!("no session `{id}` in {}", root.display());
        }
        let transcript = Transcript::open(path, secrets)?;
        Ok(Self { id, dir, transcript })
    }

    /// Records the workspace the session runs in (`workspace` beside the transcript), so
    /// `session/list` can say where each session ran. Best effort: a session without it is
    /// still resumable, it is only left out of lists filtered by directory.
    pub fn note_workspace(&self, root: &Path) {
        let _ = std::fs::create_dir_all(&self.dir);
        let _ = std::fs::write(self.dir.join("workspace"), root.as_os_str().as_encoded_bytes());
    }

    /// The session's id (its folder's name).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The transcript being written.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The transcript, to record into.
    pub fn transcript_mut(&mut self) -> &mut Transcript {
        &mut self.transcript
    }

    /// The last line of a run: how to resume the session, or, after a failed write, that the
    /// saved session is incomplete (or was not saved at all) and what resuming it gives.
    pub fn farewell(&self) -> String {
        let id = &self.id;
        let Some((count, first)) = self.transcript.failed_writes() else {
            return format!("agent: session {id} (resume with --resume {id})");
        };
        let empty = std::fs::metadata(self.transcript.path()).map_or(true, |meta| meta.len() == 0);
        let writes = if count == 1 { "1 write".to_owned() } else { format!("{count} writes") };
        if empty {
            format!(
                "agent: session {id} was not saved ({writes} to its transcript failed, the first \
                 with: {first}); it cannot be resumed"
            )
        } else {
            format!(
                "agent: session {id} is incomplete: {writes} to its transcript failed (the first \
                 with: {first}); resuming it with --resume {id} continues from the last line \
                 saved, without what came after"
            )
        }
    }
}

/// A sortable, unique id: seconds since the epoch, the process id and the milliseconds; a
/// process that opens more than one session (`agent serve`, `agent acp`, forks) numbers the
/// later ones, since two may open within one millisecond.
pub fn new_id() -> String {
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let id = format!("{}-{:x}{:03}", now.as_secs(), std::process::id(), now.subsec_millis());
    match OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
        0 => id,
        n => format!("{id}-{n}"),
    }
}
