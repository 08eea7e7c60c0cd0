//! `EditObserver`: the seam through which the session learns that files changed, so something
//! can add to the observation of the call that changed them (diagnostics from a language server).
//!
//! The file tools call it after they wrote; a command's capture of the files it wrote can call it
//! too, with no text from before. Nothing here knows what the observer does with the files.

use std::{fmt, path::PathBuf};

use crate::tool::BoxFuture;

/// One file a call changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditedFile {
    /// The file, absolute and canonical as the tool resolved it.
    pub path: PathBuf,
    /// Its text before the call, when the caller knows it (`None` for a new file or one a
    /// command changed without a record of its content).
    pub before: Option<String>,
    /// Whether the call deleted it.
    pub deleted: bool,
}

impl EditedFile {
    /// A file changed from `before` (when known).
    pub fn changed(path: impl Into<PathBuf>, before: Option<String>) -> Self {
        Self { path: path.into(), before, deleted: false }
    }
}

/// What an observer adds to the call's observation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditNote {
    /// Lines for the model, appended to the tool's text; empty when there is nothing to say.
    pub text: String,
}

/// Told after a call changed files; answers within its own deadline.
pub trait EditObserver: Send + Sync + fmt::Debug {
    /// Called once per call with every file it changed. The future must finish within the
    /// observer's own short deadline, whatever its helpers do: the tool call waits for it.
    fn after_edit<'a>(&'a self, files: &'a [EditedFile]) -> BoxFuture<'a, EditNote>;
}
