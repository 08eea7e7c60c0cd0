//! `shell`: the tool behind the Responses API's `shell` built-in. A call is a list of commands;
//! each runs as its own `bash` call through the executor's whole path (the same sandbox,
//! permission rules, hooks, approvals, time limit, output cap and jobs rules as the model's own
//! `bash` calls), in order, and the first command that is refused ends the list.
//!
//! Its output is `{"output": [{"command", "stdout", "stderr", "outcome"}]}`, one entry per
//! command that was tried, which the Responses adapter sends as `shell_call_output`. `bash`
//! interleaves stdout and stderr in arrival order, so a command's whole output is its `stdout`;
//! `stderr` carries what the harness says about it (a refusal, a timeout).

use agent_core::{
    BoxFuture, BuiltinTool, CallOutput, Effects, PreparedCall, Tool, ToolCall, ToolContext,
    ToolError, ToolErrorKind, ToolOutput, ToolShape, ToolSpec,
    schema::{self, ArgsError, StrictError},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most commands one call may run.
pub const MAX_SHELL_COMMANDS: usize = 32;

/// Input of the `shell` tool: the Responses `shell_call` action.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellInput {
    /// The command lines to run, in order, each in a fresh `bash -c` at the workspace root.
    pub commands: Vec<String>,
    /// The time limit of each command, in milliseconds (bash's default when absent).
    pub timeout_ms: Option<u64>,
    /// The most characters of each command's output to return (head and tail are kept).
    pub max_output_length: Option<u64>,
}

/// Runs the commands of a `shell_call` as `bash` calls.
#[derive(Debug, Clone)]
pub struct Shell {
    spec: ToolSpec,
}

impl Shell {
    /// The tool, offered as the Responses `shell` built-in (and as a function elsewhere).
    pub fn new() -> Result<Self, StrictError> {
        let mut parameters = schema::strict_schema_for::<ShellInput>()?;
        if let Some(root) = parameters.as_object_mut() {
            root.shift_remove("title");
            root.shift_remove("description");
        }
        let spec = ToolSpec {
            name: "shell".to_owned(),
            description: format!(
                "Runs shell commands in order, each as its own bash call (at most {MAX_SHELL_COMMANDS}); \
                 stops at the first command that is refused."
            ),
            parameters,
            strict: true,
            aliases: Vec::new(),
            effects: Effects::RUNS_PROCESSES,
            rule_name: "Shell".to_owned(),
            text_input: None,
            shape: ToolShape::Builtin(BuiltinTool::Shell),
        };
        Ok(Self { spec })
    }
}

/// One command's entry.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct Entry {
    command: String,
    stdout: String,
    stderr: String,
    outcome: Value,
}

impl Tool for Shell {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, arguments: &str) -> Result<PreparedCall, ArgsError> {
        let input: ShellInput = schema::parse_args(arguments)?;
        let invalid = |message: String| ArgsError::Invalid { path: "$.commands".into(), message };
        if input.commands.is_empty() {
            return Err(invalid("give at least one command".into()));
        }
        if input.commands.len() > MAX_SHELL_COMMANDS {
            return Err(invalid(format!(
                "{} commands; at most {MAX_SHELL_COMMANDS} run in one call, split the list",
                input.commands.len()
            )));
        }
        let timeout_ms = input.timeout_ms.map(|ms| u32::try_from(ms).unwrap_or(u32::MAX));
        let steps = input
            .commands
            .iter()
            .enumerate()
            .map(|(n, command)| {
                let mut arguments = serde_json::json!({ "command": command });
                if let Some(ms) = timeout_ms {
                    arguments["timeout_ms"] = ms.into();
                }
                // The step's call id names its call and its place, for hooks, logs and the
                // file a cut output is saved to.
                ToolCall::function(format!("shell#{}", n + 1), "bash", arguments.to_string())
            })
            .collect();
        Ok(PreparedCall::steps(input, steps))
    }

    fn run<'a>(
        &'a self,
        call: PreparedCall,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some((input, results)) = call.into_parts::<ShellInput>() else {
                return Err(ToolError::new(
                    ToolErrorKind::ToolError,
                    "internal error: the call was prepared for another tool than shell",
                ));
            };
            let cap = input.max_output_length.and_then(|n| usize::try_from(n).ok());
            let left = input.commands.len().saturating_sub(results.len());
            let mut output: Vec<Entry> = input
                .commands
                .into_iter()
                .zip(results)
                .map(|(command, result)| entry(command, &result, cap))
                .collect();
            if left > 0
                && let Some(last) = output.last_mut()
            {
                let commands = if left == 1 { "command" } else { "commands" };
                last.stderr.push_str(&format!("\n({left} later {commands} did not run)"));
            }
            ToolOutput::json(&serde_json::json!({ "output": output }))
        })
    }
}

/// A `bash` call's output as a command's entry.
fn entry(command: String, result: &CallOutput, cap: Option<usize>) -> Entry {
    if result.ok {
        let (header, body) = result.output.split_once('\n').unwrap_or((&result.output, ""));
        let body = if body == "(no output)" { "" } else { body };
        return Entry {
            command,
            stdout: cut(body, cap),
            stderr: String::new(),
            outcome: serde_json::json!({"type": "exit", "exit_code": exit_code(header)}),
        };
    }
    // A failure's observation is `{"ok":false,"error":…,"message":…}`; the message says it.
    let message = serde_json::from_str::<Value>(&result.output)
        .ok()
        .and_then(|value| value.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| result.output.clone());
    let outcome = match result.error {
        Some(ToolErrorKind::Timeout) => serde_json::json!({"type": "timeout"}),
        // 126 is the shell's "found but cannot be executed": the command was refused.
        Some(ToolErrorKind::PermissionDenied | ToolErrorKind::Rejected) => {
            serde_json::json!({"type": "exit", "exit_code": 126})
        }
        _ => serde_json::json!({"type": "exit", "exit_code": 1}),
    };
    Entry { command, stdout: String::new(), stderr: cut(&message, cap), outcome }
}

/// The exit code in bash's header line: `exit 3 · …`, or `killed by signal 9 · …` (128 + the
/// signal, as a shell reports it).
fn exit_code(header: &str) -> i64 {
    let first = header.split(" · ").next().unwrap_or_default();
    if let Some(code) = first.strip_prefix("exit ").and_then(|code| code.parse().ok()) {
        return code;
    }
    match first.strip_prefix("killed by signal ").and_then(|signal| signal.parse::<i64>().ok()) {
        Some(signal) => 128 + signal,
        None => -1,
    }
}

/// `text` cut to `cap` characters, keeping its beginning and end.
fn cut(text: &str, cap: Option<usize>) -> String {
    let Some(cap) = cap else { return text.to_owned() };
    let count = text.chars().count();
    if count <= cap {
        return text.to_owned();
    }
    let head: String = text.chars().take(cap / 2).collect();
    let tail: String = text.chars().skip(count - (cap - cap / 2)).collect();
    format!("{head}\n[… {} characters cut …]\n{tail}", count - cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(ok: bool, text: &str, error: Option<ToolErrorKind>) -> CallOutput {
        CallOutput { call_id: "c".into(), output: text.into(), ok, error, images: Vec::new() }
    }

    #[track_caller]
    fn check(result: CallOutput, cap: Option<usize>, expect: Value) {
        let got = serde_json::to_value(entry("cmd".into(), &result, cap)).unwrap();
        assert_eq!(got, expect);
    }

    #[test]
    fn bash_outputs_become_entries() {
        check(
            output(true, "exit 0 · 0.0 s · workdir .\nhello", None),
            None,
            serde_json::json!({"command": "cmd", "stdout": "hello", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}),
        );
        check(
            output(true, "killed by signal 9 · 0.1 s · workdir .\n(no output)", None),
            None,
            serde_json::json!({"command": "cmd", "stdout": "", "stderr": "", "outcome": {"type": "exit", "exit_code": 137}}),
        );
        check(
            output(
                false,
                r#"{"ok":false,"error":"timeout","message":"killed after 1 s"}"#,
                Some(ToolErrorKind::Timeout),
            ),
            None,
            serde_json::json!({"command": "cmd", "stdout": "", "stderr": "killed after 1 s", "outcome": {"type": "timeout"}}),
        );
        check(
            output(
                false,
                r#"{"ok":false,"error":"permission_denied","message":"denied by rule"}"#,
                Some(ToolErrorKind::PermissionDenied),
            ),
            None,
            serde_json::json!({"command": "cmd", "stdout": "", "stderr": "denied by rule", "outcome": {"type": "exit", "exit_code": 126}}),
        );
        check(
            output(true, "exit 2 · 0.0 s · workdir .\nabcdefghij", None),
            Some(4),
            serde_json::json!({"command": "cmd", "stdout": "ab\n[… 6 characters cut …]\nij", "stderr": "", "outcome": {"type": "exit", "exit_code": 2}}),
        );
    }

    #[test]
    fn each_command_is_a_bash_step() {
        let shell = Shell::new().unwrap();
        let prepared = shell
            .prepare(r#"{"commands":["ls","pwd"],"timeout_ms":5000,"max_output_length":null}"#)
            .unwrap();
        let steps: Vec<_> = prepared
            .pending_steps()
            .iter()
            .map(|step| (step.name.as_str(), step.arguments.as_str()))
            .collect();
        assert_eq!(
            steps,
            [
                ("bash", r#"{"command":"ls","timeout_ms":5000}"#),
                ("bash", r#"{"command":"pwd","timeout_ms":5000}"#)
            ]
        );
        assert!(
            shell.prepare(r#"{"commands":[],"timeout_ms":null,"max_output_length":null}"#).is_err()
        );
    }
}
