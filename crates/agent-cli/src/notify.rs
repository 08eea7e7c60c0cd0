//! Notifications for a user who switched windows: when a REPL turn ends or an approval waits,
//! the terminal is rung (OSC 9 and the bell), the `[notify] program` is run with the event
//! as JSON on its stdin, and the hooks' `Notification` event fires (docs/cli.md, "Notifications").

use std::{
    io::{IsTerminal, Write},
    path::{Path, PathBuf},
    sync::{Mutex, PoisonError},
};

use agent_exec::{
    Hooks,
    process::{self, ProcessSpec},
};

use anyhow::Context;
use serde::Deserialize;
use serde_json::json;

/// The most characters of the last message a notification carries.
const PREVIEW_CHARS: usize = 200;

/// `[notify]` in the config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotifyTable {
    /// Off turns every notification off.
    #[serde(default = "yes")]
    pub(crate) enabled: bool,
    /// Ring the terminal (OSC 9 and BEL) when stderr or stdout is one.
    #[serde(default = "yes")]
    pub(crate) terminal: bool,
    /// A program and its arguments, run for each event with the JSON on its stdin.
    #[serde(default)]
    pub(crate) program: Vec<String>,
}

impl Default for NotifyTable {
    fn default() -> Self {
        Self { enabled: true, terminal: true, program: Vec::new() }
    }
}

fn yes() -> bool {
    true
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A prompt's turn ended (answered, stopped, failed or cancelled).
    TurnEnded,
    /// A call waits for the user's approval.
    ApprovalWaiting,
}

impl Event {
    /// The name in the JSON, Codex's where Codex has one.
    fn as_str(self) -> &'static str {
        match self {
            Self::TurnEnded => "agent-turn-complete",
            Self::ApprovalWaiting => "approval-requested",
        }
    }

    /// The `notification_type` of the `Notification` hook, Claude Code's.
    fn hook_type(self) -> &'static str {
        match self {
            Self::TurnEnded => "idle_prompt",
            Self::ApprovalWaiting => "permission_prompt",
        }
    }
}

/// Sends a session's notifications.
#[derive(Debug)]
pub(crate) struct Notifier {
    table: NotifyTable,
    /// The session notified about and its hooks; `/clear` starts another session.
    session: Mutex<(String, Hooks)>,
}

impl Notifier {
    /// The notifier of the config file at `config` (none: the defaults) for `session_id`.
    pub(crate) fn load(config: Option<&Path>, session_id: &str) -> anyhow::Result<Self> {
        let table = match config.map(std::fs::read_to_string) {
            Some(Ok(text)) => read_table(&text).with_context(|| {
                format!("[notify] in {}", config.unwrap_or(Path::new("")).display())
            })?,
            _ => NotifyTable::default(),
        };
        Ok(Self { table, session: Mutex::new((session_id.to_owned(), Hooks::default())) })
    }

    /// Notifies about the session `session_id` from now on, running its `hooks`.
    pub(crate) fn set_session(&self, session_id: &str, hooks: Hooks) {
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) =
            (session_id.to_owned(), hooks);
    }

    /// Notifies of `event`, with the start of `message` (the last answer, or the call waiting).
    /// Never blocks on the program or the hooks, and a failure to notify is logged, not fatal.
    /// `Notification` hooks run even with `[notify] enabled = false`: a hook is configured on
    /// its own, and removing it is its off switch.
    pub(crate) fn notify(&self, event: Event, message: &str) {
        let preview: String =
            message.chars().filter(|c| !c.is_control() || *c == ' ').take(PREVIEW_CHARS).collect();
        let (session_id, hooks) =
            self.session.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if hooks.wants_notification(event.hook_type()) {
            let message = match event {
                Event::TurnEnded => "agent is waiting for your input".to_owned(),
                Event::ApprovalWaiting => format!("agent needs your approval: {preview}"),
            };
            in_background(async move {
                let cancel = agent_core::CancellationToken::new();
                hooks.notification(event.hook_type(), &message, &cancel).await;
                Ok(())
            });
        }
        if !self.table.enabled {
            return;
        }
        if self.table.terminal {
            ring(event, &preview);
        }
        if let Some((program, args)) = self.table.program.split_first() {
            let payload = json!({
                "type": event.as_str(),
                "session_id": session_id,
                "last_message": preview,
                "cwd": std::env::current_dir().ok(),
            });
            run(program, args, payload.to_string());
        }
    }
}

/// The `[notify]` table of a config file's text; the defaults when it has none.
fn read_table(text: &str) -> anyhow::Result<NotifyTable> {
    let mut file: toml::Table = text.parse().context("parsing the config file")?;
    table(file.remove("notify").as_ref().and_then(toml::Value::as_table))
}

/// `[notify]` as the config file holds it, checked; the defaults when there is none.
pub(crate) fn table(notify: Option<&toml::Table>) -> anyhow::Result<NotifyTable> {
    let table: NotifyTable = match notify {
        Some(table) => toml::Value::Table(table.clone()).try_into()?,
        None => NotifyTable::default(),
    };
    if table.program.first().is_some_and(String::is_empty) {
        anyhow::bail!("[notify] program names no program");
    }
    Ok(table)
}

/// OSC 9 (a desktop notification in iTerm2, WezTerm, Windows Terminal, kitty, foot…) ended by
/// ST, then a bell of its own: a terminal that ignores OSC 9 drops the sequence, BEL included
/// had it been the terminator, and would not ring.
fn ring(event: Event, preview: &str) {
    let what = match event {
        Event::TurnEnded => "agent: turn ended",
        Event::ApprovalWaiting => "agent: approval waiting",
    };
    let short: String = preview.chars().take(60).collect();
    let text = if short.is_empty() { what.to_owned() } else { format!("{what}: {short}") };
    let bytes = format!("\x1b]9;{text}\x1b\\\x07");
    if std::io::stderr().is_terminal() {
        let _ = std::io::stderr().write_all(bytes.as_bytes());
    } else if std::io::stdout().is_terminal() {
        let mut out = std::io::stdout();
        let _ = out.write_all(bytes.as_bytes()).and_then(|()| out.flush());
    }
}

/// How long the program may run before its process group is killed.
const PROGRAM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs the program with `payload` on stdin, as a hook runs (the user's own program: its own
/// process group, the secret-free host environment, no tool sandbox), on a thread of its own so
/// the REPL never waits for it.
fn run(program: &str, args: &[String], payload: String) {
    let mut spec = args.iter().fold(ProcessSpec::new(program), |spec, arg| spec.arg(arg));
    spec.stdin = Some(payload.into_bytes());
    spec.max_output_bytes = 4096;
    let program = program.to_owned();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    in_background(async move {
        let cancel = agent_core::CancellationToken::new();
        let ran = process::run_unsandboxed(spec, cwd, cancel, Some(PROGRAM_TIMEOUT)).await;
        match ran {
            Ok(output) if output.success() => {}
            Ok(output) => eprintln!(
                "agent: warning: the [notify] program {program} failed (exit {:?})",
                output.exit_code
            ),
            Err(err) => {
                eprintln!("agent: warning: the [notify] program {program} did not run: {err}")
            }
        }
        Ok(())
    });
}

/// Runs `work` on a thread of its own with its own runtime, so neither the REPL's loop nor the
/// approval waiting for an answer ever waits for it.
fn in_background(work: impl std::future::Future<Output = std::io::Result<()>> + Send + 'static) {
    std::thread::spawn(move || {
        let ran = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .and_then(|runtime| runtime.block_on(work));
        if let Err(err) = ran {
            eprintln!("agent: warning: a notification did not run: {err}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, enabled: bool, program: &[&str]) {
        let table = read_table(text).unwrap();
        let program: Vec<String> = program.iter().map(|arg| (*arg).to_owned()).collect();
        assert_eq!((table.enabled, table.program), (enabled, program), "{text}");
    }

    #[test]
    fn the_table_is_read_with_its_defaults() {
        check("", true, &[]);
        check("[notify]\nenabled = false\n", false, &[]);
        check(
            "[notify]\nprogram = [\"notify-send\", \"agent\"]\n",
            true,
            &["notify-send", "agent"],
        );
        assert!(read_table("[notify]\nprogam = []\n").is_err(), "a misspelt key is refused");
    }
}
