//! The edit tools' side of [`EditObserver`]: after a write, the session's observer (the binary
//! registers a language-server client) may add lines to the observation.

use std::sync::Arc;

use agent_core::{EditObserver, EditedFile, ToolOutput};

/// The observer a file tool tells about its writes; `None` when the session has none.
pub(crate) type Observer = Option<Arc<dyn EditObserver>>;

/// `output` with what `observer` says about `files` appended (nothing without an observer).
pub(crate) async fn append(
    observer: &Observer,
    mut output: ToolOutput,
    files: &[EditedFile],
) -> ToolOutput {
    let Some(observer) = observer else { return output };
    if files.is_empty() {
        return output;
    }
    let note = observer.after_edit(files).await;
    if !note.text.is_empty() {
        output.text.push('\n');
        output.text.push_str(&note.text);
    }
    output
}
