//! Terminal rendering of agent events: text to stdout, tool activity to stderr, or JSON lines.

use std::io::Write;

use agent_exec::agent::AgentEvent;

/// How events are shown.
pub(crate) struct Renderer {
    json: bool,
    /// Whether text was streamed since the last turn began, so a final answer is not printed twice.
    streamed: bool,
}

impl Renderer {
    pub(crate) fn new(json: bool) -> Self {
        Self { json, streamed: false }
    }

    pub(crate) fn show(&mut self, event: &AgentEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        match event {
            AgentEvent::TurnStarted { .. } => self.streamed = false,
            AgentEvent::TextDelta { text } => {
                self.streamed = true;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            AgentEvent::ToolCallStarted { name, arguments, .. } => {
                if self.streamed {
                    println!();
                    self.streamed = false;
                }
                eprintln!("▸ {name} {}", short(arguments, 100));
            }
            AgentEvent::ToolCallFinished { name, ok, error, duration_ms, truncated, .. } => {
                let status = match (ok, error) {
                    (true, _) => "ok".to_owned(),
                    (false, Some(code)) => format!("error: {code}"),
                    (false, None) => "error".to_owned(),
                };
                let cut = if *truncated { ", output capped" } else { "" };
                eprintln!("  {name}: {status} ({duration_ms} ms{cut})");
            }
            AgentEvent::Finished { text, .. } => {
                match text {
                    Some(text) if !self.streamed => println!("{text}"),
                    _ if self.streamed => println!(),
                    _ => {}
                }
                self.streamed = false;
            }
            AgentEvent::Error { message } => eprintln!("agent: model error: {message}"),
            AgentEvent::ReasoningDelta { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::ItemAdded { .. } => {}
        }
    }
}

/// The first `max` characters of `text` on one line, with an ellipsis when cut.
pub(crate) fn short(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, max: usize, expect: &str) {
        assert_eq!(short(text, max), expect);
    }

    #[test]
    fn short_arguments() {
        check(r#"{"path":"a"}"#, 100, r#"{"path":"a"}"#);
        check("abcdef", 3, "abc…");
        check("a\nb", 10, "a b");
        check("ßßßß", 2, "ßß…");
    }
}
