//! The `agent` binary in a tmux pane, as a user who keeps it in a terminal multiplexer runs it:
//! [`Pane`] starts a tmux server of its own (a private socket, no user config), types keys, reads
//! the screen with `capture-pane`, and records every byte the program writes with `pipe-pane`
//! (to look for escape codes tmux itself would swallow, such as OSC 9 and the bell).

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::{Duration, Instant},
};

use agent_model::scripted::ScriptedServer;

use crate::suite::{DEADLINE, data_dir};

/// Columns and rows of the pane.
const COLS: u16 = 120;
const ROWS: u16 = 40;

/// A tmux server running one pane with the agent in it; the server is killed when dropped.
pub(crate) struct Pane {
    socket: PathBuf,
    /// Every byte the program wrote to the pane, from the moment the pane started.
    raw: PathBuf,
    /// Where the agent's exit status is written when it ends.
    status: PathBuf,
}

/// tmux, or `None` after saying the check is skipped (a failure with `AGENT_NO_SKIP=1`).
fn tmux() -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("tmux"))
        .find(|path| path.is_file());
    if found.is_none() {
        agent_test_support::skipped("no tmux (apt-get install tmux)");
    }
    found
}

/// `text` as one word for `sh`.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Pane {
    /// Starts the REPL (`agent OPTIONS chat`) against `server` in `workspace`, with the clean
    /// environment of [`crate::suite::command`] plus `TERM`, and waits for its prompt; `None`
    /// without tmux.
    pub(crate) fn repl(
        workspace: &Path,
        server: &ScriptedServer,
        options: &[&str],
    ) -> Option<Self> {
        tmux()?;
        let url = server.url();
        let mut args = vec!["--base-url", &url, "--model", "m", "--api", "chat"];
        args.extend(options);
        args.push("chat");
        let mut env = vec![
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".to_owned(), workspace.display().to_string()),
            ("AGENT_DATA_DIR".to_owned(), data_dir(workspace).display().to_string()),
            ("XDG_CONFIG_HOME".to_owned(), workspace.join(".no-config").display().to_string()),
            ("AGENT_LSP_PATH".to_owned(), String::new()),
            ("TERM".to_owned(), "screen".to_owned()),
        ];
        if let Ok(value) = std::env::var("AGENT_TEST_DISABLE_LANDLOCK") {
            env.push(("AGENT_TEST_DISABLE_LANDLOCK".to_owned(), value));
        }
        let mut line = format!("cd {} && env -i", quoted(&workspace.display().to_string()));
        for (key, value) in &env {
            line.push_str(&format!(" {}", quoted(&format!("{key}={value}"))));
        }
        line.push_str(&format!(" {}", quoted(env!("CARGO_BIN_EXE_agent"))));
        for arg in args {
            line.push_str(&format!(" {}", quoted(arg)));
        }
        let dir = workspace.parent().unwrap_or(workspace);
        let pane = Self {
            socket: dir.join("tmux.sock"),
            raw: dir.join("pane.raw"),
            status: dir.join("pane.status"),
        };
        // The shell waits for the agent and writes its exit status: what tmux reports of a dead
        // pane depends on when it reaps the process, the shell's file does not.
        let status = quoted(&pane.status.display().to_string());
        line.push_str(&format!("; echo $? > {status}.part && mv {status}.part {status}"));
        // The recording starts before anything is typed, so it holds every byte a prompt
        // causes; the pane stays once the program exits, to be read after.
        let raw = format!("cat >> {}", quoted(&pane.raw.display().to_string()));
        let (cols, rows) = (COLS.to_string(), ROWS.to_string());
        pane.tmux(&["new-session", "-d", "-s", "t", "-x", &cols, "-y", &rows, &line]);
        pane.tmux(&["set-option", "-t", "t", "remain-on-exit", "on"]);
        pane.tmux(&["pipe-pane", "-O", "-t", "t", &raw]);
        pane.wait_for("›");
        Some(pane)
    }

    /// Runs `tmux ARGS` on this pane's server; fails the test when tmux does.
    fn tmux(&self, args: &[&str]) -> Output {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// The screen now, row by row, without trailing blank rows.
    pub(crate) fn screen(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&output.stdout).trim_end().to_owned()
    }

    /// Everything the pane showed, its scrollback included.
    pub(crate) fn history(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-S", "-", "-t", "t"]);
        String::from_utf8_lossy(&output.stdout).trim_end().to_owned()
    }

    /// Every byte the program wrote so far, as text (escape codes included).
    pub(crate) fn raw(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.raw).unwrap_or_default()).into_owned()
    }

    /// Types `text` and presses Enter.
    pub(crate) fn enter(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
        self.tmux(&["send-keys", "-t", "t", "Enter"]);
    }

    /// Waits until the screen shows `text`.
    pub(crate) fn wait_for(&self, text: &str) {
        self.wait_until(&format!("{text:?} on the screen"), |screen| screen.contains(text));
    }

    /// Waits until `done` holds for the screen; fails after [`DEADLINE`], showing the screen.
    pub(crate) fn wait_until(&self, what: &str, mut done: impl FnMut(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no {what} after {DEADLINE:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `/exit` and waits for the program to end; returns its exit status.
    pub(crate) fn exit(&self) -> i32 {
        self.enter("/exit");
        let start = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.status) {
                return text.trim().parse().unwrap_or(-1);
            }
            let screen = self.screen();
            assert!(start.elapsed() < DEADLINE, "the agent did not exit; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        // The server, and with it the pane's program, ends; a failed test leaves nothing running.
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .env_remove("TMUX")
            .output();
    }
}
