//! The editor's view of files: when the client offers `fs/read_text_file` and
//! `fs/write_text_file`, the file tools read and write through it, so the model sees unsaved
//! buffers and its edits land in the editor.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use agent_client_protocol::{
    Client,
    v1::{
        ConnectionTo,
        schema::{ReadTextFileRequest, WriteTextFileRequest},
    },
};
use agent_core::{BoxFuture, FileSystem};

/// The client's file system, for one session.
///
/// Made before the session, like the approver, and bound to the session's id once it is open.
/// Paths reach it after the workspace boundary, protected paths and the policy have judged them,
/// so it only carries the requests. It remembers the text each file had when last read and what
/// was last written, so the call's update can carry the diff the disk no longer shows.
pub struct ClientFiles {
    connection: ConnectionTo<Client>,
    session: OnceLock<String>,
    /// The text of each file as last read through the client.
    read: Mutex<HashMap<PathBuf, String>>,
    /// Each file's last write not yet reported: the text before it (when it was read) and after.
    written: Mutex<HashMap<PathBuf, (Option<String>, String)>>,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles").field("session", &self.session.get()).finish_non_exhaustive()
    }
}

impl ClientFiles {
    /// The file system of the client on `connection`.
    pub fn new(connection: ConnectionTo<Client>) -> Arc<Self> {
        Arc::new(Self {
            connection,
            session: OnceLock::new(),
            read: Mutex::default(),
            written: Mutex::default(),
        })
    }

    /// Names the session the requests are about.
    pub(crate) fn bind(&self, session: &str) {
        let _ = self.session.set(session.to_owned());
    }

    /// The last write to `path` not yet reported, as (text before, text after).
    pub(crate) fn take_write(&self, path: &Path) -> Option<(Option<String>, String)> {
        lock(&self.written).remove(path)
    }

    fn session(&self) -> std::io::Result<String> {
        self.session
            .get()
            .cloned()
            .ok_or_else(|| std::io::Error::other("the session is not open yet"))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl FileSystem for ClientFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, std::io::Result<String>> {
        Box::pin(async move {
            let request = ReadTextFileRequest::new(self.session()?, path.to_path_buf());
            match self.connection.send_request(request).block_task().await {
                Ok(response) => {
                    lock(&self.read).insert(path.to_path_buf(), response.content.clone());
                    Ok(response.content)
                }
                // The protocol has no error code for a missing file; a file that is not on
                // the disk either is one the tools report as not found.
                Err(_) if !path.exists() => Err(std::io::ErrorKind::NotFound.into()),
                Err(err) => Err(std::io::Error::other(format!("the editor answered: {err}"))),
            }
        })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, std::io::Result<()>> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session()?, path.to_path_buf(), text);
            self.connection
                .send_request(request)
                .block_task()
                .await
                .map_err(|err| std::io::Error::other(format!("the editor answered: {err}")))?;
            let before = lock(&self.read).insert(path.to_path_buf(), text.to_owned());
            lock(&self.written).insert(path.to_path_buf(), (before, text.to_owned()));
            Ok(())
        })
    }
}
