//! Rendered answers: Markdown on a terminal, the model's text unchanged through a pipe.

use std::path::Path;

use agent_model::scripted::{Script, ScriptedServer, Turn};

use crate::suite::{DEADLINE, Running, command, stderr, stdout};

/// An answer using most of what the renderer handles.
const ANSWER: &str = "**Done.** I changed `main.rs`:\n\n```rust\nfn main() {\n    \
                      println!(\"hello, world\");\n}\n```\n\n## Next\n\n1. run *the tests*\n2. \
                      commit\n\n| file | change |\n|---|---|\n| main.rs | greeting |\n";

/// Runs `agent exec` against a scripted server answering [`ANSWER`], with `env` set; returns
/// the output.
async fn exec(workspace: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let server = ScriptedServer::start(Script::new([Turn::text(ANSWER)])).await.unwrap();
    let url = server.url();
    let mut args = vec!["--base-url", &url, "--model", "m", "--api", "chat"];
    args.extend(extra);
    args.extend(["exec", "change the greeting"]);
    let mut command = command(workspace, &args);
    command.stdin(std::process::Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || Running::spawn(&mut command).finish("agent exec"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_through_a_pipe_prints_the_markdown_as_the_model_wrote_it() {
    for stream in [&[][..], &["--no-stream"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let output = exec(dir.path(), stream, &[]).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        // Byte for byte: the answer, and the newline that ends the run's output.
        assert_eq!(stdout(&output), format!("{ANSWER}\n"));
        assert!(!output.stdout.contains(&0x1b), "an escape code reached the pipe");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_rendering_shows_no_markers_and_no_colour_with_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("AGENT_RENDER", "markdown"), ("NO_COLOR", "1"), ("COLUMNS", "60")];
    let output = exec(dir.path(), &[], &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(!output.stdout.contains(&0x1b), "NO_COLOR output holds an escape code: {out}");
    for marker in ["**", "```", "## ", "|---"] {
        assert!(!out.contains(marker), "{marker} left in the rendered answer:\n{out}");
    }
    assert!(out.starts_with("Done. I changed `main.rs`:\n\n    fn main() {\n"), "{out}");
    assert!(out.contains("1. run the tests\n2. commit"), "{out}");
    assert!(out.contains("main.rs │ greeting"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_rendering_styles_with_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    let output = exec(dir.path(), &[], &[("AGENT_RENDER", "markdown")]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.contains("\u{1b}[1mDone.\u{1b}[0m"), "{out:?}");
    assert!(!out.contains("**") && !out.contains("```"), "{out}");
}

/// A pseudo-terminal for the child's stdout: the master side, which the test reads, and the
/// path-opened slave side, which the child writes to, 50 columns wide.
fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::unix::ffi::OsStrExt;

    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name.as_bytes()));
    let slave = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let size = rustix::termios::Winsize { ws_row: 24, ws_col: 50, ws_xpixel: 0, ws_ypixel: 0 };
    rustix::termios::tcsetwinsize(&slave, size).unwrap();
    (std::fs::File::from(master), slave)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_on_a_terminal_renders_the_answer_at_the_terminal_width() {
    use std::io::Read;
    let long = "A paragraph long enough to wrap: it goes on well past fifty columns, so the \
                terminal's own width decides where its lines break.";
    let answer = format!("{ANSWER}\n{long}\n");
    let server = ScriptedServer::start(Script::new([Turn::text(answer)])).await.unwrap();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let (mut master, slave) = pty();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "exec", "go"];
    let mut command = command(dir.path(), &args);
    command.stdin(std::process::Stdio::null()).stdout(slave).stderr(std::process::Stdio::null());
    let output = tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().unwrap();
        // The command holds the parent's copy of the slave; without it the master reads end
        // (EIO) once the child exits.
        drop(command);
        let reader = std::thread::spawn(move || {
            let mut screen = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(read @ 1..) = master.read(&mut chunk) {
                screen.extend_from_slice(&chunk[..read]);
            }
            screen
        });
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                panic!("agent exec on a terminal did not exit within {DEADLINE:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(status.success());
        String::from_utf8(reader.join().unwrap()).unwrap()
    })
    .await
    .unwrap();
    let screen = output.replace("\r\n", "\n");
    assert!(screen.contains("\u{1b}[1mDone.\u{1b}[0m"), "{screen:?}");
    assert!(!screen.contains("**") && !screen.contains("```"), "{screen}");
    assert!(screen.contains("\n    \u{1b}[36mfn main() {\u{1b}[0m\n"), "{screen:?}");
    let plain = screen.replace("\u{1b}[0m", "").replace("\u{1b}[1m", "").replace("\u{1b}[36m", "");
    let wrapped: Vec<&str> =
        plain.lines().skip_while(|line| !line.starts_with("A paragraph")).collect();
    assert!(wrapped.len() >= 3, "{plain}");
    assert!(wrapped.iter().all(|line| line.chars().count() <= 50), "{wrapped:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_renders_each_answer_when_asked_to() {
    use std::io::Write;
    let server = ScriptedServer::start(Script::new([Turn::text(ANSWER), Turn::text("*Again.*")]))
        .await
        .unwrap();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "chat"];
    let mut command = command(dir.path(), &args);
    command.stdin(std::process::Stdio::piped());
    command.env("AGENT_RENDER", "markdown").env("NO_COLOR", "1");
    let output = tokio::task::spawn_blocking(move || {
        let mut running = Running::spawn(&mut command);
        running.stdin().write_all(b"change it\nonce more\n/exit\n").unwrap();
        running.finish("agent chat")
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.starts_with("Done. I changed `main.rs`:\n"), "{out}");
    assert!(out.ends_with("main.rs │ greeting\nAgain.\n"), "each answer ends its own way: {out}");
    assert!(!out.contains("**") && !out.contains("```") && !out.contains('\u{1b}'), "{out}");
}
