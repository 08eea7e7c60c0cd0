//! Transcripts on disk: one JSON object a line, flushed after every line, secrets redacted.
//!
//! Each line is `{"item": …}` (a conversation [`Item`], the state a resumed session restores),
//! `{"event": …}` (an [`AgentEvent`], what happened, for people and tools reading the log), or
//! `{"compaction": …}` (what a compaction did, with the whole compacted conversation: a resumed
//! session starts from there and appends the items after it).
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
    compaction::CompactionInfo,
    conversation::Conversation,
    conversation::Ledger,
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
    Compaction(CompactionLine<'a>),
}

#[derive(Serialize)]
struct CompactionLine<'a> {
    #[serde(flatten)]
    info: &'a CompactionInfo,
    ledger: &'a Ledger,
    items: &'a [Item],
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
            AgentEvent::Compaction { info, items, ledger } => {
                self.write(&Line::Compaction(CompactionLine { info, ledger, items }))
            }
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

    /// The conversation items of a transcript file, every one ever appended, in order (what a
    /// replay plays back); event and compaction lines are skipped.
    pub fn read_items(path: &Path) -> Result<Vec<Item>> {
        Ok(Self::read(path, false)?.items)
    }

    /// The conversation a resumed session continues: the state after the last compaction, then
    /// the items appended since.
    pub fn read_conversation(path: &Path) -> Result<Conversation> {
        Self::read(path, true)
    }

    fn read(path: &Path, compacted: bool) -> Result<Conversation> {
        let io_error = |source| Error::Transcript { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_error)?;
        let mut conversation = Conversation::default();
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
                conversation.items.push(item);
            } else if let Some(compaction) = value.get("compaction").filter(|_| compacted) {
                let read = |key: &str| compaction.get(key).cloned().unwrap_or_default();
                conversation.items = serde_json::from_value(read("items"))
                    .map_err(|err| bad(format!("not a compaction record: {err}")))?;
                conversation.ledger = serde_json::from_value(read("ledger"))
                    .map_err(|err| bad(format!("not a compaction record: {err}")))?;
            }
        }
        Ok(conversation)
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
    fn a_resumed_conversation_starts_from_the_last_compaction() {
        use crate::{
            compaction::{CompactionInfo, CompactionReason},
            conversation::Ledger,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut log = Transcript::open(&path, Vec::new()).unwrap();
        let user = |text: &str| Item::Message(Message::user(text));
        for text in ["goal", "old 1", "old 2"] {
            log.record(&AgentEvent::ItemAdded { item: user(text) }).unwrap();
        }
        let mut ledger = Ledger::default();
        ledger.files_read.insert("src/lib.rs".to_owned());
        let info = CompactionInfo {
            reason: CompactionReason::Threshold,
            tokens_before: 100,
            tokens_after: 10,
            items_before: 3,
            items_after: 2,
            outputs_shrunk: 0,
            arguments_shrunk: 0,
            turns_dropped: 2,
            summarized: true,
            summary_error: None,
        };
        let items = vec![user("goal"), user("summary")];
        log.record(&AgentEvent::Compaction { info, items, ledger: ledger.clone() }).unwrap();
        log.record(&AgentEvent::ItemAdded { item: user("new") }).unwrap();
        let resumed = Transcript::read_conversation(&path).unwrap();
        assert_eq!(resumed.items, vec![user("goal"), user("summary"), user("new")]);
        assert_eq!(resumed.ledger, ledger);
        // A replay still sees every item ever appended.
        assert_eq!(Transcript::read_items(&path).unwrap().len(), 4);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(r#"{"compaction":{"reason":"threshold","tokens_before":100"#),
            "{text}"
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
