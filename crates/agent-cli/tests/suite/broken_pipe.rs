//! A listing piped into a reader that has gone (`agent skills list | head -1`) ends quietly with
//! status 141, as `ls` does, instead of panicking; the protocol servers report the closed stream.

use std::process::Stdio;

use crate::suite::{Running, command};

/// Runs `agent args` with stdout a pipe whose read end is already closed, and returns what it
/// wrote to stderr and its exit code.
fn into_closed_pipe(workspace: &std::path::Path, args: &[&str]) -> (String, Option<i32>) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut command = command(workspace, args);
    command.stdin(Stdio::null());
    // `Running::spawn` pipes stdout itself; this command's stdout must be the closed pipe.
    let mut child = command
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent binary starts");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr)
        .expect("stderr is read");
    let status = child.wait().expect("the agent exits");
    (stderr, status.code())
}

/// One case: `args` into a closed pipe ends with 141 and says nothing on stderr.
fn check(args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (stderr, code) = into_closed_pipe(dir.path(), args);
    assert!(!stderr.contains("panicked"), "agent {}: {stderr}", args.join(" "));
    assert_eq!(code, Some(141), "agent {}: {stderr}", args.join(" "));
}

#[test]
fn listings_into_a_closed_pipe_end_quietly() {
    check(&["tools", "list"]);
    check(&["tools", "list", "--tokens"]);
    check(&["tools", "list", "--json"]);
    check(&["skills", "list"]);
    check(&["agents", "list"]);
    check(&["mcp", "list"]);
    check(&["sandbox", "check"]);
    check(&["completions", "bash"]);
    // clap writes the help itself and ends with 0 when it cannot: quiet too.
    let dir = tempfile::tempdir().unwrap();
    let (stderr, code) = into_closed_pipe(dir.path(), &["--help"]);
    assert_eq!((stderr.as_str(), code), ("", Some(0)));
}

/// The control: the same listing into a reader that reads succeeds, so the case above shows the
/// closed pipe and nothing else.
#[test]
fn the_same_listing_into_a_reader_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = command(dir.path(), &["skills", "list"]);
    let output = Running::spawn(command.stdin(Stdio::null())).finish("agent skills list");
    assert!(output.status.success(), "{output:?}");
    assert!(!output.stdout.is_empty());
}

/// `agent acp` whose client closed its stdout does not vanish: the reply it cannot send ends the
/// session with a message on stderr and a failure status, not a silent death by SIGPIPE.
#[test]
fn acp_reports_a_closed_stdout() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut child = command(dir.path(), &["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent binary starts");
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
    let mut stdin = child.stdin.take().expect("piped");
    // The agent may already have gone when the line arrives; that is the case under test too.
    let _ = writeln!(stdin, "{initialize}");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr)
        .expect("stderr is read");
    drop(stdin);
    let status = child.wait().expect("the agent exits");
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), None, "killed by a signal: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("agent: acp:") && stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(status.code(), Some(1), "{stderr}");
}
