//! Running file-system work off the async runtime.

use agent_core::{ToolError, ToolErrorKind};

/// Runs blocking file-system or CPU work on tokio's blocking pool; a panic inside becomes a
/// `tool_error` the model reads instead of tearing down the call.
pub(crate) async fn run<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(err) => Err(ToolError::new(
            ToolErrorKind::ToolError,
            format!("the tool stopped unexpectedly: {err}"),
        )),
    }
}

/// An IO error as a `tool_error`, with what was being done.
pub(crate) fn io_error(doing: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(ToolErrorKind::ToolError, format!("could not {doing}: {err}"))
}
