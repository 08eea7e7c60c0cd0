//! A closed stdout or stderr ends a command quietly, as it ends `ls` or `cat`: `agent skills list
//! | head -1` prints one line and exits with status 141 (128 + SIGPIPE, what a shell reports for
//! a tool that SIGPIPE killed), without a panic message.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `EPIPE`, and `println!` turns that
//! into a panic. Putting SIGPIPE back to its default at start-up would end the process just as
//! quietly, but on every pipe: a write to an MCP server or a language server that has exited, or
//! to a hook that did not read its stdin, would kill the agent mid-session. So the signal stays
//! ignored and the two places a closed stream surfaces are handled here: the panic of a print
//! macro ([`install`]) and an error that a command returns ([`is_broken_pipe`]).
//!
//! The protocol servers (`agent acp`, `agent mcp serve`) do not install the hook: their stdout is
//! the client's stream, and when the client goes away they end their session and say so on stderr
//! rather than vanish (docs/cli.md, "Closed output").

use std::io;

/// The status of a command whose output was closed under it.
pub(crate) const STATUS: u8 = 141;

/// Makes a print macro's panic on a closed stdout or stderr end the process with [`STATUS`];
/// every other panic goes to the default hook as before.
pub(crate) fn install() {
    let default = std::panic::take_hook();
    // What `EPIPE` reads as in an `io::Error`, as the print macros' panic message ends with it.
    let broken = io::Error::from_raw_os_error(rustix::io::Errno::PIPE.raw_os_error()).to_string();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if is_print_failure(message, &broken) {
            std::process::exit(i32::from(STATUS));
        }
        default(info);
    }));
}

/// Whether `message` is the panic of `print!`/`eprint!` on a closed stream, whose error reads
/// `broken`.
fn is_print_failure(message: &str, broken: &str) -> bool {
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && message.ends_with(broken)
}

/// Whether `err` (a command's error) is a write to a closed pipe.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|cause| cause.kind() == io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::is_print_failure;

    #[test]
    fn only_the_print_macros_failure_on_a_closed_pipe_is_quiet() {
        let broken = std::io::Error::from_raw_os_error(rustix::io::Errno::PIPE.raw_os_error());
        let broken = broken.to_string();
        let check = |message: &str, quiet: bool| {
            // The std text the hook relies on: if it changes, this case fails first.
            assert_eq!(is_print_failure(message, &broken), quiet, "{message}");
        };
        check(&format!("failed printing to stdout: {broken}"), true);
        check(&format!("failed printing to stderr: {broken}"), true);
        check("failed printing to stdout: No space left on device (os error 28)", false);
        check(&format!("index out of bounds: {broken}"), false);
        check("", false);
    }
}
