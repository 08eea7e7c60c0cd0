//! The process sandbox against real processes, in the style of Codex's linux-sandbox suite: a
//! command that succeeds where it must not is a breach. A test whose kernel feature is missing
//! prints `SKIPPED: <reason>` and returns.

use std::{
    io::ErrorKind,
    net::TcpListener,
    path::{Path, PathBuf},
    time::Duration,
};

use agent_sandbox::{
    process::{self, ProcessOutput, ProcessSpec},
    sandbox::{Limits, ProcessLimit, SandboxConfig, SandboxPolicy, probe},
};
use agent_test_support::skipped;
use tokio_util::sync::CancellationToken;

/// Returns true (after saying why) when `policy` cannot be enforced on this kernel.
fn skip(policy: SandboxPolicy) -> bool {
    match probe().support(policy).missing {
        Some(err) => {
            skipped(&err.to_string());
            true
        }
        None => false,
    }
}

fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("python3")).find(|p| p.exists())
}

/// A base environment as a real agent would pass: PATH and HOME, plus a secret.
fn base_env() -> Vec<(String, String)> {
    vec![
        ("PATH".into(), std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())),
        ("HOME".into(), std::env::var("HOME").unwrap_or_else(|_| "/root".into())),
        ("OPENAI_API_KEY".into(), "sk-test-must-not-leak".into()),
        ("GITHUB_TOKEN".into(), "ghp-must-not-leak".into()),
    ]
}

fn config(workspace: &Path, policy: SandboxPolicy) -> SandboxConfig {
    let mut config = SandboxConfig::new(workspace).with_policy(policy);
    config.kill_grace = Duration::from_millis(300);
    config
}

async fn sh(config: &SandboxConfig, script: &str) -> ProcessOutput {
    sh_timeout(config, script, Duration::from_secs(20)).await
}

async fn sh_timeout(config: &SandboxConfig, script: &str, timeout: Duration) -> ProcessOutput {
    let spec = ProcessSpec::bash(script).base_env(base_env());
    process::run(spec, config, CancellationToken::new(), Some(timeout)).await.expect("spawn")
}

/// Fails the test when the command succeeded: that is a sandbox breach.
#[track_caller]
fn assert_denied(out: &ProcessOutput, what: &str) {
    assert!(!out.success(), "sandbox BREACH: {what} succeeded; output: {}", out.output);
}

#[track_caller]
fn assert_ok(out: &ProcessOutput, what: &str) {
    assert!(out.success(), "{what} failed: exit {:?}, output: {}", out.exit_code, out.output);
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_write_blocks_etc_home_and_symlink_escapes() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("target"), ws.path().join("link")).unwrap();
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite);
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let name = format!("agent-sandbox-breach-{}", std::process::id());

    let out = sh(&config, &format!("echo x > /etc/{name}")).await;
    assert_denied(&out, "writing /etc");
    assert!(!Path::new("/etc").join(&name).exists());
    assert!(out.output.contains("Permission denied"), "{}", out.output);

    let out = sh(&config, &format!("echo x > \"$HOME/{name}\"")).await;
    let leaked = Path::new(&home).join(&name);
    let breached = leaked.exists();
    let _ = std::fs::remove_file(&leaked);
    assert_denied(&out, "writing $HOME");
    assert!(!breached);

    let out = sh(&config, "echo x > link").await;
    assert_denied(&out, "writing through a symlink out of the workspace");
    assert!(!outside.path().join("target").exists());

    let out = sh(&config, &format!("mkdir {}/d", outside.path().display())).await;
    assert_denied(&out, "creating a directory outside the workspace");
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_write_allows_workspace_and_temp_dir() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite);
    let out = sh(
        &config,
        "set -e; mkdir sub; echo one > sub/f; echo two > \"$TMPDIR/t\"; cat sub/f \"$TMPDIR/t\"; \
         rm sub/f; echo x > /dev/null; ls /bin > /dev/null; \
         f=/dev/shm/agent-sandbox-$$; echo x > $f; rm $f",
    )
    .await;
    assert_ok(&out, "writing the workspace and the temp dir");
    assert_eq!(out.output, "one\ntwo\n");
    assert!(ws.path().join("sub").is_dir());
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_blocks_every_write_but_dev_null() {
    if skip(SandboxPolicy::ReadOnly) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("existing"), "keep").unwrap();
    let config = config(ws.path(), SandboxPolicy::ReadOnly);
    for (script, what) in [
        ("echo x > new", "creating a file in the workspace"),
        ("echo x >> existing", "appending to a workspace file"),
        (": > existing", "truncating a workspace file"),
        ("rm existing", "deleting a workspace file"),
        ("mkdir d", "creating a directory in the workspace"),
        ("echo x > \"$TMPDIR/t\"", "writing the temp dir"),
        ("echo x > /tmp/agent-sandbox-read-only", "writing /tmp"),
        ("echo x > /dev/shm/agent-sandbox-read-only", "writing /dev/shm"),
    ] {
        assert_denied(&sh(&config, script).await, what);
    }
    assert_eq!(std::fs::read_to_string(ws.path().join("existing")).unwrap(), "keep");
    assert!(!Path::new("/tmp/agent-sandbox-read-only").exists());
    assert_ok(&sh(&config, "echo x > /dev/null && cat existing").await, "writing /dev/null");
}

#[tokio::test(flavor = "multi_thread")]
async fn network_is_off_for_loopback_and_any_address() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let out = sh(&config, &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")).await;
    assert_denied(&out, "bash /dev/tcp to 127.0.0.1");
    assert!(out.output.contains("Operation not permitted"), "{}", out.output);

    // curl: exit 127 (not installed) says nothing either way, like Codex's `assert_network_blocked`.
    let out = sh(&config, &format!("curl -sS --max-time 3 http://127.0.0.1:{port}/")).await;
    if out.exit_code == Some(127) {
        skipped("curl part: curl is not installed");
    } else {
        assert_denied(&out, "curl to 127.0.0.1");
    }

    if let Some(python) = python3() {
        let script = format!(
            "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('CONNECTED')"
        );
        let out = run_python(&config, &python, &script).await;
        assert_denied(&out, "python connect to 127.0.0.1");
        assert!(out.output.contains("PermissionError"), "{}", out.output);

        // Any non-local address: creating the socket is what the sandbox denies, so the test never
        // connects anywhere (this machine must not send traffic off the host, even on a breach).
        for family in ["AF_INET", "AF_INET6"] {
            for kind in ["SOCK_STREAM", "SOCK_DGRAM"] {
                let script = format!(
                    "import socket\nsocket.socket(socket.{family}, socket.{kind})\nprint('SOCKET')"
                );
                let out = run_python(&config, &python, &script).await;
                assert_denied(&out, &format!("creating a {family} {kind} socket"));
            }
        }
        // x32 system calls share the x86_64 architecture tag; the filter must catch them too
        // (EPERM from the filter, not ENOSYS from a kernel without x32).
        if cfg!(target_arch = "x86_64") {
            let script = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n\
                          r = libc.syscall(0x40000000 | 41, 2, 1, 0)\nprint(r, ctypes.get_errno())";
            let out = run_python(&config, &python, script).await;
            assert_eq!(out.output.trim(), "-1 1", "x32 socket not denied by the filter");
        }
        let out = run_python(
            &config,
            &python,
            "import socket\na, b = socket.socketpair()\na.send(b'ok')\nprint(b.recv(2))",
        )
        .await;
        assert_ok(&out, "an AF_UNIX socket pair");
    } else {
        skipped("python part: python3 is not installed");
    }
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "a connection got through"
    );

    let open = config.clone().with_network(true);
    let out = sh(&open, &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")).await;
    assert_ok(&out, "loopback with the network switch on");
}

async fn run_python(config: &SandboxConfig, python: &Path, script: &str) -> ProcessOutput {
    let spec = ProcessSpec::new(python).arg("-c").arg(script).base_env(base_env());
    process::run(spec, config, CancellationToken::new(), Some(Duration::from_secs(20)))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_bomb_is_stopped_by_the_process_limit() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    if let ProcessLimit::Unavailable(reason) = ProcessLimit::current() {
        skipped(reason);
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let limits = Limits { processes: Some(32), ..Limits::default() };
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite).with_limits(limits);
    // Without a limit this exhausts the machine within the timeout; with one, forks fail fast.
    let out = sh_timeout(
        &config,
        "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived",
        Duration::from_secs(4),
    )
    .await;
    assert!(
        out.output.contains("Resource temporarily unavailable"),
        "the process limit never hit: {}",
        &out.output[..out.output.len().min(2000)]
    );
    assert_eq!(survivors(out.pid), Vec::<u32>::new());
    // The machine still forks afterwards.
    assert_ok(&sh(&config, "true").await, "a command after the fork bomb");
}

#[tokio::test(flavor = "multi_thread")]
async fn timeout_kills_the_whole_group_including_grandchildren() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite);
    let script =
        "trap '' TERM; sleep 100 & (sleep 100 &); bash -c 'sleep 100' & echo started; sleep 100";
    let out = sh_timeout(&config, script, Duration::from_secs(1)).await;
    assert!(out.timed_out);
    assert!(out.duration < Duration::from_secs(5), "took {:?}", out.duration);
    assert_eq!(out.output, "started\n");
    assert_eq!(survivors(out.pid), Vec::<u32>::new());

    // Leaving the group would defeat the kill, so it is denied.
    // `-w` makes setsid(1) wait for its forked child and report that child's failure.
    let out = sh(&config, "setsid -w true").await;
    assert_denied(&out, "setsid");
    assert!(out.output.contains("Operation not permitted"), "{}", out.output);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_kills_the_group() {
    let ws = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::DangerFullAccess);
    let marker = ws.path().join("pgid");
    // The script records its process group before it forks; the cancel comes once the record is
    // there, so the group is known to be running (with its two sleeps) when it is killed.
    // (field 5 of its stat; the shell's own pid is not the group's: a supervisor leads it).
    let script =
        format!("cut -d' ' -f5 /proc/$$/stat > {}; sleep 100 & sleep 100", marker.display());
    let spec = ProcessSpec::bash(script).base_env(base_env());
    let cancel = CancellationToken::new();
    let trigger = async {
        let pgid = written_group(&marker).await;
        cancel.cancel();
        pgid
    };
    let (out, pgid) = tokio::join!(process::run(spec, &config, cancel.clone(), None), trigger);
    let out = out.unwrap();
    assert!(out.cancelled && !out.timed_out, "{out:?}");
    assert_eq!(out.pid, pgid);
    assert_eq!(survivors(pgid), Vec::<u32>::new());
}

/// The process group a script wrote to `marker`, once it has (at most [`DEADLINE`]).
async fn written_group(marker: &Path) -> u32 {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let written = std::fs::read_to_string(marker).unwrap_or_default();
        if let Ok(pgid) = written.trim().parse::<u32>() {
            return pgid;
        }
        assert!(std::time::Instant::now() < deadline, "the script never wrote its group");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_future_kills_the_group() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    // No process limit, so no pids cgroup either: the process-group kill alone must do it.
    let limits = Limits { processes: None, ..Limits::default() };
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite).with_limits(limits);
    let marker = ws.path().join("pgid");
    // The script records its process group, so the test can look for survivors without the output.
    let script = format!(
        "ps -o pgid= $$ > {} || echo $$ > {}; sleep 100 & sleep 100",
        marker.display(),
        marker.display()
    );
    let spec = ProcessSpec::bash(script).base_env(base_env());
    let run = process::run(spec, &config, CancellationToken::new(), None);
    // The future is dropped midway, as a caller's own timeout would, once the script has started.
    let pgid = tokio::select! {
        out = run => panic!("the command ended by itself: {out:?}"),
        pgid = written_group(&marker) => pgid,
    };
    assert_eq!(survivors(pgid), Vec::<u32>::new());
}

/// How long a test polls for something to happen before it fails.
const DEADLINE: Duration = Duration::from_secs(60);

/// Live (non-zombie) processes whose process group is `pgid`, once they are all gone or after
/// [`DEADLINE`] (a killed process leaves `/proc` asynchronously).
fn survivors(pgid: u32) -> Vec<u32> {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let found = agent_test_support::live_in_group(pgid);
        if found.is_empty() || std::time::Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn child_has_no_new_privs_seccomp_and_no_secrets() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite);
    let out = sh(&config, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; env").await;
    assert_ok(&out, "reading status and env");
    assert!(out.output.contains("NoNewPrivs:\t1"), "{}", out.output);
    assert!(out.output.contains("Seccomp:\t2"), "{}", out.output);
    assert!(
        !out.output.contains("OPENAI_API_KEY") && !out.output.contains("sk-test"),
        "{}",
        out.output
    );
    assert!(!out.output.contains("GITHUB_TOKEN"), "{}", out.output);
    for fixed in [
        "CI=1",
        "PAGER=cat",
        "GIT_PAGER=cat",
        "NO_COLOR=1",
        "TERM=dumb",
        "AGENT_SANDBOX=workspace-write",
    ] {
        assert!(out.output.lines().any(|line| line == fixed), "missing {fixed}");
    }
    if let Some(python) = python3() {
        // PTRACE_TRACEME returns 0 when allowed; the filter answers -1 (EPERM).
        let script = "import ctypes; print(ctypes.CDLL(None).ptrace(0, 0, 0, 0))";
        let out = run_python(&config, &python, script).await;
        assert_eq!(out.output.trim(), "-1", "sandbox BREACH: ptrace allowed");
    } else {
        skipped("ptrace part: python3 is not installed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn output_is_interleaved_in_arrival_order_and_stdin_is_empty() {
    let ws = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::DangerFullAccess);
    let out = sh(&config, "echo a; echo b >&2; echo c; cat; echo d >&2").await;
    assert_eq!(out.output, "a\nb\nc\nd\n");
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn danger_full_access_is_really_unsandboxed() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let config = config(ws.path(), SandboxPolicy::DangerFullAccess);
    let out = sh(
        &config,
        &format!("echo x > {}/f && grep NoNewPrivs /proc/self/status", outside.path().display()),
    )
    .await;
    assert_ok(&out, "writing outside the workspace without a sandbox");
    assert!(out.output.contains("NoNewPrivs:\t0"));
}

#[tokio::test(flavor = "multi_thread")]
async fn git_dir_stays_read_only_under_workspace_write() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    if !probe().mount_namespaces {
        skipped("no mount namespaces here, so .git cannot be kept read-only");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    std::fs::write(ws.path().join(".git/config"), "original").unwrap();
    let config = config(ws.path(), SandboxPolicy::WorkspaceWrite);
    for (script, what) in [
        ("echo x >> .git/config", "appending to .git/config"),
        ("printf '#!/bin/sh\\necho pwned' > .git/hooks/pre-commit", "planting a git hook"),
        ("rm -rf .git", "deleting .git"),
        ("mv .git moved", "renaming .git"),
        ("cd .git && echo x > HEAD", "writing from inside .git"),
    ] {
        assert_denied(&sh(&config, script).await, what);
    }
    assert_eq!(std::fs::read_to_string(ws.path().join(".git/config")).unwrap(), "original");
    assert!(!ws.path().join(".git/hooks/pre-commit").exists());
    let out = sh(&config, "echo ok > file && cat .git/config").await;
    assert_ok(&out, "writing the workspace next to .git");
    assert_eq!(out.output, "original");
    // With a working directory inside .git, the directory is entered again through the read-only mount.
    let spec = ProcessSpec::bash("echo x > HEAD").base_env(base_env()).cwd(ws.path().join(".git"));
    let out = process::run(spec, &config, CancellationToken::new(), None).await.unwrap();
    assert_denied(&out, "writing .git with the working directory inside it");
}
