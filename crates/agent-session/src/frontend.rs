//! What a session needs from the program around it: somewhere to say what the user should know
//! while it is assembled, and someone to ask when a project wants to run its own code.

/// The program that opened the session: a terminal, an editor, a server, a batch runner.
pub trait Frontend: Send + Sync {
    /// Tells the user something about the session (a warning, a skipped server, a cut file). The
    /// text is one message without the program's prefix; peer-supplied parts are already made
    /// visible ([`crate::visible`]).
    fn say(&self, message: &str);

    /// Whether [`Frontend::confirm`] can reach a person now (a terminal on stdin, an editor).
    fn can_ask(&self) -> bool {
        false
    }

    /// Shows `lines` and asks `question`; `true` only for a clear yes. A front end that cannot
    /// ask answers no.
    fn confirm(&self, lines: &[String], question: &str) -> bool {
        let _ = (lines, question);
        false
    }
}

/// A front end that reports nothing and never asks: for a program with no user at hand.
#[derive(Debug, Default)]
pub struct Silent;

impl Frontend for Silent {
    fn say(&self, _message: &str) {}
}
