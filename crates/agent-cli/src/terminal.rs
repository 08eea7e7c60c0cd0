//! What reaches the terminal from peers: control characters made visible, and error chains
//! printed without repeating themselves.
//!
//! An MCP server's tool description, a server's error message, a project's `.mcp.json` or a model's
//! text may carry escape sequences that clear the screen, move the cursor or retitle the window, so
//! a peer could hide or spoof what the user reads. Every such string goes through [`visible`] (or
//! [`visible_line`]) before it is printed: each control character is shown as its Unicode control
//! picture (`ESC` as `␛`, `BEL` as `␇`, DEL as `␡`) and each C1 control as `\u{9b}`, so nothing a peer
//! sends can drive the terminal, and what it tried is still there to see. One rule for every command
//! and the REPL; the tool-activity lines and previews use it too.

pub(crate) use agent_session::visible::{push_visible, visible, visible_line};

/// An error and its causes as one line of text (made [`visible`]), leaving out a cause whose
/// text the message before it already holds: many errors put their source into their own message
/// (`cannot be used: No such file or directory`), and printing the chain would say it twice.
pub(crate) fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    visible(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_chain_says_each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let doubled =
            anyhow::Error::new(io).context("root /x cannot be used: No such file or directory");
        assert_eq!(error_text(&doubled), "root /x cannot be used: No such file or directory");
        let io = std::io::Error::other("disk full");
        let chained = anyhow::Error::new(io).context("writing a.txt");
        assert_eq!(error_text(&chained), "writing a.txt: disk full");
        let hostile = anyhow::anyhow!("server said \x1b[2J");
        assert_eq!(error_text(&hostile), "server said ␛[2J");
    }
}
