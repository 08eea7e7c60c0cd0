//! The code sandbox behind `execute_code`: the languages, limits and results of one run, and the
//! dispatch to the engines (JavaScript and TypeScript in embedded QuickJS, Python in `python3`
//! under the process sandbox).
//!
//! Every call starts fresh (a new QuickJS runtime, a new interpreter process) and has no file
//! system, network or process access:
//!
//! - **JavaScript** runs in a QuickJS context with the standard built-ins only: no `std`/`os`
//!   modules, no module loader (`import()` fails), no `require`, no `fetch`. A memory limit and an
//!   interrupt handler at the deadline bound it. `console.*` is captured and the value of the last
//!   expression comes back as JSON.
//! - **TypeScript** has its types stripped by the oxc transformer, then runs as JavaScript.
//! - **Python** runs as `python3 -I` in a fresh temp dir under Landlock rules that allow reading
//!   only the interpreter's own files, executing only the interpreter, and writing only that temp
//!   dir; seccomp denies every non-`AF_UNIX` socket.

use std::{fmt, time::Duration};

use agent_core::CancellationToken;
use agent_sandbox::secret::Hidden;
use serde::{Deserialize, Serialize};

use super::{js, python};

/// The language of a code snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// ECMAScript 2023 in QuickJS.
    JavaScript,
    /// TypeScript, types stripped, then run as JavaScript.
    TypeScript,
    /// Python 3 in a sandboxed `python3` process.
    Python,
}

/// Bounds of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    /// Wall-clock deadline (default 5 s).
    pub timeout: Duration,
    /// Memory the JavaScript heap (or the Python address space) may use (default 128 MiB).
    pub memory_bytes: usize,
    /// stdout and stderr kept per stream (default 1 MiB); the tool caps further for the model.
    pub max_output_bytes: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(5), memory_bytes: 128 << 20, max_output_bytes: 1 << 20 }
    }
}

/// What a call produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CodeResult {
    /// Captured stdout (`console.log`, `print`).
    pub stdout: String,
    /// Captured stderr (`console.error`, tracebacks).
    pub stderr: String,
    /// The value of the last expression as JSON (JavaScript and TypeScript only).
    pub value: Option<serde_json::Value>,
    /// Wall time of the run.
    pub duration: Duration,
    /// Why the run failed, if it did.
    pub error: Option<CodeError>,
}

/// A failed run: a stable kind and a message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct CodeError {
    /// The stable kind.
    pub kind: CodeErrorKind,
    /// What happened.
    pub message: String,
}

impl CodeError {
    pub(super) fn new(kind: CodeErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeErrorKind {
    /// The code did not parse.
    Syntax,
    /// The code threw (or Python exited non-zero).
    Exception,
    /// The deadline passed.
    Timeout,
    /// The memory limit was hit.
    MemoryLimit,
    /// The call was cancelled.
    Cancelled,
    /// The language runtime is not installed (Python).
    RuntimeMissing,
    /// The process sandbox cannot be enforced here (Python).
    SandboxUnavailable,
    /// The harness failed (a bug or an OS error), not the code.
    Internal,
}

impl CodeErrorKind {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            CodeErrorKind::Syntax => "syntax_error",
            CodeErrorKind::Exception => "exception",
            CodeErrorKind::Timeout => "timeout",
            CodeErrorKind::MemoryLimit => "memory_limit",
            CodeErrorKind::Cancelled => "cancelled",
            CodeErrorKind::RuntimeMissing => "runtime_missing",
            CodeErrorKind::SandboxUnavailable => "sandbox_unavailable",
            CodeErrorKind::Internal => "internal_error",
        }
    }
}

impl fmt::Display for CodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Runs `code` in `language` within `limits`; failures are in [`CodeResult::error`].
pub async fn run(
    language: Language,
    code: &str,
    limits: &CodeLimits,
    cancel: CancellationToken,
) -> CodeResult {
    run_hiding(language, code, limits, None, cancel).await
}

/// Like [`run`], with the files a Python process must not see given by the caller (the call's
/// boundary: `agent_core::Boundary::hidden_paths`), so the code hides what the session's policy
/// hides from the file tools. `None` hides the credential locations of the home, as [`run`]
/// does. JavaScript and TypeScript read no file at all.
pub async fn run_hiding(
    language: Language,
    code: &str,
    limits: &CodeLimits,
    hidden: Option<Vec<Hidden>>,
    cancel: CancellationToken,
) -> CodeResult {
    match language {
        Language::JavaScript => js::run(code.to_owned(), *limits, cancel).await,
        Language::TypeScript => {
            let started = std::time::Instant::now();
            let source = code.to_owned();
            let stripped = tokio::task::spawn_blocking(move || strip_types(&source)).await;
            let stripped = stripped.unwrap_or_else(|err| {
                Err(CodeError::new(CodeErrorKind::Internal, format!("TypeScript: {err}")))
            });
            match stripped {
                Ok(js) => js::run(js, *limits, cancel).await,
                Err(error) => CodeResult {
                    error: Some(error),
                    duration: started.elapsed(),
                    ..CodeResult::default()
                },
            }
        }
        Language::Python => python::run(code, limits, hidden, cancel).await,
    }
}

/// TypeScript to JavaScript, types removed.
#[cfg(feature = "typescript")]
fn strip_types(code: &str) -> Result<String, CodeError> {
    super::typescript::strip(code)
}

#[cfg(not(feature = "typescript"))]
fn strip_types(_code: &str) -> Result<String, CodeError> {
    Err(CodeError::new(
        CodeErrorKind::RuntimeMissing,
        "TypeScript support was not compiled in (agent-tools feature `typescript`)",
    ))
}
