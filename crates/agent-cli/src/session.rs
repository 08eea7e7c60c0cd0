//! Session transcripts: one JSONL file per session, flushed after every line, secrets redacted.
//!
//! Each line is `{"item": …}` (a transcript item, the state `--resume` restores) or
//! `{"event": …}` (what happened, for people and tools reading the log).

use std::{
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use agent_core::Item;
use agent_exec::agent::AgentEvent;
use anyhow::{Context, bail};
use serde::Serialize;

/// An open session log.
pub(crate) struct SessionLog {
    id: String,
    dir: PathBuf,
    file: File,
    /// Strings that must never be written (API keys); replaced by `[redacted]`.
    secrets: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Line<'a> {
    Item(&'a Item),
    Event(&'a AgentEvent),
}

impl SessionLog {
    /// Where sessions are kept: `AGENT_DATA_DIR`, else the platform data directory.
    pub(crate) fn root() -> anyhow::Result<PathBuf> {
        if let Some(dir) = std::env::var_os("AGENT_DATA_DIR") {
            return Ok(PathBuf::from(dir).join("sessions"));
        }
        let Some(data) = dirs::data_dir() else {
            bail!("no data directory on this platform; set AGENT_DATA_DIR")
        };
        Ok(data.join("agent").join("sessions"))
    }

    /// Starts a new session, or reopens `resume` for appending.
    pub(crate) fn open(resume: Option<&str>, secrets: Vec<String>) -> anyhow::Result<Self> {
        let root = Self::root()?;
        let id = match resume {
            Some(id) => id.to_owned(),
            None => new_id(),
        };
        let dir = root.join(&id);
        if resume.is_some() && !dir.join("transcript.jsonl").is_file() {
            bail!("no session `{id}` in {}", root.display());
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("transcript.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let secrets = secrets.into_iter().filter(|secret| secret.len() >= 4).collect();
        Ok(Self { id, dir, file, secrets })
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The strings this log redacts, so a new log for the same provider redacts them too.
    pub(crate) fn secrets(&self) -> &[String] {
        &self.secrets
    }

    pub(crate) fn item(&mut self, item: &Item) -> anyhow::Result<()> {
        self.write(&Line::Item(item))
    }

    pub(crate) fn event(&mut self, event: &AgentEvent) -> anyhow::Result<()> {
        self.write(&Line::Event(event))
    }

    fn write(&mut self, line: &Line<'_>) -> anyhow::Result<()> {
        let mut text = serde_json::to_string(line)?;
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text.push('\n');
        // One write per line, flushed at once, so a crash loses at most the line being written.
        self.file.write_all(text.as_bytes())?;
        self.file.flush()?;
        Ok(())
    }
}

/// The transcript items of a session log, in order; event lines are skipped.
pub(crate) fn load_items(path: &Path) -> anyhow::Result<Vec<Item>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut items = Vec::new();
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), number + 1))?;
        if let Some(item) = value.get("item") {
            let item = serde_json::from_value(item.clone()).with_context(|| {
                format!("{}:{}: not a transcript item", path.display(), number + 1)
            })?;
            items.push(item);
        }
    }
    Ok(items)
}

/// A sortable, unique-enough id: seconds since the epoch and the process id.
fn new_id() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}-{:x}{:03}", now.as_secs(), std::process::id(), now.subsec_millis())
}

#[cfg(test)]
mod tests {
    use agent_core::Message;

    use super::*;

    #[test]
    fn items_round_trip_and_secrets_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        let file = OpenOptions::new().create(true).append(true).open(&path).unwrap();
        let mut log = SessionLog {
            id: "s".to_owned(),
            dir: dir.path().to_path_buf(),
            file,
            secrets: vec!["sk-secret-123".to_owned()],
        };
        log.item(&Item::Message(Message::user("my key is sk-secret-123"))).unwrap();
        log.event(&AgentEvent::TurnStarted { turn: 1 }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sk-secret-123"));
        assert_eq!(
            load_items(&path).unwrap(),
            vec![Item::Message(Message::user("my key is [redacted]"))]
        );
    }
}
