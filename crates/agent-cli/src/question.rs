//! The model's questions on the terminal (`ask_user`, docs/ask-user.md): the question and its
//! numbered choices on stderr, the answer read from stdin through the approval prompts' reader,
//! so a question and an approval never ask at once and a line typed after Ctrl-C is not lost.

use agent_core::BoxFuture;
use agent_exec::ask::{Asker, Question, Reply};

use crate::{approval::TerminalApprover, terminal::visible_line};

impl Asker for TerminalApprover {
    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let mut held = self.hold().await;
            eprint!("{}", shown(question));
            loop {
                let Some(line) = held.line().await else {
                    // End of input: there is no one left to answer.
                    return Reply::Unavailable;
                };
                match parse(question, &line) {
                    Some(reply) => return reply,
                    None => eprint!("{}", ask_line(question)),
                }
            }
        })
    }
}

/// The question, its numbered choices and how to answer. Everything the model wrote is made
/// visible, so a question cannot redraw the terminal.
fn shown(question: &Question) -> String {
    let mut text = format!("\n? ask_user: {}\n", visible_line(&question.question));
    for (number, choice) in question.choices.iter().enumerate() {
        let description = if choice.description.is_empty() {
            String::new()
        } else {
            format!(" — {}", visible_line(&choice.description))
        };
        text.push_str(&format!("  {}. {}{description}\n", number + 1, visible_line(&choice.label)));
    }
    text.push_str(&ask_line(question));
    text
}

/// How to answer, as the question allows.
fn ask_line(question: &Question) -> String {
    let count = question.choices.len();
    let several = if question.multiple { " (several: 1,3)" } else { "" };
    let own = if question.free_text { ", or type your own answer" } else { "" };
    format!("  answer with a number 1-{count}{several}{own}; Enter declines: ")
}

/// The reply a line gives; `None` when it is no answer to this question and it is asked again.
fn parse(question: &Question, line: &str) -> Option<Reply> {
    let line = line.trim();
    if line.is_empty() {
        return Some(Reply::Declined);
    }
    let numbers: Option<Vec<usize>> = line
        .split([',', ' '])
        .filter(|part| !part.is_empty())
        .map(|part| part.parse::<usize>().ok().filter(|n| (1..=question.choices.len()).contains(n)))
        .collect();
    match numbers {
        Some(numbers) if question.multiple || numbers.len() == 1 => {
            let mut choices: Vec<usize> = Vec::new();
            for number in numbers {
                if !choices.contains(&(number - 1)) {
                    choices.push(number - 1);
                }
            }
            Some(Reply::Chosen { choices })
        }
        _ if question.free_text => Some(Reply::Text { text: line.to_owned() }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use agent_exec::ask::Choice;

    use super::*;

    fn question(multiple: bool, free_text: bool) -> Question {
        let choice = |label: &str| Choice { label: label.into(), description: String::new() };
        Question {
            call_id: "c".into(),
            question: "which?".into(),
            choices: vec![choice("a"), choice("b"), choice("c")],
            multiple,
            free_text,
        }
    }

    fn check(multiple: bool, free_text: bool, line: &str, expected: Option<Reply>) {
        assert_eq!(parse(&question(multiple, free_text), line), expected, "{line:?}");
    }

    #[test]
    fn lines_become_replies() {
        let chosen = |choices: &[usize]| Some(Reply::Chosen { choices: choices.to_vec() });
        check(false, false, "2\n", chosen(&[1]));
        check(false, false, "  \n", Some(Reply::Declined));
        check(false, false, "4", None);
        check(false, false, "0", None);
        check(false, false, "1,3", None);
        check(false, false, "maybe", None);
        check(true, false, "3, 1 3", chosen(&[2, 0]));
        check(false, true, "1,3", Some(Reply::Text { text: "1,3".into() }));
        check(false, true, " my own ", Some(Reply::Text { text: "my own".into() }));
    }

    #[test]
    fn the_question_cannot_redraw_the_terminal() {
        let mut asked = question(false, true);
        asked.question = "which?\x1b[2J".into();
        asked.choices[0].description = "one\x1b]0;title\x07".into();
        let text = shown(&asked);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(text.contains("  1. a — one"), "{text}");
        assert!(
            text.ends_with("answer with a number 1-3, or type your own answer; Enter declines: ")
        );
    }
}
