//! The `agent` binary in a pseudo-terminal, as a person sees it: [`Screen`] runs it on a PTY
//! (portable-pty), keeps what a terminal would show (vt100), types keys, and waits for text.
//! For tests of what the terminal shows (`pty.rs`); reuse it for any REPL check on the screen.

use std::{
    io::{Read, Write},
    path::Path,
    sync::{Arc, Mutex, PoisonError},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use agent_model::scripted::ScriptedServer;
use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

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
        command.env("AGENT_LSP_PATH", "");
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

/// Starts the REPL (`agent chat`) against `server` in `workspace` with `env` set, and waits for
/// its prompt.
pub(crate) fn repl(workspace: &Path, server: &ScriptedServer, env: &[(&str, &str)]) -> Screen {
    let url = server.url();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "chat"];
    let mut screen = Screen::agent(workspace, &args, env);
    screen.wait_for("›");
    screen
}
