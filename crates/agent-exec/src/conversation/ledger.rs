//! The ledger: what compacted turns did, recorded by the harness from the dropped items rather
//! than remembered by the model — files read and changed, commands with their exit codes, tool
//! outputs dropped with the path of their saved full text, open jobs.

use std::collections::BTreeSet;

use agent_core::{Access, Item};
use serde::{Deserialize, Serialize};

use crate::Registry;

/// How many commands and dropped outputs the rendered ledger lists (the latest ones); older
/// entries are counted, so the ledger itself cannot outgrow the window.
const LISTED: usize = 30;
/// How many characters of a command line the ledger keeps.
const COMMAND_CHARS: usize = 160;

/// One command a compacted turn ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRecord {
    /// The command line (cut at 160 characters).
    pub line: String,
    /// Its exit code, when the output said (`exit N` on its first lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i64>,
    /// Whether the call failed (denied, timed out, a tool error).
    #[serde(default)]
    pub failed: bool,
}

/// One tool output that left the model's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedOutput {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Where its full text is saved; `None` when there is no session directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<String>,
}

/// Everything compactions dropped so far, accumulated over a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// How many compactions replaced turns.
    pub compactions: usize,
    /// Paths read.
    pub files_read: BTreeSet<String>,
    /// Paths created or changed.
    pub files_changed: BTreeSet<String>,
    /// Commands run, oldest first.
    pub commands: Vec<CommandRecord>,
    /// Outputs dropped or shrunk, oldest first.
    pub dropped_outputs: Vec<DroppedOutput>,
}

impl Ledger {
    /// Records what `items` (about to be dropped) did. The tool's own `prepare` says what a call
    /// touches, so the ledger knows every tool the registry knows, built-in or not.
    pub(crate) fn record(&mut self, items: &[Item], registry: &Registry) {
        for (index, item) in items.iter().enumerate() {
            let Item::ToolCall(call) = item else { continue };
            let output = items[index..].iter().find_map(|item| match item {
                Item::ToolOutput(output) if output.call_id == call.call_id => Some(output),
                _ => None,
            });
            let Some(prepared) =
                registry.get(&call.name).and_then(|tool| tool.prepare(&call.arguments).ok())
            else {
                continue;
            };
            for access in prepared.access() {
                match access {
                    Access::Read(path) => {
                        self.files_read.insert(path.clone());
                    }
                    Access::Write(path) => {
                        self.files_changed.insert(path.clone());
                    }
                    Access::Command { line, .. } => self.commands.push(CommandRecord {
                        line: line.chars().take(COMMAND_CHARS).collect(),
                        exit: output.and_then(|output| exit_code(&output.output)),
                        failed: output.is_some_and(|output| !output.ok),
                    }),
                    _ => {}
                }
            }
        }
    }

    /// Notes an output that left the model's view.
    pub(crate) fn dropped(&mut self, call_id: &str, tool: &str, saved: Option<String>) {
        if self.dropped_outputs.iter().any(|dropped| dropped.call_id == call_id) {
            return;
        }
        self.dropped_outputs.push(DroppedOutput {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            saved,
        });
    }

    /// The ledger as the model reads it.
    pub fn render(&self, open_jobs: &[String]) -> String {
        let mut text = String::from(
            "[harness] Ledger of the compacted turns (recorded by the harness, exact):\n",
        );
        let list = |set: &BTreeSet<String>| {
            if set.is_empty() {
                "none".to_owned()
            } else {
                set.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        text.push_str(&format!("- Files read: {}\n", list(&self.files_read)));
        text.push_str(&format!("- Files changed: {}\n", list(&self.files_changed)));
        text.push_str(&format!("- Commands run: {}", self.commands.len()));
        let skipped = self.commands.len().saturating_sub(LISTED);
        if skipped > 0 {
            text.push_str(&format!(" (the first {skipped} not listed)"));
        }
        text.push('\n');
        for command in &self.commands[skipped..] {
            let status = match (command.exit, command.failed) {
                (Some(code), _) => format!("exit {code}"),
                (None, true) => "failed".to_owned(),
                (None, false) => "exit unknown".to_owned(),
            };
            text.push_str(&format!("  - `{}` → {status}\n", command.line));
        }
        text.push_str(&format!("- Tool outputs dropped from view: {}", self.dropped_outputs.len()));
        let skipped = self.dropped_outputs.len().saturating_sub(LISTED);
        if skipped > 0 {
            text.push_str(&format!(" (the first {skipped} not listed)"));
        }
        text.push('\n');
        for dropped in &self.dropped_outputs[skipped..] {
            let saved = dropped.saved.as_deref().unwrap_or("not saved (no session directory)");
            text.push_str(&format!("  - {} ({}): {saved}\n", dropped.call_id, dropped.tool));
        }
        if open_jobs.is_empty() {
            text.push_str("- Open jobs: none\n");
        } else {
            text.push_str("- Open jobs:\n");
            for job in open_jobs {
                text.push_str(&format!("  - {job}\n"));
            }
        }
        text
    }
}

/// The exit code a command's output reports on one of its first lines (`exit 2 · 0.1 s · …`),
/// after any truncation notice.
fn exit_code(output: &str) -> Option<i64> {
    output.lines().take(3).find_map(|line| {
        let rest = line.trim_start().strip_prefix("exit ")?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_read_from_the_first_lines() {
        let check = |text: &str, expect| assert_eq!(exit_code(text), expect, "{text:?}");
        check("exit 0 · 0.0 s · workdir .\nhi", Some(0));
        check("[output truncated: …]\nexit 2 · 1 s\nboom", Some(2));
        check("no exit here\n", None);
        check("exit unknown", None);
    }
}
