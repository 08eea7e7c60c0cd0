//! Approval prompts on the terminal: yes, no, or always for this session.

use std::{
    io::{BufRead, Write},
    sync::{
        Arc, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
};

use agent_core::BoxFuture;
use agent_exec::{Approval, ApprovalRequest, Approver};
use tokio::sync::{Mutex, mpsc};

use crate::{
    preview::{self, Preview, Previewer, Style},
    terminal::{visible, visible_line},
};

/// Asks on stderr and reads the answer from stdin, one prompt at a time.
///
/// The answer is read on a separate thread so that Ctrl-C can abandon the prompt (the executor
/// stops waiting when the turn is cancelled). A line that thread reads after its prompt was
/// abandoned is not lost: the REPL takes it as its next input ([`TerminalApprover::take_line`]).
pub(crate) struct TerminalApprover {
    lines: Arc<Mutex<mpsc::UnboundedReceiver<Option<String>>>>,
    sender: mpsc::UnboundedSender<Option<String>>,
    /// Lines owed to a consumer: 1 from the moment a reader thread starts until its line has
    /// been received (by a prompt or by the REPL), else 0. One counter covers both "the reader
    /// is still waiting" and "its line is in the channel", so no consumer can see the reader as
    /// finished while its line is still on the way, or wait for a line nobody will send.
    owed: Arc<AtomicUsize>,
    /// What the previews need from the session, once it is open.
    previewer: OnceLock<Arc<Previewer>>,
    /// Who is told that a question waits (the terminal's bell, the `[notify]` program).
    notifier: OnceLock<Arc<crate::notify::Notifier>>,
}

impl TerminalApprover {
    pub(crate) fn new() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            lines: Arc::new(Mutex::new(receiver)),
            sender,
            owed: Arc::new(AtomicUsize::new(0)),
            previewer: OnceLock::new(),
            notifier: OnceLock::new(),
        }
    }

    /// Lets the prompts preview calls in the session's workspace (set once, when it is open;
    /// until then a prompt shows the arguments as they came).
    pub(crate) fn set_previewer(&self, previewer: Arc<Previewer>) {
        let _ = self.previewer.set(previewer);
    }

    /// Notifies through `notifier` whenever a question waits (set once, when the session is open).
    pub(crate) fn set_notifier(&self, notifier: Arc<crate::notify::Notifier>) {
        let _ = self.notifier.set(notifier);
    }

    /// Starts a reader thread unless a line is already owed (being read, or read and not yet
    /// received).
    fn read_line(&self) {
        if self.owed.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return;
        }
        let sender = self.sender.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            let line = match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line),
            };
            let _ = sender.send(line);
        });
    }

    /// Holds the terminal for one whole question, so the calls of a parallel batch (approvals
    /// and `ask_user`'s questions alike) never ask at once.
    pub(crate) async fn hold(&self) -> Held<'_> {
        Held { lines: self.lines.lock().await, approver: self }
    }

    /// Whether a line read for an abandoned prompt is owed to the REPL.
    pub(crate) fn is_reading(&self) -> bool {
        self.owed.load(Ordering::SeqCst) > 0
    }

    /// The line an abandoned prompt's reader got or is still waiting for, which belongs to the
    /// REPL: `None` when no line is owed, `Some(None)` at end of input. Blocks while the reader
    /// waits. Call outside the async runtime.
    pub(crate) fn take_line(&self) -> Option<Option<String>> {
        if self.owed.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut lines = self.lines.try_lock().ok()?;
        let line = lines.blocking_recv().flatten();
        self.owed.store(0, Ordering::SeqCst);
        Some(line)
    }
}

/// The terminal, held for one question ([`TerminalApprover::hold`]).
pub(crate) struct Held<'a> {
    lines: tokio::sync::MutexGuard<'a, mpsc::UnboundedReceiver<Option<String>>>,
    approver: &'a TerminalApprover,
}

impl Held<'_> {
    /// The next line typed, `None` at end of input. A prompt cancelled while it waits leaves
    /// the line owed to the REPL.
    pub(crate) async fn line(&mut self) -> Option<String> {
        let _ = std::io::stderr().flush();
        self.approver.read_line();
        let answer = self.lines.recv().await.flatten();
        // Received within the same poll as the line arrived, so a cancelled prompt either took
        // its line here or leaves it owed to the REPL.
        self.approver.owed.store(0, Ordering::SeqCst);
        answer
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let mut held = self.hold().await;
            let style = Style::stderr();
            let preview = preview::approval(request, self.previewer.get().map(|p| &**p), &style);
            // Rung before the question is drawn, so whoever sees the question got the ring.
            if let Some(notifier) = self.notifier.get() {
                let what = format!("{}: {}", request.tool, request.reason);
                notifier.notify(crate::notify::Event::ApprovalWaiting, &what);
            }
            eprint!("{}", question(request, &preview, &style));
            loop {
                match held.line().await {
                    Some(line) if is_view(&line) => {
                        eprint!("{}", preview.block.render(&style, None, ""));
                        eprint!("{}", ask_line(false));
                    }
                    Some(line) => return parse_answer(&line),
                    None => {
                        return Approval::Deny {
                            reason: Some("no answer (end of input)".to_owned()),
                        };
                    }
                }
            }
        })
    }
}

/// How many preview lines a prompt shows before it offers `v`: what leaves the rest of the
/// prompt on screen, within reason.
fn preview_limit(style: &Style) -> usize {
    style.rows.saturating_sub(12).clamp(8, 60)
}

/// The prompt: the tool and what the call will do (an edit's diff, a command with its directory
/// and sandbox, …), why it asks, and what "always" would allow.
/// Everything in it that a peer wrote (an MCP tool's name, the model's arguments, a server's
/// reason) is made visible, so the prompt itself cannot be redrawn by what it asks about.
fn question(request: &ApprovalRequest, preview: &Preview, style: &Style) -> String {
    let title = if preview.title.is_empty() {
        String::new()
    } else {
        format!(" {}", visible_line(&preview.title))
    };
    let tool = visible_line(&request.tool);
    let mut text = format!("\n? {}{title}\n", style.paint(preview::Tone::Header, &tool));
    let limit = preview_limit(style);
    text.push_str(&preview.block.render(style, Some(limit), "v shows all"));
    text.push_str(&format!("  {}\n", visible(&request.reason)));
    if starts_a_job(request) {
        text.push_str(
            "  it will keep running in the background after this call, until it ends, is killed, \
             or the session ends\n",
        );
    }
    if !request.suggested_rules.is_empty() {
        let rules = request.suggested_rules.join(", ");
        text.push_str(&format!("  always would allow: {}\n", visible_line(&rules)));
    }
    text.push_str(&ask_line(preview.block.is_capped(limit)));
    text
}

/// The question itself; `view` offers the whole preview.
fn ask_line(view: bool) -> String {
    let view = if view { " / [v]iew all" } else { "" };
    format!("  allow? [y]es / [n]o (optionally: n <reason>) / [a]lways for this session{view}: ")
}

/// Whether `line` asks to see the whole preview.
fn is_view(line: &str) -> bool {
    matches!(line.trim().to_lowercase().as_str(), "v" | "view")
}

/// Whether the call starts a background job (`bash` with `background` or `yield_ms`).
fn starts_a_job(request: &ApprovalRequest) -> bool {
    let Ok(arguments) = serde_json::from_str::<serde_json::Value>(&request.arguments) else {
        return false;
    };
    request.tool == "bash"
        && (arguments["background"] == serde_json::Value::Bool(true)
            || arguments["yield_ms"].is_number())
}

/// Reads an answer; anything unclear is a no, since running a call nobody approved is worse.
fn parse_answer(line: &str) -> Approval {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_lowercase().as_str() {
        "y" | "yes" => Approval::AllowOnce,
        "a" | "always" => Approval::AllowForSession,
        "n" | "no" if !rest.trim().is_empty() => {
            Approval::Deny { reason: Some(rest.trim().to_owned()) }
        }
        _ => Approval::Deny { reason: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(line: &str, expect: Approval) {
        assert_eq!(parse_answer(line), expect);
    }

    #[test]
    fn answers() {
        check("y\n", Approval::AllowOnce);
        check(" YES ", Approval::AllowOnce);
        check("a", Approval::AllowForSession);
        check("always\n", Approval::AllowForSession);
        check("n", Approval::Deny { reason: None });
        check(
            "no use the edit tool\n",
            Approval::Deny { reason: Some("use the edit tool".to_owned()) },
        );
        check("", Approval::Deny { reason: None });
        check("yep", Approval::Deny { reason: None });
    }

    #[test]
    fn the_question_names_tool_reason_and_rule() {
        let request = ApprovalRequest {
            call_id: "c".to_owned(),
            tool: "bash".to_owned(),
            arguments: r#"{"command":"cargo test"}"#.to_owned(),
            access: Vec::new(),
            reason: "commands need approval in default mode".to_owned(),
            suggested_rules: vec!["Bash(cargo test *)".to_owned()],
        };
        insta::assert_snapshot!(ask(&request));
    }

    #[test]
    fn the_question_says_a_job_keeps_running() {
        let request = ApprovalRequest {
            call_id: "c".to_owned(),
            tool: "bash".to_owned(),
            arguments: r#"{"command":"npm run dev","background":true}"#.to_owned(),
            access: Vec::new(),
            reason: "commands need approval in default mode".to_owned(),
            suggested_rules: Vec::new(),
        };
        insta::assert_snapshot!(ask(&request));
    }

    /// The question for `request` with no session to preview in, as plain text.
    fn ask(request: &ApprovalRequest) -> String {
        let style = Style::plain(80);
        question(request, &preview::approval(request, None, &style), &style)
    }

    #[test]
    fn a_long_preview_is_capped_and_v_shows_it() {
        let content: String = (1..=50).map(|n| format!("line {n}\n")).collect();
        let arguments = serde_json::json!({"path": "a.txt", "content": content}).to_string();
        let dir = tempfile::tempdir().unwrap();
        let workspace = agent_exec::Workspace::new(dir.path()).unwrap();
        let previewer = Previewer::new(workspace, agent_tools::FileTracker::new(), String::new());
        let request = ApprovalRequest {
            call_id: "c".to_owned(),
            tool: "write_file".to_owned(),
            arguments,
            access: Vec::new(),
            reason: "edits need approval in default mode".to_owned(),
            suggested_rules: Vec::new(),
        };
        let style = Style::plain(80);
        let text =
            question(&request, &preview::approval(&request, Some(&previewer), &style), &style);
        assert!(text.contains("? write_file a.txt (new file, 50 lines)\n  +line 1\n"), "{text}");
        assert!(text.contains("  +line 18\n  … 32 more lines (v shows all)\n"), "{text}");
        assert!(text.ends_with("for this session / [v]iew all: "), "{text}");
        assert!(is_view(" V\n") && is_view("view") && !is_view("y"));
    }
}
