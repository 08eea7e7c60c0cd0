//! Approval prompts on the terminal: yes, no, or always for this session.

use std::{
    io::{BufRead, Write},
    sync::Mutex,
};

use agent_core::BoxFuture;
use agent_exec::{Approval, ApprovalRequest, Approver};

use crate::render::short;

/// Asks on stderr and reads the answer from stdin, one prompt at a time.
#[derive(Default)]
pub(crate) struct TerminalApprover {
    /// Held while a prompt is open, so the calls of a parallel batch never ask at once.
    asking: Mutex<()>,
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let _one_at_a_time =
                self.asking.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // The read blocks this thread on purpose: the turn cannot go on until the user answers,
            // and a reader left behind on another thread would swallow the next prompt's line.
            eprint!("{}", question(request));
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => {
                    Approval::Deny { reason: Some("no answer (end of input)".to_owned()) }
                }
                Ok(_) => parse_answer(&line),
            }
        })
    }
}

/// The prompt: the tool, a short argument summary, why it asks and what "always" would allow.
fn question(request: &ApprovalRequest) -> String {
    let mut text =
        format!("\n? {} {}\n  {}\n", request.tool, short(&request.arguments, 100), request.reason);
    if !request.suggested_rules.is_empty() {
        text.push_str(&format!("  always would allow: {}\n", request.suggested_rules.join(", ")));
    }
    text.push_str("  allow? [y]es / [n]o (optionally: n <reason>) / [a]lways for this session: ");
    text
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
        insta::assert_snapshot!(question(&request));
    }
}
