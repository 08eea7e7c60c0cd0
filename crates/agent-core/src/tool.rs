//! The object-safe `Tool` trait, its `ToolSpec`, and what a call gives and returns.

use std::{any::Any, future::Future, pin::Pin};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    context::ToolContext,
    error::ToolError,
    item::{CallOutput, ToolCall},
    schema::ArgsError,
    shape::{TextInput, ToolShape},
};

/// A boxed, `Send` future: how `dyn` traits in this workspace return async work.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Everything the model and the harness need to know about a tool, without running it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls (snake_case, unique in a registry).
    pub name: String,
    /// What the tool does and when to use it, written for the model.
    pub description: String,
    /// The JSON Schema of the arguments, exactly as sent to the model.
    pub parameters: Value,
    /// Whether `parameters` satisfies OpenAI's strict rules and is sent with `strict: true`.
    pub strict: bool,
    /// Other names the model may use for this tool (for models trained on other harnesses).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// What running the tool may do; drives concurrency and the permission defaults.
    pub effects: Effects,
    /// The name permission rules use for this tool (`Bash`, `Edit`, `Read`, …).
    pub rule_name: String,
    /// The raw text the tool also takes instead of JSON, for the freeform and built-in shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_input: Option<TextInput>,
    /// How the tool is offered to the model.
    #[serde(default, skip_serializing_if = "ToolShape::is_function")]
    pub shape: ToolShape,
}

impl ToolSpec {
    /// The permission-rule name derived from a snake_case tool name: `list_dir` → `ListDir`.
    /// Names containing `__` (MCP tools such as `mcp__server__tool`) are kept as they are.
    pub fn default_rule_name(name: &str) -> String {
        if name.contains("__") {
            return name.to_owned();
        }
        name.split('_')
            .map(|word| {
                let mut chars = word.chars();
                match chars.next() {
                    Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                    None => String::new(),
                }
            })
            .collect()
    }
}

/// What running a tool may do. The executor runs read-only tools concurrently and everything else
/// one at a time; the permission policy asks before effects the mode does not allow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Effects {
    /// Only reads state; safe to run concurrently with other reads.
    pub read_only: bool,
    /// Creates, changes or deletes files.
    pub writes_files: bool,
    /// Starts processes (which run under the OS sandbox).
    pub runs_processes: bool,
    /// Talks to the network.
    pub network: bool,
}

impl Effects {
    /// No side effects: reads, searches, pure functions.
    pub const READ_ONLY: Effects =
        Effects { read_only: true, writes_files: false, runs_processes: false, network: false };
    /// Changes files in the workspace.
    pub const WRITES_FILES: Effects =
        Effects { read_only: false, writes_files: true, runs_processes: false, network: false };
    /// Starts processes; anything may happen inside the sandbox.
    pub const RUNS_PROCESSES: Effects =
        Effects { read_only: false, writes_files: true, runs_processes: true, network: false };
    /// Reads from the network without changing local state.
    pub const NETWORK: Effects =
        Effects { read_only: true, writes_files: false, runs_processes: false, network: true };
}

/// One thing a call will touch, as the permission policy sees it.
///
/// A tool reports these from its validated input, before it runs, so rules such as
/// `Bash(cargo test *)`, `Edit(src/**)` or `WebSearch(domain:docs.rs)` can be judged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "target", rename_all = "snake_case")]
pub enum Access {
    /// Reads a path (as given; the policy resolves it against the workspace).
    Read(String),
    /// Creates or changes a path.
    Write(String),
    /// Runs a shell command line in a working directory.
    Command {
        /// The command line, as the shell will read it.
        line: String,
        /// The directory the shell starts in, as the tool was given it (relative to the workspace
        /// root, or absolute); `None` for the root. The policy resolves the paths the command
        /// writes (and the `cd`s it makes) from here.
        workdir: Option<String>,
    },
    /// Contacts a network domain, or any domain (`None`) when the tool cannot say which.
    ///
    /// On the wire (hooks, transcripts) "any domain" stays the empty string it always was.
    Network(#[serde(with = "any_domain")] Option<String>),
}

/// `Access::Network`'s domain as serialized: `None` ("any domain") is the empty string, so the
/// JSON shape predates and outlives the `Option`.
mod any_domain {
    use serde::{Deserialize, Deserializer, Serializer};

    #[expect(clippy::ref_option, reason = "serde's `with` passes the field by reference")]
    pub(super) fn serialize<S: Serializer>(
        domain: &Option<String>,
        out: S,
    ) -> Result<S::Ok, S::Error> {
        out.serialize_str(domain.as_deref().unwrap_or(""))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        input: D,
    ) -> Result<Option<String>, D::Error> {
        let domain = String::deserialize(input)?;
        Ok((!domain.is_empty()).then_some(domain))
    }
}

impl Access {
    /// A shell command line run from the workspace root.
    pub fn command(line: impl Into<String>) -> Self {
        Access::Command { line: line.into(), workdir: None }
    }
}

/// A call whose arguments parsed and validated, ready for the permission policy and then to run.
pub struct PreparedCall {
    input: Box<dyn Any + Send>,
    access: Vec<Access>,
    steps: Vec<ToolCall>,
    results: Vec<CallOutput>,
}

impl PreparedCall {
    /// Wraps a validated input and what the call will touch.
    pub fn new<T: Any + Send>(input: T, access: Vec<Access>) -> Self {
        Self { input: Box::new(input), access, steps: Vec::new(), results: Vec::new() }
    }

    /// A call that stands for other tools' calls (`steps`): the executor runs each step through
    /// its whole path (hooks, permission rules, approvals, time limit, output cap), one at a
    /// time, stops after the first that is refused or cancelled, and then runs this call with
    /// the steps' outputs as [`PreparedCall::into_parts`] gives them. The call itself touches
    /// nothing; only its steps are judged.
    pub fn steps<T: Any + Send>(input: T, steps: Vec<ToolCall>) -> Self {
        Self { input: Box::new(input), access: Vec::new(), steps, results: Vec::new() }
    }

    /// The calls this call stands for, not run yet (empty for an ordinary call).
    pub fn pending_steps(&self) -> &[ToolCall] {
        &self.steps
    }

    /// Takes the pending steps out, for the executor to run them.
    pub fn take_steps(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.steps)
    }

    /// The same call with the outputs of the steps that ran, in order.
    #[must_use]
    pub fn with_results(mut self, results: Vec<CallOutput>) -> Self {
        self.results = results;
        self
    }

    /// The input as the type the tool prepared, and the outputs of the steps that ran; `None`
    /// if a different tool prepared it.
    pub fn into_parts<T: Any>(self) -> Option<(T, Vec<CallOutput>)> {
        let results = self.results;
        self.input.downcast::<T>().ok().map(|input| (*input, results))
    }

    /// What the call will touch.
    pub fn access(&self) -> &[Access] {
        &self.access
    }

    /// Takes the input back as the type the tool prepared; `None` if a different tool prepared it.
    pub fn into_input<T: Any>(self) -> Option<T> {
        self.input.downcast::<T>().ok().map(|input| *input)
    }
}

impl std::fmt::Debug for PreparedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCall")
            .field("access", &self.access)
            .field("steps", &self.steps.len())
            .finish_non_exhaustive()
    }
}

/// What a successful call returns: the text the model reads, and any images it may also see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Model-visible text (structured results as compact JSON).
    pub text: String,
    /// Images for models that take image input; the text should name them too.
    pub images: Vec<crate::Image>,
}

impl ToolOutput {
    /// Plain text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), images: Vec::new() }
    }

    /// The output with `images` added.
    #[must_use]
    pub fn with_images(mut self, images: Vec<crate::Image>) -> Self {
        self.images.extend(images);
        self
    }

    /// Compact JSON output of a structured result.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Self, ToolError> {
        serde_json::to_string(value).map(Self::text).map_err(|err| {
            ToolError::new(
                crate::ToolErrorKind::ToolError,
                format!("could not serialize the result: {err}"),
            )
        })
    }
}

/// A tool the executor can run: object-safe so a registry can hold any mix of tools.
///
/// Implementors guarantee that `prepare` is pure and cheap (it runs for every call, before the
/// permission check) and that `run` honours `ctx.cancel`: when the token is cancelled the tool stops
/// its work (a process tool kills its process group) and returns promptly.
///
/// Most tools implement [`crate::TypedTool`] and are wrapped in [`crate::Typed`] instead of
/// implementing this trait by hand.
pub trait Tool: Send + Sync + 'static {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// Parses and validates the raw argument string and reports what the call will touch.
    fn prepare(&self, arguments: &str) -> Result<PreparedCall, ArgsError>;

    /// Runs a call prepared by this tool's [`Tool::prepare`].
    fn run<'a>(
        &'a self,
        call: PreparedCall,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, expect: &str) {
        assert_eq!(ToolSpec::default_rule_name(name), expect);
    }

    #[test]
    fn rule_names() {
        check("bash", "Bash");
        check("list_dir", "ListDir");
        check("web_search", "WebSearch");
        check("mcp__github__create_issue", "mcp__github__create_issue");
    }

    /// "Any domain" is an `Option` in Rust and the empty string it always was on the wire.
    #[test]
    fn network_access_keeps_its_json_shape() {
        let any = serde_json::to_string(&Access::Network(None)).unwrap();
        assert_eq!(any, r#"{"kind":"network","target":""}"#);
        let one = serde_json::to_string(&Access::Network(Some("docs.rs".to_owned()))).unwrap();
        assert_eq!(one, r#"{"kind":"network","target":"docs.rs"}"#);
        for json in [any, one] {
            let back: Access = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
        }
    }
}
