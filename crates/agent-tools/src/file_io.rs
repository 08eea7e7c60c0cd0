//! Where the file tools' bytes come from and go to: the disk, or the session's
//! [`agent_core::FileSystem`] (an editor's buffers, `ToolContext::files`) when it has one.

use std::{path::Path, sync::Arc};

use agent_core::{FileSystem, ToolContext};

use crate::write_file::write_atomic;

/// The reads and writes of one call.
pub(crate) enum FileIo {
    /// The disk, written atomically.
    Disk,
    /// The session's file system; its futures are driven from the tool's blocking thread with
    /// the runtime's handle (the connection they talk over runs on that runtime).
    Through { files: Arc<dyn FileSystem>, runtime: tokio::runtime::Handle },
}

impl FileIo {
    /// The IO a call uses. Made in the tool's `run`, on the runtime, whose handle it keeps.
    pub(crate) fn of(ctx: &ToolContext) -> Self {
        match (&ctx.files, tokio::runtime::Handle::try_current()) {
            (Some(files), Ok(runtime)) => Self::Through { files: files.clone(), runtime },
            _ => Self::Disk,
        }
    }

    /// Whether the file system is someone else's (directories are theirs to create).
    pub(crate) fn is_disk(&self) -> bool {
        matches!(self, Self::Disk)
    }

    /// The file's bytes (its text, UTF-8, when read through a file system).
    pub(crate) fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Disk => std::fs::read(path),
            Self::Through { files, runtime } => {
                runtime.block_on(files.read_text(path)).map(String::into_bytes)
            }
        }
    }

    /// Replaces the file's bytes; `permissions` are kept on the disk.
    pub(crate) fn write(
        &self,
        path: &Path,
        bytes: &[u8],
        permissions: Option<std::fs::Permissions>,
    ) -> std::io::Result<()> {
        match self {
            Self::Disk => write_atomic(path, bytes, permissions),
            Self::Through { files, runtime } => {
                // What the tools write is text they decoded and encoded as UTF-8 (a file system
                // hands out text), so this conversion loses nothing.
                let text = String::from_utf8_lossy(bytes);
                runtime.block_on(files.write_text(path, &text))
            }
        }
    }
}
