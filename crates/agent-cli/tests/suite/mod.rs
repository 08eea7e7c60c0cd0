//! Test modules and the helpers they share: running the binary and a scripted model server.

mod acp;
mod acp_frames;
mod acp_methods;
mod acp_turns;
mod agents;
mod agents_list;
mod agents_mcp;
mod agents_repl;
mod agents_replay;
mod apply_patch;
mod ask_user;
mod ask_user_remote;
mod batch;
mod batch_ray;
mod broken_pipe;
mod config;
mod crash;
mod doctor;
mod exec;
mod help;
mod hooks;
mod interrupt;
mod library;
mod lsp_exec;
mod lsp_path;
mod mcp;
mod mcp_batch;
mod mcp_cancel;
mod mcp_cmd;
mod mcp_files;
mod mcp_http;
mod mcp_image;
mod mcp_search;
mod mcp_serve;
mod model_bounds;
mod native;
mod network;
mod notify;
mod options;
mod output;
mod overflow;
mod plugins;
mod pty;
mod render;
mod repl;
mod replay;
mod screen;
mod serve;
mod serve_client;
mod serve_guard;
mod serve_openapi;
mod serve_page;
mod skills;
mod skills_bounds;
mod skills_trust;
mod status_line;
mod stream;
mod telemetry;
mod terminal;
mod tmux;
mod token_budget;
mod tools;
mod undo;
mod undo_late;
mod view_image;
mod worktree;

use std::{
    io::Read,
    path::Path,
    process::{Child, ChildStdin, Command, Output, Stdio},
    sync::{Arc, Mutex, PoisonError},
    thread::JoinHandle,
    time::{Duration, Instant},
};

/// How long a test waits for the binary to exit, or for something it prints, before it kills the
/// process and fails: a deadlock fails the test instead of hanging CI.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// Runs the `agent` binary with `args` in `workspace`, with a clean environment (no key, no
/// config file, sessions under the workspace's parent) so the host never leaks into a test.
pub(crate) fn agent(workspace: &Path, args: &[&str]) -> Output {
    let mut command = command(workspace, args);
    command.stdin(Stdio::null());
    Running::spawn(&mut command).finish(&format!("agent {}", args.join(" ")))
}

/// A running `agent` whose stdout and stderr are collected on threads, so a test can wait for what
/// it prints (an event) and for its exit, each with [`DEADLINE`].
pub(crate) struct Running {
    child: Child,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

impl Running {
    /// Starts `command` with its stdout and stderr piped (stdin as the command sets it).
    pub(crate) fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the agent binary starts");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            collect(child.stdout.take().unwrap(), Arc::clone(&stdout)),
            collect(child.stderr.take().unwrap(), Arc::clone(&stderr)),
        ];
        Self { child, stdout, stderr, readers }
    }

    /// The pipe to the process's stdin (once).
    pub(crate) fn stdin(&mut self) -> ChildStdin {
        self.child.stdin.take().expect("stdin was piped and not yet taken")
    }

    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// What the process has written to stdout so far.
    pub(crate) fn stdout_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }

    /// What the process has written to stderr so far.
    pub(crate) fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }

    /// Waits until stderr has shown `text` `times` times; kills the process and fails after
    /// [`DEADLINE`], saying what it waited for.
    pub(crate) fn wait_for_stderr(&mut self, text: &str, times: usize) {
        let what = format!("{times} × {text:?} on stderr");
        self.wait_until(&what, |running| running.stderr_so_far().matches(text).count() >= times);
    }

    /// Polls `done` until it holds; kills the process and fails after [`DEADLINE`].
    pub(crate) fn wait_until(&mut self, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while !done(self) {
            if start.elapsed() > DEADLINE {
                self.fail(&format!("no {what} after {DEADLINE:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit; kills the process and fails after [`DEADLINE`], naming `what`.
    pub(crate) fn finish(mut self, what: &str) -> Output {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("the child can be waited for") {
                break status;
            }
            if start.elapsed() > DEADLINE {
                self.fail(&format!("{what} did not exit within {DEADLINE:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        for reader in self.readers.drain(..) {
            reader.join().expect("a pipe reader does not panic");
        }
        let take = |buffer: &Mutex<Vec<u8>>| {
            std::mem::take(&mut *buffer.lock().unwrap_or_else(PoisonError::into_inner))
        };
        Output { status, stdout: take(&self.stdout), stderr: take(&self.stderr) }
    }

    /// Kills the process (a server that never exits by itself) and returns what it printed.
    pub(crate) fn kill(mut self) -> Output {
        let _ = self.child.kill();
        self.finish("a killed process")
    }

    /// Kills the process (so nothing is left behind) and fails with `message` and its stderr.
    fn fail(&mut self, message: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("{message}; stderr so far:\n{}", self.stderr_so_far());
    }
}

/// Copies `pipe` into `buffer` on a thread until end of file.
fn collect(mut pipe: impl Read + Send + 'static, buffer: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(read @ 1..) = pipe.read(&mut chunk) {
            buffer.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(&chunk[..read]);
        }
    })
}

/// The pids of processes whose command line contains `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(marker))
        })
        .collect()
}

/// Waits until no process with `marker` is left (a SIGKILL and the supervisors' kills take
/// effect asynchronously); fails after [`DEADLINE`] naming the survivors.
pub(crate) fn all_gone(marker: &str) {
    let start = std::time::Instant::now();
    while !processes_with(marker).is_empty() {
        assert!(start.elapsed() < DEADLINE, "survived the agent: {:?}", processes_with(marker));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `agent` command [`agent`] runs, for tests that feed stdin or signal the process.
pub(crate) fn command(workspace: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent"));
    command
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("AGENT_DATA_DIR", data_dir(workspace))
        .env("XDG_CONFIG_HOME", workspace.join(".no-config"))
        // No language server found on this machine's PATH changes the tools a test sees; a test
        // of diagnostics names its server (docs/lsp.md, `AGENT_LSP_PATH`).
        .env("AGENT_LSP_PATH", "");
    // The test-only "no Landlock" override reaches the binary too, so a suite run with it shows
    // what a machine without the sandbox would (docs/sandbox.md, "Testing without the sandbox").
    if let Some(value) = std::env::var_os("AGENT_TEST_DISABLE_LANDLOCK") {
        command.env("AGENT_TEST_DISABLE_LANDLOCK", value);
    }
    command
}

/// Where [`agent`] keeps sessions for `workspace`.
pub(crate) fn data_dir(workspace: &Path) -> std::path::PathBuf {
    workspace.parent().unwrap_or(workspace).join("agent-data")
}

/// The session id a non-JSON run printed on stderr.
pub(crate) fn session_id(output: &Output) -> String {
    stderr(output)
        .lines()
        .find_map(|line| line.split("--resume ").nth(1))
        .map(|rest| rest.trim_end_matches(')').to_owned())
        .unwrap_or_else(|| panic!("no session id in {}", stderr(output)))
}

/// The JSON lines of a session's transcript.
pub(crate) fn transcript(workspace: &Path, id: &str) -> Vec<serde_json::Value> {
    let path = data_dir(workspace).join("sessions").join(id).join("transcript.jsonl");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The `--json` events of a run, each validated against `docs/exec-events.schema.json`, with the
/// stream's promises checked: `run.started` with the schema version first, and exactly one
/// `run.completed` or `run.failed` last, carrying the process's exit code.
pub(crate) fn json_events(output: &Output) -> Vec<serde_json::Value> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/exec-events.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let text = stdout(output);
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect();
    for event in &events {
        if let Err(err) = validator.validate(event) {
            panic!("event does not fit the schema: {err}\n{event}");
        }
    }
    assert_eq!(events.first().map(|e| &e["type"]), Some(&"run.started".into()), "{text}");
    assert_eq!(events[0]["schema_version"], 1);
    let terminal =
        |e: &serde_json::Value| e["type"] == "run.completed" || e["type"] == "run.failed";
    assert_eq!(events.iter().filter(|e| terminal(e)).count(), 1, "{text}");
    let last = events.last().unwrap();
    assert!(terminal(last), "the stream did not end with its terminal event: {text}");
    assert_eq!(last["exit_code"].as_i64(), output.status.code().map(i64::from), "{text}");
    events
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
