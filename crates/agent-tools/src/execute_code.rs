//! `execute_code`: a JavaScript, TypeScript or Python snippet in the code sandbox, and the code
//! sandbox itself ([`run`], with one module per engine: `js`, `python`, `typescript`).
//!
//! Nothing else uses the code sandbox, so it lives next to its tool, behind the agent-tools
//! features `execute-code` (QuickJS and Python) and `typescript` (oxc, implies `execute-code`).

mod engine;
mod js;
mod python;
#[cfg(feature = "typescript")]
mod typescript;

use std::time::Duration;

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use self::engine::{
    CodeError, CodeErrorKind, CodeLimits, CodeResult, Language, run, run_hiding,
};

/// The largest snippet accepted, in bytes.
const MAX_CODE_BYTES: usize = 100 * 1024;
/// stdout and stderr shown to the model, per stream: first and last halves of this many bytes.
const MAX_STREAM_BYTES: usize = 16 * 1024;

// The language of the snippet (a plain comment: see ExecuteCodeInput).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub enum CodeLanguage {
    Javascript,
    Typescript,
    Python,
}

/// Input of the `execute_code` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct ExecuteCodeInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told"). Counts are sent as plain integers
    // (`with = "Option<i64>"`: no `minimum`, a few tokens each); serde still refuses a negative one.
    // `javascript` (QuickJS, ES2023), `typescript` (types stripped, then JavaScript) or `python`.
    pub language: CodeLanguage,
    // The code to run (at most 100 KB). In JavaScript/TypeScript the value of the last
    // expression is returned.
    pub code: String,
    // Time limit in milliseconds. Default and maximum 5000 unless configured otherwise.
    #[schemars(with = "Option<i64>")]
    pub timeout_ms: Option<u32>,
}

/// Runs code snippets with no file system, network or process access.
#[derive(Debug, Clone)]
pub struct ExecuteCode {
    limits: CodeLimits,
}

impl ExecuteCode {
    /// An execute_code tool whose deadline and memory come from `limits`; `limits.timeout` is also
    /// the largest `timeout_ms` a call may ask for.
    pub fn new(limits: CodeLimits) -> Self {
        Self { limits }
    }
}

/// What a successful run returns, as compact JSON.
#[derive(Serialize)]
struct Outcome {
    value: Option<serde_json::Value>,
    stdout: String,
    stderr: String,
    duration_ms: u128,
}

impl TypedTool for ExecuteCode {
    type Input = ExecuteCodeInput;
    const NAME: &'static str = "execute_code";

    fn description(&self) -> String {
        format!(
            "Runs a JavaScript, TypeScript or Python snippet in an isolated sandbox (no files, \
             network or processes, {} s); returns stdout, stderr and the last expression's value.",
            self.limits.timeout.as_secs_f64()
        )
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    async fn run(
        &self,
        input: ExecuteCodeInput,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if input.code.len() > MAX_CODE_BYTES {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!("code is {} bytes; the limit is {MAX_CODE_BYTES}", input.code.len()),
            ));
        }
        let mut limits = self.limits;
        if let Some(ms) = input.timeout_ms {
            limits.timeout = Duration::from_millis(u64::from(ms))
                .clamp(Duration::from_millis(1), self.limits.timeout);
        }
        let language = match input.language {
            CodeLanguage::Javascript => Language::JavaScript,
            CodeLanguage::Typescript => Language::TypeScript,
            CodeLanguage::Python => Language::Python,
        };
        // Python hides what the call's boundary hides, as bash does, so the two never disagree.
        let hidden = crate::paths::hidden(&*ctx.workspace);
        let result = run_hiding(language, &input.code, &limits, hidden, ctx.cancel.clone()).await;
        let stdout = cap(&result.stdout);
        let stderr = cap(&result.stderr);
        let Some(error) = result.error else {
            let outcome = Outcome {
                value: result.value,
                stdout,
                stderr,
                duration_ms: result.duration.as_millis(),
            };
            return ToolOutput::json(&outcome);
        };
        let kind = match error.kind {
            CodeErrorKind::Timeout => ToolErrorKind::Timeout,
            CodeErrorKind::Cancelled => ToolErrorKind::Cancelled,
            CodeErrorKind::SandboxUnavailable => ToolErrorKind::SandboxUnavailable,
            CodeErrorKind::Internal => ToolErrorKind::ToolError,
            CodeErrorKind::Syntax => ToolErrorKind::other("syntax_error"),
            CodeErrorKind::Exception => ToolErrorKind::other("exception"),
            CodeErrorKind::MemoryLimit => ToolErrorKind::other("memory_limit"),
            CodeErrorKind::RuntimeMissing => ToolErrorKind::other("runtime_missing"),
        };
        // What the code printed before failing usually explains the failure: keep it.
        let mut message = error.message;
        if !stdout.is_empty() {
            message.push_str(&format!("\nstdout:\n{stdout}"));
        }
        if !stderr.is_empty() && !message.contains(stderr.trim()) {
            message.push_str(&format!("\nstderr:\n{stderr}"));
        }
        Err(ToolError::new(kind, message))
    }
}

/// Keeps the first and last halves of a long stream, with a marker saying what was dropped.
fn cap(text: &str) -> String {
    if text.len() <= MAX_STREAM_BYTES {
        return text.to_owned();
    }
    let half = MAX_STREAM_BYTES / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes dropped …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}
