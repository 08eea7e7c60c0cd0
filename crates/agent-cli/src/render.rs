//! Terminal rendering of agent events: text to stdout, tool activity to stderr, or JSON lines.

use std::io::Write;

use agent_exec::{
    Remedy,
    agent::{AgentEvent, Finish, FinishReason},
};

use crate::organizer::Shown as _;
use crate::{
    events::{self, FailReason, JsonStream},
    markdown::{self, MarkdownStream, Screen},
    preview::{Style, fit, short},
    work::Work,
};

/// How events are shown.
pub(crate) struct Renderer {
    /// The `--json` stream, when events are printed as JSON lines.
    json: Option<JsonStream>,
    /// Whether text was streamed since the last turn began, so a final answer is not printed twice.
    streamed: bool,
    /// Whether text deltas go to stdout as they arrive (off when only the final answer may).
    pub(crate) stream_text: bool,
    /// Where answers are rendered as Markdown; `None` prints the model's text as it is.
    pub(crate) markdown: Option<Screen>,
    /// The answer being rendered.
    answer: Option<MarkdownStream>,
    /// Called before answer text is written (the REPL stops its spinner).
    pub(crate) before_text: Option<Box<dyn Fn() + Send>>,
    /// The session's calls: previews of what each did, `/last` and `/diff`.
    pub(crate) work: Work,
    /// The session's plan and children: the plan is shown after each change.
    pub(crate) organizer: Option<crate::agents::Organizer>,
}

impl Renderer {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json: json.then(JsonStream::default),
            streamed: false,
            stream_text: true,
            markdown: None,
            answer: None,
            before_text: None,
            work: Work::default(),
            organizer: None,
        }
    }

    /// The `--json` stream's last event for a run that ended with `finish`.
    pub(crate) fn finish(&mut self, finish: &Finish, exit_code: u8) {
        if let Some(stream) = &mut self.json {
            stream.child_usage =
                self.organizer.as_ref().and_then(crate::organizer::Shown::child_tokens);
            events::print(&stream.finish(finish, exit_code));
        }
    }

    /// Records how the jobs a run left running ended: on stderr now, or in the `--json` stream's
    /// last event.
    pub(crate) fn jobs_ended(&mut self, report: Option<events::BackgroundJobs>) {
        let Some(report) = report else { return };
        if let Some(stream) = &mut self.json {
            stream.background_jobs = Some(report);
            return;
        }
        let how = match report.policy {
            events::JobsPolicy::Kill => "killed",
            events::JobsPolicy::Wait => "waited for",
        };
        for job in &report.jobs {
            eprintln!("agent: {how} job {} `{}`: {}", job.id, short(&job.command, 80), job.status);
        }
    }

    /// The `--json` stream's last event for a run that could not end normally.
    pub(crate) fn failed(&mut self, reason: FailReason, message: String, exit_code: u8) {
        if let Some(stream) = &self.json {
            events::print(&stream.failed(reason, message, exit_code));
        }
    }

    pub(crate) fn show(&mut self, event: &AgentEvent) {
        let plan_changed = matches!(event, AgentEvent::ToolCallFinished { name, ok: true, .. } if name == "update_plan");
        if let (true, Some(organizer)) = (plan_changed, &self.organizer) {
            match &self.json {
                Some(_) => events::print(&organizer.plan_event()),
                None => eprintln!("{}", organizer.checklist()),
            }
        }
        if let Some(stream) = &mut self.json {
            if let Some(event) = stream.event(event) {
                events::print(&event);
            }
            return;
        }
        match event {
            AgentEvent::TurnStarted { .. } => {
                self.flush_answer();
                self.streamed = false;
            }
            AgentEvent::TextDelta { .. } if !self.stream_text => {}
            AgentEvent::TextDelta { text } => {
                self.streamed = true;
                let shown = match self.markdown {
                    Some(screen) => {
                        self.answer.get_or_insert_with(|| MarkdownStream::new(screen)).push(text)
                    }
                    None => text.clone(),
                };
                self.emit(&shown);
            }
            AgentEvent::ToolCallStarted { call_id, name, arguments } => {
                self.end_text();
                let line = self.work.started(call_id, name, arguments);
                eprintln!("▸ {}", fit(&line, Style::stderr().width.saturating_sub(2)));
            }
            AgentEvent::ToolCallFinished {
                call_id,
                name,
                ok,
                error,
                duration_ms,
                truncated,
                remedy,
                output_path,
            } => {
                let status = match (ok, error) {
                    (true, _) => "ok".to_owned(),
                    (false, Some(code)) => format!("error: {code}"),
                    (false, None) => "error".to_owned(),
                };
                let cut = if *truncated { ", output capped" } else { "" };
                let line = format!("  {name}: {status} ({duration_ms} ms{cut})");
                eprintln!("{line}");
                self.work.finished(call_id, line, output_path.clone());
                if let Some(remedy) = remedy {
                    // The suggested rules quote the model's arguments.
                    eprintln!("  {}", crate::terminal::visible(&remedy_advice(remedy)));
                }
            }
            AgentEvent::Finished { reason: FinishReason::Stopped, text } => {
                self.end_text();
                let why = crate::terminal::visible(text.as_deref().unwrap_or_default());
                eprintln!("agent: stopped by a hook: {why}");
            }
            AgentEvent::Finished { reason: FinishReason::InvalidOutput, .. } => self.end_text(),
            AgentEvent::Finished { text, .. } => match text {
                Some(text) if !self.streamed => match self.markdown {
                    Some(screen) => self.emit(&markdown::render(text, screen)),
                    None => println!("{text}"),
                },
                _ => self.end_text(),
            },
            AgentEvent::Error { message } => {
                self.flush_answer();
                eprintln!("agent: model error: {}", crate::terminal::visible(message));
            }
            AgentEvent::Compaction { info, .. } => eprintln!("{}", compaction_line(info)),
            AgentEvent::ItemAdded { item: agent_core::Item::ToolOutput(output) } => {
                eprint!("{}", self.work.output(output, &Style::stderr()));
            }
            AgentEvent::ReasoningDelta { .. }
            | AgentEvent::Request { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::ItemAdded { .. } => {}
        }
    }
}

impl Renderer {
    /// Prints the rest of a rendered answer cut short (by an error, or a turn that ended
    /// without a finish); raw text is left as it is, so a pipe sees the model's bytes alone.
    fn flush_answer(&mut self) {
        if let Some(mut answer) = self.answer.take() {
            self.emit(&answer.finish());
        }
    }

    /// Ends the streamed text, if any: the rest of a rendered answer, or the newline raw text
    /// may lack.
    fn end_text(&mut self) {
        if std::mem::take(&mut self.streamed) {
            match self.answer.take() {
                Some(mut answer) => self.emit(&answer.finish()),
                None => println!(),
            }
        }
    }

    /// Writes answer text to stdout and flushes it, so a reader sees it at once.
    fn emit(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(before) = &self.before_text {
            before();
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// One line saying what a compaction did.
pub(crate) fn compaction_line(info: &agent_exec::compaction::CompactionInfo) -> String {
    let what = if info.turns_dropped == 0 {
        let arguments = match info.arguments_shrunk {
            0 => String::new(),
            n => format!(", {n} failed calls' arguments shrunk"),
        };
        format!("{} tool outputs shrunk{arguments}", info.outputs_shrunk)
    } else if info.summarized {
        format!("{} turns summarised", info.turns_dropped)
    } else {
        format!("{} turns dropped behind the ledger (no summary)", info.turns_dropped)
    };
    format!(
        "agent: context compacted ({}): {what}; about {} → {} tokens",
        serde_json::to_value(info.reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        info.tokens_before,
        info.tokens_after
    )
}

/// `rules` as this program's flags, quoted for a POSIX shell: `--allow 'Edit(./a)' --allow …`.
pub(crate) fn allow_flags(rules: &[String]) -> String {
    let quote = |rule: &String| format!("--allow '{}'", rule.replace('\'', "'\\''"));
    rules.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// What a person can do to let a refused call run, in this program's flags.
pub(crate) fn remedy_advice(remedy: &Remedy) -> String {
    let rules = allow_flags(&remedy.rules);
    match (remedy.mode, rules.is_empty()) {
        (None, true) => {
            "it needs approval: run it in an interactive session (`agent chat`)".to_owned()
        }
        (None, false) => format!("to allow it, rerun with {rules}"),
        (Some(mode), true) => format!(
            "it needs approval: run it in an interactive session (`agent chat`) or rerun with --permission-mode {mode}"
        ),
        (Some(mode), false) => {
            format!("to allow it, rerun with --permission-mode {mode} or with {rules}")
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_exec::PermissionMode;

    use super::*;

    #[test]
    fn remedies_are_worded_in_flags() {
        let remedy = |rules: &[&str], mode| Remedy {
            rules: rules.iter().map(|rule| (*rule).to_owned()).collect(),
            mode,
        };
        assert_eq!(
            remedy_advice(&remedy(&["Bash(cargo test *)"], None)),
            "to allow it, rerun with --allow 'Bash(cargo test *)'"
        );
        assert_eq!(
            remedy_advice(&remedy(&["Edit(./it's.rs)"], Some(PermissionMode::AcceptEdits))),
            "to allow it, rerun with --permission-mode accept-edits or with --allow 'Edit(./it'\\''s.rs)'"
        );
        assert_eq!(
            remedy_advice(&remedy(&[], Some(PermissionMode::Bypass))),
            "it needs approval: run it in an interactive session (`agent chat`) or rerun with --permission-mode bypass"
        );
        assert_eq!(
            remedy_advice(&remedy(&[], None)),
            "it needs approval: run it in an interactive session (`agent chat`)"
        );
    }
}
