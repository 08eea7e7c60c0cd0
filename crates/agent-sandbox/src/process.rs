//! Starting a sandboxed process and collecting what it prints.
//!
//! Every process gets its own process group, stdin from `/dev/null`, the scrubbed environment and
//! the sandbox of [`SandboxConfig`]. stdout and stderr share one pipe by default, so the output is
//! interleaved exactly as it was written. On timeout or cancellation the whole group (and, for
//! root, every process in the command's pids cgroup) gets SIGTERM, then SIGKILL after
//! [`SandboxConfig::kill_grace`]; when the command exits normally, processes it left running are
//! killed too, so nothing a tool starts outlives the call. Each process runs below a
//! supervisor of its own (`process/supervisor.rs`) that kills all of it when the agent dies, by
//! any death.

#![allow(unsafe_code)]

mod capture;
mod group;
mod sandboxed_service;
mod service;
mod supervisor;

pub(crate) use self::group::{Group, SUBREAPER, reap_group};
pub use self::sandboxed_service::{SandboxedService, spawn_sandboxed_service};
pub use self::service::{ServiceChild, spawn_service};
pub(crate) use self::supervisor::Until;
use self::{capture::Capture, supervisor::Supervisor};

use std::{
    ffi::OsString,
    io,
    os::unix::process::ExitStatusExt,
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::{io::AsyncReadExt, net::unix::pipe, process::Command};
use tokio_util::sync::CancellationToken;

use crate::{
    sandbox::{self, FsRules, SandboxConfig, SandboxError, SandboxPolicy},
    secret::Hidden,
};

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// The program (looked up in `PATH` when it has no slash).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory; the workspace when `None`.
    pub cwd: Option<PathBuf>,
    /// The environment before scrubbing; this process's environment when `None`.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// Keep stdout and stderr apart instead of interleaving them in one stream.
    pub separate_stderr: bool,
    /// Output kept per stream: the first and last halves of this many bytes; the middle is dropped.
    pub max_output_bytes: usize,
    /// Bytes written to the process's stdin, which is then closed; stdin is `/dev/null` when
    /// `None`. Hooks read their JSON input this way.
    pub stdin: Option<Vec<u8>>,
}

impl ProcessSpec {
    /// Runs `program` with no arguments.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            base_env: None,
            separate_stderr: false,
            max_output_bytes: 1 << 20,
            stdin: None,
        }
    }

    /// `bash -c <script>`: a fresh non-interactive shell.
    pub fn bash(script: impl Into<OsString>) -> Self {
        Self::new("bash").arg("-c").arg(script)
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the environment before scrubbing (instead of this process's environment).
    pub fn base_env<K: Into<OsString>, V: Into<OsString>>(
        mut self,
        env: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.base_env = Some(env.into_iter().map(|(k, v)| (k.into(), v.into())).collect());
        self
    }
}

/// What a finished process left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// The exit code, when the process exited on its own.
    pub exit_code: Option<i32>,
    /// The signal that ended the process, when one did.
    pub signal: Option<i32>,
    /// stdout and stderr interleaved in arrival order (only stdout with `separate_stderr`).
    pub output: String,
    /// stderr, when `separate_stderr` was set; empty otherwise.
    pub stderr: String,
    /// Bytes dropped from the middle of the output because of `max_output_bytes`.
    pub dropped_bytes: u64,
    /// Wall time from spawn to the end of the process.
    pub duration: Duration,
    /// Whether the process was killed because it ran past the timeout.
    pub timed_out: bool,
    /// Whether the process was killed because the call was cancelled.
    pub cancelled: bool,
    /// The process group id: the pid of the command's supervisor, which leads the group (see
    /// `docs/sandbox.md`).
    pub pid: u32,
    /// The secret files and credential locations that were hidden from the process (see
    /// [`crate::secret`]); [`ProcessOutput::hidden_notes`] says which of them it touched.
    pub hidden: Vec<Hidden>,
}

impl ProcessOutput {
    /// Whether the process exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// Notes for the hidden paths that `command` names or the output mentions, such as
    /// "`.env` is hidden from commands; an allow rule `Read(./.env)` exposes it", so that a model
    /// does not retry a command that can never see the file.
    pub fn hidden_notes(&self, command: &str) -> Vec<String> {
        crate::secret::touched(&self.hidden, &[command, &self.output, &self.stderr])
    }
}

/// Why a process could not be run.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The sandbox could not be set up; nothing was started.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The program could not be started (not found, not executable, or the sandbox setup in the
    /// child failed).
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: io::Error,
    },
    /// The output pipe failed.
    #[error("could not read the output: {0}")]
    Io(#[from] io::Error),
}

/// Runs `spec` under `config` until it exits, `timeout` passes, or `cancel` fires.
pub async fn run(
    spec: ProcessSpec,
    config: &SandboxConfig,
    cancel: CancellationToken,
    timeout: Option<Duration>,
) -> Result<ProcessOutput, SpawnError> {
    // `temp` is the fresh private temp dir, deleted when the command is done.
    let Resolved { env, cwd, rules, read_only, hide, temp } = resolve(&spec, config)?;
    let options = RunOptions {
        rules: rules.as_ref(),
        read_only: read_only.as_deref(),
        hide,
        env,
        cwd,
        cancel,
        timeout,
    };
    let output = run_with(spec, config, options).await;
    // Off the caller's path: on ext4 mounted with `discard` an `rmdir` waits for the disk to
    // discard the directory's block, up to milliseconds per command. A runtime shutting down
    // drops the task, and with it the directory, at once.
    if let Some(temp) = temp {
        drop(tokio::task::spawn_blocking(move || drop(temp)));
    }
    output
}

/// What the sandbox needs for one process of `config`, resolved in the parent.
pub(crate) struct Resolved {
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) cwd: PathBuf,
    pub(crate) rules: Option<FsRules>,
    pub(crate) read_only: Option<PathBuf>,
    pub(crate) hide: Vec<Hidden>,
    /// A fresh private temp dir when the configuration keeps none; deleted on drop.
    pub(crate) temp: Option<tempfile::TempDir>,
}

/// Resolves the environment, the file-system rules and the secrets to hide for `spec`.
pub(crate) fn resolve(spec: &ProcessSpec, config: &SandboxConfig) -> io::Result<Resolved> {
    // A fresh private temp dir unless the caller keeps one for the session.
    let fresh_temp = match &config.temp_dir {
        Some(_) => None,
        None => Some(tempfile::Builder::new().prefix("agent-sandbox-").tempdir()?),
    };
    let temp_dir = config
        .temp_dir
        .clone()
        .or_else(|| fresh_temp.as_ref().map(|dir| dir.path().to_path_buf()))
        .unwrap_or_else(std::env::temp_dir);
    let mut env = sandbox::sandbox_env(
        spec.base_env.clone().unwrap_or_else(|| std::env::vars_os().collect()),
        config.policy,
        config.network,
        Some(&temp_dir),
    );
    if !config.proxy_env.is_empty() {
        env.retain(|(name, _)| !config.proxy_env.iter().any(|(set, _)| name == set.as_str()));
        env.extend(config.proxy_env.iter().map(|(n, v)| (n.into(), v.into())));
    }
    let cwd = spec.cwd.clone().unwrap_or_else(|| config.workspace.clone());
    // Resolved once, here, with the environment and directory the process gets, so the files
    // are the ones its shell would run.
    let executables = config
        .exec_allowlist
        .as_ref()
        .map(|names| sandbox::resolve_executables(&spec.program, names, &env, &cwd));
    let rules = sandbox::policy_rules(config, &temp_dir, executables.as_deref());
    let read_only = sandbox::git_dir(config);
    let hide = match config.policy {
        SandboxPolicy::DangerFullAccess => Vec::new(),
        _ => match &config.hide {
            Some(hide) => hide.clone(),
            None => config.secrets.to_hide(Some(&config.workspace), env_home(&env).as_deref()),
        },
    };
    Ok(Resolved { env, cwd, rules, read_only, hide, temp: fresh_temp })
}

/// Runs a program the user configured for their own machine (a hook), outside the tool sandbox:
/// no file-system, network or resource rules apply, but it still gets its own process group (killed
/// whole on timeout or cancellation, and when it exits), the secret-free environment of
/// [`sandbox::host_env`], and `cwd` as its working directory.
///
/// It is public for agent-exec's hooks, which run the user's own programs; nothing that runs on the
/// model's behalf may use it (tools go through [`run`], whose policy decides).
pub async fn run_unsandboxed(
    spec: ProcessSpec,
    cwd: PathBuf,
    cancel: CancellationToken,
    timeout: Option<Duration>,
) -> Result<ProcessOutput, SpawnError> {
    let env =
        sandbox::host_env(spec.base_env.clone().unwrap_or_else(|| std::env::vars_os().collect()));
    let config = SandboxConfig::new(cwd.clone())
        .with_policy(SandboxPolicy::DangerFullAccess)
        .with_limits(sandbox::Limits::NONE);
    let options =
        RunOptions { rules: None, read_only: None, hide: Vec::new(), env, cwd, cancel, timeout };
    run_with(spec, &config, options).await
}

/// The `HOME` a process is given, from its environment.
fn env_home(env: &[(OsString, OsString)]) -> Option<PathBuf> {
    env.iter()
        .find(|(key, value)| key == "HOME" && !value.is_empty())
        .map(|(_, value)| PathBuf::from(value))
}

/// The sandbox-specific inputs of [`run_with`], resolved by the caller.
#[derive(Debug)]
pub struct RunOptions<'a> {
    /// The file-system rules; `None` runs without Landlock (only under `DangerFullAccess`).
    pub rules: Option<&'a FsRules>,
    /// A directory inside a writable root that stays read-only (`.git`).
    pub read_only: Option<&'a std::path::Path>,
    /// Secret files and directories covered by empty, unreadable entries.
    pub hide: Vec<Hidden>,
    /// The whole environment of the process.
    pub env: Vec<(OsString, OsString)>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Kills the process group when cancelled.
    pub cancel: CancellationToken,
    /// Kills the process group after this long.
    pub timeout: Option<Duration>,
}

/// Runs `spec` with explicit file-system rules and environment (agent-tools' code sandbox uses
/// this to run an interpreter with narrower rules than any policy).
pub async fn run_with(
    spec: ProcessSpec,
    config: &SandboxConfig,
    options: RunOptions<'_>,
) -> Result<ProcessOutput, SpawnError> {
    let (out_reader, out_writer) = io::pipe()?;
    let (err_reader, err_writer) = if spec.separate_stderr {
        let (reader, writer) = io::pipe()?;
        (Some(reader), writer)
    } else {
        (None, out_writer.try_clone()?)
    };
    // The read ends are registered with the runtime before the spawn, so no failure can leave a
    // started process without a reader.
    let out_reader = pipe::Receiver::from_owned_fd(out_reader.into())?;
    let err_reader =
        err_reader.map(|reader| pipe::Receiver::from_owned_fd(reader.into())).transpose()?;
    let launch = Launch {
        rules: options.rules,
        read_only: options.read_only,
        hide: &options.hide,
        env: &options.env,
        cwd: &options.cwd,
    };
    let stdin = if spec.stdin.is_some() { Stdio::piped() } else { Stdio::null() };
    let stdio = [stdin, Stdio::from(out_writer), Stdio::from(err_writer)];
    // `_masks` holds the files bind-mounted over secrets until the process is gone.
    let Spawned { mut child, group, masks: _masks, started } =
        spawn(&spec, config, &launch, stdio, Until::Command)?;
    let pid = child.id().unwrap_or(0);
    if let (Some(mut pipe), Some(bytes)) = (child.stdin.take(), spec.stdin) {
        // Written on its own task so a process that never reads its stdin cannot stall the wait
        // below; a process that exits without reading it closes the pipe (EPIPE, ignored).
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            let _ = pipe.write_all(&bytes).await;
        });
    }

    let half = spec.max_output_bytes / 2;
    let out = Arc::new(Mutex::new(Capture::new(half)));
    let err = Arc::new(Mutex::new(Capture::new(half)));
    let mut readers = vec![tokio::spawn(drain(out_reader, out.clone()))];
    if let Some(reader) = err_reader {
        readers.push(tokio::spawn(drain(reader, err.clone())));
    }

    // A limit too far out to be an instant is no limit (never a panic).
    let deadline = options.timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
    let sleep = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let (mut timed_out, mut cancelled) = (false, false);
    let status = tokio::select! {
        status = child.wait() => Some(status?),
        () = sleep => { timed_out = true; None }
        () = options.cancel.cancelled() => { cancelled = true; None }
    };
    let status = match status {
        Some(status) => {
            // The command is done; whatever it left running in the background goes too.
            group.signal(libc::SIGKILL);
            status
        }
        None => group.terminate(&mut child, config.kill_grace).await?,
    };
    group.release();
    let duration = started.elapsed();

    // Output already in the pipe is still read after the writers are gone; a reader only waits
    // longer if a process escaped the kill while holding the pipe, so it is bounded.
    for reader in readers {
        let abort = reader.abort_handle();
        if tokio::time::timeout(Duration::from_millis(500), reader).await.is_err() {
            abort.abort();
        }
    }

    let (output, out_dropped) = take(&out);
    let (stderr, err_dropped) = take(&err);
    Ok(ProcessOutput {
        exit_code: status.code(),
        signal: status.signal(),
        output,
        stderr,
        dropped_bytes: out_dropped + err_dropped,
        duration,
        timed_out,
        cancelled,
        pid,
        hidden: options.hide,
    })
}

/// The sandbox inputs of one process, borrowed from a [`Resolved`] or a caller's own rules.
pub(crate) struct Launch<'a> {
    pub(crate) rules: Option<&'a FsRules>,
    pub(crate) read_only: Option<&'a std::path::Path>,
    pub(crate) hide: &'a [Hidden],
    pub(crate) env: &'a [(OsString, OsString)],
    pub(crate) cwd: &'a std::path::Path,
}

/// A started process in its own group, with what must live as long as it does.
pub(crate) struct Spawned {
    pub(crate) child: tokio::process::Child,
    pub(crate) group: Group,
    /// The empty file and directory bind-mounted over secrets.
    pub(crate) masks: Option<sandbox::MaskDir>,
    pub(crate) started: Instant,
}

/// Starts `spec` in a new process group under the sandbox, with `stdio` as stdin, stdout and
/// stderr, below a supervisor that waits `until` (see [`supervisor`]). The one place a tool's
/// process is spawned: foreground commands and jobs alike.
pub(crate) fn spawn(
    spec: &ProcessSpec,
    config: &SandboxConfig,
    launch: &Launch<'_>,
    stdio: [Stdio; 3],
    until: Until,
) -> Result<Spawned, SpawnError> {
    let supervisor = Supervisor::new(until)?;
    let mounts =
        sandbox::Mounts { read_only: launch.read_only, hide: launch.hide, cwd: launch.cwd };
    let sandbox::Prepared { plan, cgroup, masks } = sandbox::prepare(
        launch.rules,
        config.network,
        config.loopback.as_ref(),
        &config.limits,
        mounts,
    )?;
    let [stdin, stdout, stderr] = stdio;
    #[expect(
        clippy::disallowed_methods,
        reason = "the one sanctioned spawn: the sandbox is applied here"
    )]
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(launch.cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(key, value)| (key, value)))
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: the supervisor's split and bind and `ChildPlan::apply` only make async-signal-safe
    // system calls on data prepared above (see `sandbox/child.rs`), as required between fork and
    // exec.
    unsafe {
        command.pre_exec(move || {
            let parent = supervisor.split()?;
            plan.apply()?;
            Supervisor::bind(parent)
        });
    }
    let started = Instant::now();
    let spawned = command.spawn();
    // Dropping the command closes the parent's copies of the child's ends of the pipes, so EOF
    // arrives when the last process holding them exits, and closes the Landlock ruleset fd.
    drop(command);
    let child = spawned.map_err(|source| SpawnError::Spawn {
        program: spec.program.to_string_lossy().into_owned(),
        source,
    })?;
    let pgid = child.id().map_or(0, |pid| pid as i32);
    Ok(Spawned { child, group: Group::new(pgid, cgroup), masks, started })
}

/// Reads a pipe to EOF into `capture`.
async fn drain(mut reader: pipe::Receiver, capture: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.lock().unwrap_or_else(PoisonError::into_inner).push(&buf[..n]),
        }
    }
}

fn take(capture: &Mutex<Capture>) -> (String, u64) {
    capture.lock().unwrap_or_else(PoisonError::into_inner).finish()
}
