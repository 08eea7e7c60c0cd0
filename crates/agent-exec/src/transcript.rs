//! Transcripts on disk: one JSON object a line, flushed after every line, secrets redacted.
//!
//! Each line is `{"item": …}` (a conversation [`Item`], the state a resumed session restores),
//! `{"event": …}` (an [`AgentEvent`], what happened, for people and tools reading the log), or
//! `{"compaction": …}` (what a compaction did, with the whole compacted conversation: a resumed
//! session starts from there and appends the items after it).
//! Writing items as the loop appends them means a crash loses nothing that was already part of
//! the conversation.
//!
//! What a crash can leave is repaired when a transcript is loaded ([`Transcript::load`], see
//! [`repair`]): a line cut off mid-write is dropped with a warning, and a call left without an
//! output gets an `interrupted` one. One process at a time holds a transcript open: [`Transcript::open`]
//! takes an advisory lock (`flock`) on `<name>.lock` beside it, which holds the owner's pid, and
//! refuses a transcript another process holds. After a failed write the next line starts on a
//! fresh line, so a torn line never swallows the next one.

mod repair;

use std::{
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
};

use agent_core::{CallOutput, Item};
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
    /// The lock file, locked while this value lives (the kernel drops the lock with the process).
    _lock: File,
    /// The file may end in the middle of a line (a failed write, or a torn line found at open):
    /// the next line starts with a newline.
    fresh_line: bool,
    /// Writes that failed, and the first failure's message.
    failed: Option<(usize, String)>,
}

/// A transcript as loaded for resuming, with what was repaired on the way.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The conversation to continue (repaired).
    pub conversation: Conversation,
    /// Line numbers (1-based) dropped because they were cut off mid-write.
    pub torn_lines: Vec<usize>,
    /// Outputs made for calls that had none anywhere in the file (the process ended while they
    /// ran), in conversation order; a caller resuming the session appends them to the
    /// transcript, so every later load and request carries them.
    pub interrupted: Vec<CallOutput>,
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
        let lock = lock(&path)?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io_error)?;
        let fresh_line = ends_mid_line(&mut file).map_err(io_error)?;
        let secrets = secrets.into_iter().filter(|secret| secret.len() >= MIN_SECRET_LEN).collect();
        Ok(Self { path, file, secrets, _lock: lock, fresh_line, failed: None })
    }

    /// How many writes failed, and the first failure's message: the transcript is incomplete
    /// when this is `Some`, and a resumed session continues from the last line written whole.
    pub fn failed_writes(&self) -> Option<(usize, &str)> {
        self.failed.as_ref().map(|(count, first)| (*count, first.as_str()))
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
        if self.fresh_line {
            text.insert(0, '\n');
        }
        // One write per line, flushed at once, so a crash loses at most the line being written.
        let written = self.file.write_all(text.as_bytes()).and_then(|()| self.file.flush());
        // After a failure part of the line may be on disk: the next one must not continue it.
        self.fresh_line = written.is_err();
        written.map_err(|source| {
            let (count, _) = self.failed.get_or_insert_with(|| (0, source.to_string()));
            *count += 1;
            Error::Transcript { path: self.path.clone(), source }
        })
    }

    /// The conversation items of a transcript file, every one ever appended, in order (what a
    /// replay plays back); event and compaction lines are skipped.
    pub fn read_items(path: &Path) -> Result<Vec<Item>> {
        Ok(Self::read(path, false)?.0.items)
    }

    /// The conversation a resumed session continues: the state after the last compaction, then
    /// the items appended since, repaired as [`Transcript::load`] does.
    pub fn read_conversation(path: &Path) -> Result<Conversation> {
        Ok(Self::load(path)?.conversation)
    }

    /// Loads a transcript for resuming: the conversation from the last compaction on, with what a
    /// crash can leave repaired (see the `repair` module) and reported, so the caller can warn about
    /// dropped lines and persist the outputs it added.
    pub fn load(path: &Path) -> Result<Loaded> {
        let (conversation, torn_lines) = Self::read(path, true)?;
        let (items, interrupted) = repair::answer_interrupted(conversation.items);
        Ok(Loaded { conversation: Conversation { items, ..conversation }, torn_lines, interrupted })
    }

    fn read(path: &Path, compacted: bool) -> Result<(Conversation, Vec<usize>)> {
        let file = File::open(path)
            .map_err(|source| Error::Transcript { path: path.to_path_buf(), source })?;
        Self::read_lines(BufReader::new(file), path, compacted)
    }

    /// [`Transcript::load`] of a transcript's bytes (the fuzz targets' entry; `path` only names
    /// it in errors).
    #[cfg(feature = "fuzz")]
    pub(crate) fn load_bytes(bytes: &[u8], path: &Path) -> Result<Loaded> {
        let (conversation, torn_lines) = Self::read_lines(bytes, path, true)?;
        let (items, interrupted) = repair::answer_interrupted(conversation.items);
        Ok(Loaded { conversation: Conversation { items, ..conversation }, torn_lines, interrupted })
    }

    fn read_lines(
        reader: impl BufRead,
        path: &Path,
        compacted: bool,
    ) -> Result<(Conversation, Vec<usize>)> {
        let io_error = |source| Error::Transcript { path: path.to_path_buf(), source };
        let mut conversation = Conversation::default();
        let mut torn = Vec::new();
        // Lines are split on bytes: a line cut off inside a multi-byte character is still a torn
        // line, not an I/O error.
        for (number, line) in reader.split(b'\n').enumerate() {
            let line = line.map_err(io_error)?;
            let line = String::from_utf8_lossy(&line);
            if line.trim().is_empty() {
                continue;
            }
            let bad = |reason: String| Error::TranscriptLine {
                path: path.to_path_buf(),
                line: number + 1,
                reason,
            };
            let value: serde_json::Value = match serde_json::from_str(&line) {
                Ok(value) => value,
                // JSON that stops early is a line whose write was cut off (a crash or a full
                // disk); the lines around it are whole. Anything else is damage to report.
                Err(err) if err.is_eof() => {
                    torn.push(number + 1);
                    continue;
                }
                Err(err) => return Err(bad(format!("not JSON: {err}"))),
            };
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
        Ok((conversation, torn))
    }
}

/// How long a lock held in this process's name is tried again (see [`lock`]): a fork's window
/// before `exec` is microseconds, tens of milliseconds on a loaded machine.
const SAME_PROCESS_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Takes the session's lock: an exclusive `flock` on `<transcript>.lock`, which then holds this
/// process's pid for the message another process gets.
fn lock(transcript: &Path) -> Result<File> {
    let path = transcript.with_extension("lock");
    let io_error = |source| Error::Transcript { path: path.clone(), source };
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io_error)?;
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut text));
                let pid = text.trim().parse().ok();
                // The lock belongs to the open file, which every process this one forks shares
                // until it `exec`s. A session closed here a moment ago (`agent acp`'s
                // `session/close`, then `session/load`) can still be locked by a child forked
                // meanwhile for another purpose (a command's sandbox set-up, the namespace
                // helper), so when the holder named is this process, the lock is tried again
                // for a short while before the session is called busy. Nothing notifies the
                // release of a `flock`, hence the polling.
                if pid == Some(std::process::id()) && started.elapsed() < SAME_PROCESS_WAIT {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
                return Err(Error::TranscriptBusy { path: transcript.to_path_buf(), pid });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io_error(source)),
        }
    }
    // The pid only names the holder in another process's message: on a full disk the session
    // still opens (its own writes report the failure), it just cannot say who holds it.
    let _ =
        file.set_len(0).and_then(|()| file.write_all(std::process::id().to_string().as_bytes()));
    Ok(file)
}

/// Whether `file` is non-empty and its last byte is not a newline (a line was cut off).
fn ends_mid_line(file: &mut File) -> std::io::Result<bool> {
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

#[cfg(test)]
mod tests {
    use agent_core::Message;

    use super::*;

    /// Found by `cargo xtask soak`: `session/close` and then `session/load` of the same session in
    /// `agent acp` failed now and then with "open in another agent process" naming the agent
    /// itself, because a child forked meanwhile still shared the lock's open file. Here a clone of
    /// the lock's descriptor (the same open file, as a fork has it) outlives the transcript by
    /// 200 ms.
    #[test]
    fn a_session_reopened_while_a_fork_holds_its_lock_waits_for_the_fork() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/transcript.jsonl");
        let first = Transcript::open(&path, Vec::new()).unwrap();
        let shared = first._lock.try_clone().unwrap();
        drop(first);
        let fork = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(shared);
        });
        let reopened = Transcript::open(&path, Vec::new());
        fork.join().unwrap();
        assert!(reopened.is_ok(), "{:?}", reopened.err());
    }

    /// The control: a session still open in this process stays busy (after the short wait).
    #[test]
    fn a_session_still_open_here_is_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/transcript.jsonl");
        let _open = Transcript::open(&path, Vec::new()).unwrap();
        let again = Transcript::open(&path, Vec::new()).err().map(|err| err.to_string());
        let expect = format!("open in another agent process (pid {})", std::process::id());
        assert!(again.as_deref().is_some_and(|err| err.contains(&expect)), "{again:?}");
    }

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
    fn a_torn_line_is_dropped_and_the_next_write_starts_a_fresh_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let whole = r#"{"item":{"type":"message","role":"user","content":"one"}}"#;
        std::fs::write(&path, format!("{whole}\n{{\"item\":{{\"type\":\"mess")).unwrap();
        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(loaded.torn_lines, [2]);
        assert_eq!(loaded.conversation.items, vec![Item::Message(Message::user("one"))]);
        let mut log = Transcript::open(&path, Vec::new()).unwrap();
        log.item(&Item::Message(Message::user("two"))).unwrap();
        drop(log);
        let loaded = Transcript::load(&path).unwrap();
        assert_eq!(loaded.torn_lines, [2], "the torn line swallowed the next one");
        let texts: Vec<Item> = ["one", "two"].map(|t| Item::Message(Message::user(t))).to_vec();
        assert_eq!(loaded.conversation.items, texts);
    }

    #[test]
    fn a_second_open_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let first = Transcript::open(&path, Vec::new()).unwrap();
        let err = Transcript::open(&path, Vec::new()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("another agent process (pid {})", std::process::id())),
            "{err}"
        );
        drop(first);
        Transcript::open(&path, Vec::new()).unwrap();
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
