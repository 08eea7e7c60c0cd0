//! The `agent` binary in a pseudo-terminal, as a person sees it: [`Screen`] runs it on a PTY
//! (portable-pty), keeps what a terminal would show (vt100), types keys, and waits for text.
//!
//! The tests below drive the REPL against the scripted model server: approvals show the change,
//! and what was denied stays undone.

use std::{
    io::{Read, Write},
    path::Path,
    sync::{Arc, Mutex, PoisonError},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};
use serde_json::json;

use crate::suite::{DEADLINE, data_dir};

/// Columns and rows of the test terminal: wide enough for a diff line, tall enough that one
/// exchange stays on screen.
const COLS: u16 = 110;
const ROWS: u16 = 50;

/// A program running in a pseudo-terminal, with the screen it has drawn.
pub(crate) struct Screen {
    child: Box<dyn Child + Send + Sync>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    state: Arc<Mutex<State>>,
    reader: Option<JoinHandle<()>>,
}

/// What the program wrote: the terminal it drew, and every byte (to look for escape codes).
struct State {
    parser: vt100::Parser,
    raw: Vec<u8>,
}

impl Screen {
    /// Starts `agent ARGS` in `workspace` on a fresh PTY, with the clean environment of
    /// [`crate::suite::command`] plus `TERM` and `extra_env`.
    pub(crate) fn agent(workspace: &Path, args: &[&str], extra_env: &[(&str, &str)]) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize { rows: ROWS, cols: COLS, pixel_width: 0, pixel_height: 0 })
            .expect("a pseudo-terminal opens");
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_agent"));
        command.args(args);
        command.cwd(workspace);
        command.env_clear();
        command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        command.env("HOME", workspace);
        command.env("AGENT_DATA_DIR", data_dir(workspace));
        command.env("XDG_CONFIG_HOME", workspace.join(".no-config"));
        command.env("TERM", "xterm-256color");
        if let Some(value) = std::env::var_os("AGENT_TEST_DISABLE_LANDLOCK") {
            command.env("AGENT_TEST_DISABLE_LANDLOCK", value);
        }
        for (key, value) in extra_env {
            command.env(key, value);
        }
        let child = pair.slave.spawn_command(command).expect("the agent binary starts");
        // The child holds its own end; ours would keep the PTY open after it exits.
        drop(pair.slave);
        let reader = pair.master.try_clone_reader().expect("the PTY can be read");
        let writer =
            Arc::new(Mutex::new(pair.master.take_writer().expect("the PTY can be written")));
        let state = Arc::new(Mutex::new(State {
            parser: vt100::Parser::new(ROWS.try_into().unwrap(), COLS.try_into().unwrap(), 0),
            raw: Vec::new(),
        }));
        let reader = read(reader, Arc::clone(&state), Arc::clone(&writer), pair.master);
        Self { child, writer, state, reader: Some(reader) }
    }

    /// The text on the screen now, row by row.
    pub(crate) fn contents(&self) -> String {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).parser.screen().contents()
    }

    /// Every byte written so far, as text (escape codes included).
    pub(crate) fn raw(&self) -> String {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&state.raw).into_owned()
    }

    /// Types `text` (use `\r` for Enter, as a terminal sends it).
    pub(crate) fn type_text(&self, text: &str) {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer.write_all(text.as_bytes()).expect("the PTY takes input");
        writer.flush().expect("the PTY takes input");
    }

    /// Waits until the screen shows `text`; fails after [`DEADLINE`] with the screen.
    pub(crate) fn wait_for(&mut self, text: &str) {
        self.wait_until(&format!("{text:?} on the screen"), |screen| screen.contains(text));
    }

    /// Waits until `done` holds for the screen's text; kills the program and fails after
    /// [`DEADLINE`], showing the screen.
    pub(crate) fn wait_until(&mut self, what: &str, mut done: impl FnMut(&str) -> bool) {
        let start = Instant::now();
        while !done(&self.contents()) {
            if start.elapsed() > DEADLINE {
                self.fail(&format!("no {what} after {DEADLINE:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the program to exit (after `/exit` or Ctrl-D); returns whether it succeeded.
    pub(crate) fn wait_exit(&mut self) -> bool {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("the child can be waited for") {
                if let Some(reader) = self.reader.take() {
                    reader.join().expect("the PTY reader does not panic");
                }
                return status.success();
            }
            if start.elapsed() > DEADLINE {
                self.fail(&format!("the program did not exit within {DEADLINE:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the program (so nothing is left behind) and fails with `message` and the screen.
    fn fail(&mut self, message: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("{message}; the screen:\n{}", self.contents());
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Feeds what the program writes to the terminal emulator on a thread until the PTY closes,
/// answering cursor-position queries (`ESC [6n`) as a terminal would, since line editors wait
/// for the answer.
fn read(
    mut reader: Box<dyn Read + Send>,
    state: Arc<Mutex<State>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    master: Box<dyn portable_pty::MasterPty + Send>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        // The master stays open while the thread reads: dropping it would hang up the child.
        let _master = master;
        let mut chunk = [0u8; 8192];
        while let Ok(read @ 1..) = reader.read(&mut chunk) {
            let bytes = &chunk[..read];
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            state.parser.process(bytes);
            state.raw.extend_from_slice(bytes);
            let queries = bytes.windows(4).filter(|w| w == b"\x1b[6n").count();
            if queries > 0 {
                let (row, col) = state.parser.screen().cursor_position();
                let answer = format!("\x1b[{};{}R", row + 1, col + 1).repeat(queries);
                let mut writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
                let _ = writer.write_all(answer.as_bytes());
                let _ = writer.flush();
            }
        }
    })
}

const MAIN: &str = "fn main() {\n    println!(\"hello\");\n}\n";

/// The model reads `main.rs`, edits it to greet the world, then answers `answer`.
fn edit_script(answer: &str) -> Script {
    Script::new([
        Turn::tool_calls([ScriptedCall::new("call_r", "read_file", json!({"path": "main.rs"}))]),
        Turn::tool_calls([ScriptedCall::new(
            "call_e",
            "edit_file",
            json!({
                "path": "main.rs",
                "old_string": "    println!(\"hello\");",
                "new_string": "    println!(\"hello, world\");",
            }),
        )]),
        Turn::text(answer),
    ])
}

/// Starts the REPL against `server` in `workspace` and waits for its prompt.
fn repl(workspace: &Path, server: &ScriptedServer, env: &[(&str, &str)]) -> Screen {
    let url = server.url();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "chat"];
    let mut screen = Screen::agent(workspace, &args, env);
    screen.wait_for("›");
    screen
}

/// What an edit session showed: the screen at the approval prompt and at the end, and every
/// byte written.
struct Shown {
    at_prompt: String,
    at_end: String,
    raw: String,
}

/// Runs the edit script, answering the approval with `answer`, with `env` set; then types each
/// line of `then` and waits for its text.
async fn edit_session(
    answer: &'static str,
    env: &'static [(&str, &str)],
    then: &'static [(&str, &str)],
) -> (tempfile::TempDir, Shown) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), MAIN).unwrap();
    let server = ScriptedServer::start(edit_script("All done.")).await.unwrap();
    let workspace = dir.path().to_path_buf();
    let shown = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, env);
        screen.type_text("greet the world\r");
        screen.wait_for("allow? [y]es");
        let at_prompt = screen.contents();
        // Nothing is written while the question is open.
        assert_eq!(std::fs::read_to_string(workspace.join("main.rs")).unwrap(), MAIN);
        screen.type_text(answer);
        screen.wait_for("All done.");
        for (line, text) in then {
            screen.type_text(line);
            screen.wait_for(text);
        }
        let at_end = screen.contents();
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        Shown { at_prompt, at_end, raw: screen.raw() }
    })
    .await
    .unwrap();
    (dir, shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_edit_approval_shows_the_diff_and_yes_applies_it() {
    let then = &[("/diff\r", "/diff"), ("/last\r", "3→}")];
    let (dir, Shown { at_prompt, at_end, raw }) = edit_session("y\r", &[], then).await;
    let added = "+    println!(\"hello, world\");";
    assert!(at_prompt.contains("? edit_file main.rs"), "{at_prompt}");
    assert!(at_prompt.contains("-    println!(\"hello\");"), "{at_prompt}");
    assert!(at_prompt.contains(added), "{at_prompt}");
    // On a terminal the diff is coloured.
    assert!(raw.contains(&format!("\x1b[32m{added}\x1b[0m")), "{raw:?}");
    let edited = std::fs::read_to_string(dir.path().join("main.rs")).unwrap();
    assert_eq!(edited, "fn main() {\n    println!(\"hello, world\");\n}\n");
    // After the answer: the preview of what the call did, under its status line; then /diff
    // and /last show the change again.
    let after = at_end.split("allow? [y]es").nth(1).unwrap();
    let preview = after.split("/diff").next().unwrap();
    assert!(preview.contains("edit_file: ok ("), "{at_end}");
    assert!(preview.contains("Edited main.rs: 1 replacement at line 2 (+1 −1)"), "{at_end}");
    assert!(preview.contains(added), "the diff preview follows the call: {at_end}");
    let (diff, last) = after.split_once("/last").unwrap();
    assert!(diff.contains("main.rs") && diff.contains(added), "/diff: {at_end}");
    assert!(last.contains(added) && last.contains("Edited main.rs"), "/last: {at_end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_edit_leaves_the_file_as_it_was() {
    // NO_COLOR turns the colours off, on a terminal too.
    let (dir, Shown { at_prompt, at_end, raw }) =
        edit_session("n\r", &[("NO_COLOR", "1")], &[("/diff\r", "no file changes")]).await;
    assert!(raw.contains("\n  +    println!(\"hello, world\");\r\n"), "{raw:?}");
    assert!(at_prompt.contains("+    println!(\"hello, world\");"), "{at_prompt}");
    assert_eq!(std::fs::read(dir.path().join("main.rs")).unwrap(), MAIN.as_bytes());
    assert!(at_end.contains("edit_file: error: rejected"), "{at_end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bash_approval_shows_the_command_and_its_duration_leaves_out_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo made > made.txt && echo wrote the flag";
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new("call_b", "bash", json!({"command": command}))]),
        Turn::text("Ran it."),
    ]))
    .await
    .unwrap();
    let workspace = dir.path().to_path_buf();
    let wait = Duration::from_secs(2);
    let (at_prompt, at_end) = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, &[]);
        screen.type_text("run it\r");
        screen.wait_for("allow? [y]es");
        let at_prompt = screen.contents();
        // The person reads the prompt for a while; that time is not the command's.
        std::thread::sleep(wait);
        screen.type_text("y\r");
        screen.wait_for("Ran it.");
        let at_end = screen.contents();
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        (at_prompt, at_end)
    })
    .await
    .unwrap();
    assert!(at_prompt.contains(&format!("$ {command}")), "{at_prompt}");
    let root = dir.path().canonicalize().unwrap();
    assert!(at_prompt.contains(&format!("in {}", root.display())), "{at_prompt}");
    assert!(at_prompt.contains("sandbox: workspace-write, network off"), "{at_prompt}");
    if at_end.contains("sandbox_unavailable") {
        crate::skip::skipped(&format!("the OS sandbox is unavailable here: {at_end}"));
        return;
    }
    let millis: u64 = at_end
        .split("bash: ok (")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration: {at_end}"));
    assert!(millis < 1000, "{millis} ms includes the {wait:?} approval wait: {at_end}");
    // The preview under the status line: the exit code and the last lines of output.
    let after = at_end.split("bash: ok (").nth(1).unwrap();
    assert!(after.contains("exit 0 ·") && after.contains("wrote the flag"), "{at_end}");
    assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).unwrap(), "made\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_run_through_a_pipe_prints_no_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), MAIN).unwrap();
    let server = ScriptedServer::start(edit_script("All done.")).await.unwrap();
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args = ["--base-url", &url, "--model", "m", "--api", "chat"];
        let args = [&args[..], &["--permission-mode", "accept-edits", "exec", "greet"]].concat();
        // A terminal type is set, so only the pipe itself can be what turns colour off.
        let mut command = crate::suite::command(&workspace, &args);
        command.env("TERM", "xterm-256color").stdin(std::process::Stdio::null());
        crate::suite::Running::spawn(&mut command).finish("agent exec")
    })
    .await
    .unwrap();
    let (out, err) = (crate::suite::stdout(&output), crate::suite::stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(out, "All done.\n");
    assert!(!out.contains('\x1b') && !err.contains('\x1b'), "{err:?}");
    // The work is visible on stderr as plain text.
    assert!(err.contains("  +    println!(\"hello, world\");\n"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.rs")).unwrap(),
        "fn main() {\n    println!(\"hello, world\");\n}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_preview_is_capped_and_v_shows_all_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let content: String = (1..=80).map(|n| format!("line {n}\n")).collect();
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new(
            "call_w",
            "write_file",
            json!({"path": "new.txt", "content": content}),
        )]),
        Turn::text("Written."),
    ]))
    .await
    .unwrap();
    let workspace = dir.path().to_path_buf();
    let (at_prompt, viewed) = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, &[]);
        screen.type_text("write it\r");
        screen.wait_for("[v]iew all: ");
        let at_prompt = screen.contents();
        screen.type_text("v\r");
        screen.wait_for("+line 80");
        let viewed = screen.contents();
        // The question is asked again, and the answer still counts.
        screen.wait_until("the question again", |text| {
            text.trim_end().ends_with("[a]lways for this session:")
        });
        screen.type_text("y\r");
        screen.wait_for("Written.");
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        (at_prompt, viewed)
    })
    .await
    .unwrap();
    assert!(at_prompt.contains("? write_file new.txt (new file, 80 lines)"), "{at_prompt}");
    assert!(at_prompt.contains("+line 1\n") && !at_prompt.contains("+line 80"), "{at_prompt}");
    assert!(at_prompt.contains("more lines (v shows all)"), "{at_prompt}");
    assert!(viewed.contains("+line 79\n  +line 80\n"), "{viewed}");
    let written = std::fs::read_to_string(dir.path().join("new.txt")).unwrap();
    assert_eq!(written.lines().count(), 80);
}
