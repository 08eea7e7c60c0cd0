//! The session proxy's decision log: every connection it allowed or refused, kept in memory,
//! appended to the session's `net-log.jsonl`, and handed to a subscriber (the `--json` event).

use std::{
    io::Write,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

/// How a connection reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A plain HTTP request in absolute form (`GET http://host/…`).
    Http,
    /// An HTTPS (or any TCP) tunnel through `CONNECT host:port`.
    Connect,
    /// A SOCKS5 `CONNECT`.
    Socks,
}

/// One decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetDecision {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// How the connection came.
    pub via: Via,
    /// The host asked for, as the client named it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether the connection was made.
    pub allowed: bool,
    /// Why: the allow pattern that matched, or the reason for the refusal.
    pub reason: String,
}

type Subscriber = Arc<dyn Fn(&NetDecision) + Send + Sync>;

/// The log: cheap to clone, shared by the proxy and whoever reads it.
#[derive(Clone, Default)]
pub struct NetLog {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    file: Option<PathBuf>,
    entries: Mutex<Vec<NetDecision>>,
    subscriber: Mutex<Option<Subscriber>>,
}

impl std::fmt::Debug for NetLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetLog").field("file", &self.inner.file).finish_non_exhaustive()
    }
}

/// The most decisions kept in memory; the file keeps them all.
pub const MAX_LOG_ENTRIES: usize = 10_000;

impl NetLog {
    /// A log that also appends JSON lines to `file` (the session's `net-log.jsonl`).
    pub fn to_file(file: Option<PathBuf>) -> Self {
        Self { inner: Arc::new(Inner { file, ..Inner::default() }) }
    }

    /// Calls `subscriber` with every later decision.
    pub fn subscribe(&self, subscriber: impl Fn(&NetDecision) + Send + Sync + 'static) {
        if let Ok(mut slot) = self.inner.subscriber.lock() {
            *slot = Some(Arc::new(subscriber));
        }
    }

    /// Records a decision.
    pub fn record(&self, via: Via, host: &str, port: u16, allowed: bool, reason: String) {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let decision = NetDecision { at_ms, via, host: host.to_owned(), port, allowed, reason };
        if let Some(path) = &self.inner.file
            && let Ok(line) = serde_json::to_string(&decision)
            && let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path)
        {
            let _ = writeln!(file, "{line}");
        }
        let subscriber = self.inner.subscriber.lock().ok().and_then(|s| s.clone());
        if let Some(subscriber) = subscriber {
            subscriber(&decision);
        }
        if let Ok(mut entries) = self.inner.entries.lock() {
            if entries.len() == MAX_LOG_ENTRIES {
                entries.remove(0);
            }
            entries.push(decision);
        }
    }

    /// Every decision so far (the last [`MAX_LOG_ENTRIES`]).
    pub fn entries(&self) -> Vec<NetDecision> {
        self.inner.entries.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// Reads a session's log file.
    pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<NetDecision>> {
        let text = std::fs::read_to_string(path)?;
        Ok(text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect())
    }
}
