//! Transcripts on disk: one JSON object a line, flushed after every line, secrets redacted.
//!
//! Each line is `{"item": …}` (a conversation [`Item`], the state a resumed session restores) or
//! `{"event": …}` (an [`AgentEvent`], what happened, for people and tools reading the log).
//! Writing items as the loop appends them means a crash loses nothing that was already part of
//! the conversation.

use std::{
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
};

use agent_core::Item;
use serde::Serialize;

use crate::{
    agent::AgentEvent,
    error::{Error, Result},
};

/// Secrets shorter than this are not redacted: replacing every `ab` in a log would garble it and
/// protect nothing.
const MIN_SECRET_LEN: usize = 4;

/// An open transcript file, appended to line by line.
#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
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

impl Transcript {
    /// Opens `path` for appending (creating it and its directory), redacting `secrets` from every
    /// line written.
    pub fn open(path: impl Into<PathBuf>, secrets: Vec<String>) -> Result<Self> {
        let path = path.into();
        let io_error = |source| Error::Transcript { path: path.clone(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_error)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(io_error)?;
        let secrets = secrets.into_iter().filter(|secret| secret.len() >= MIN_SECRET_LEN).collect();
        Ok(Self { path, file, secrets })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The strings this transcript redacts.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// Appends a conversation item.
    pub fn item(&mut self, item: &Item) -> Result<()> {
        self.write(&Line::Item(item))
    }

    /// Appends an event.
    pub fn event(&mut self, event: &AgentEvent) -> Result<()> {
        self.write(&Line::Event(event))
    }

    /// Appends what an event means for the transcript: the item of an
    /// [`AgentEvent::ItemAdded`], the event itself otherwise.
    pub fn record(&mut self, event: &AgentEvent) -> Result<()> {
        match event {
            AgentEvent::ItemAdded { item } => self.item(item),
            other => self.event(other),
        }
    }

    fn write(&mut self, line: &Line<'_>) -> Result<()> {
        // Serialising our own types cannot fail: every map key is a string.
        let mut text = serde_json::to_string(line).unwrap_or_default();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text.push('\n');
        // One write per line, flushed at once, so a crash loses at most the line being written.
        let written = self.file.write_all(text.as_bytes()).and_then(|()| self.file.flush());
        written.map_err(|source| Error::Transcript { path: self.path.clone(), source })
    }

    /// The conversation items of a transcript file, in order; event lines are skipped.
    pub fn read_items(path: &Path) -> Result<Vec<Item>> {
        let io_error = |source| Error::Transcript { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_error)?;
        let mut items = Vec::new();
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(io_error)?;
            if line.trim().is_empty() {
                continue;
            }
            let bad = |reason: String| Error::TranscriptLine {
                path: path.to_path_buf(),
                line: number + 1,
                reason,
            };
            let value: serde_json::Value =
                serde_json::from_str(&line).map_err(|err| bad(format!("not JSON: {err}")))?;
            if let Some(item) = value.get("item") {
                let item = serde_json::from_value(item.clone())
                    .map_err(|err| bad(format!("not a transcript item: {err}")))?;
                items.push(item);
            }
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use agent_core::Message;

    use super::*;

    #[test]
    fn items_round_trip_and_secrets_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/transcript.jsonl");
        let mut log =
            Transcript::open(&path, vec!["sk-secret-123".to_owned(), "ab".to_owned()]).unwrap();
        log.record(&AgentEvent::ItemAdded {
            item: Item::Message(Message::user("my key is sk-secret-123, ab")),
        })
        .unwrap();
        log.record(&AgentEvent::TurnStarted { turn: 1 }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sk-secret-123"));
        assert!(text.contains(r#"{"event":{"type":"turn_started","turn":1}}"#), "{text}");
        assert_eq!(
            Transcript::read_items(&path).unwrap(),
            vec![Item::Message(Message::user("my key is [redacted], ab"))]
        );
    }

    #[test]
    fn a_broken_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, "{\"item\":{\"type\":\"nope\"}}\n").unwrap();
        let err = Transcript::read_items(&path).unwrap_err().to_string();
        assert!(err.contains("t.jsonl:1: not a transcript item"), "{err}");
    }
}
