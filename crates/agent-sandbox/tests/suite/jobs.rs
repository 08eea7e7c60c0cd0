//! Background jobs against real processes: exit statuses, process groups, the subreaper, the
//! pseudo-terminal, memory, the job limit, session end, and the session's private loopback.
//! Every effect is checked in `/proc`. A test whose kernel feature is missing prints
//! `SKIPPED: <reason>` (a failure under AGENT_NO_SKIP=1). The same jobs driven by a scripted model
//! through the agent loop are agent-exec's (`tests/suite/jobs.rs` there).

use std::{
    net::TcpListener,
    path::Path,
    time::{Duration, Instant},
};

use agent_sandbox::{
    jobs::{Exit, JobError, JobState, Jobs, JobsConfig},
    process::{self, ProcessSpec},
    sandbox::{NetNamespace, SandboxConfig, SandboxPolicy, probe},
};
use agent_test_support::skipped;
use tokio_util::sync::CancellationToken;

struct Session {
    jobs: Jobs,
    config: SandboxConfig,
    _workspace: tempfile::TempDir,
}

/// A session under workspace-write with the network off; `None` (after saying why) where the
/// kernel cannot enforce it. With `loopback`, the session has its private network namespace.
fn session(loopback: bool) -> Option<Session> {
    if let Some(err) = probe().support(SandboxPolicy::WorkspaceWrite).missing {
        skipped(&err.to_string());
        return None;
    }
    let workspace = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(workspace.path());
    config.kill_grace = Duration::from_millis(300);
    if loopback {
        match NetNamespace::create() {
            Ok(ns) => config.loopback = Some(ns),
            Err(err) => {
                skipped(&format!("no private network namespace: {err}"));
                return None;
            }
        }
    }
    let jobs = Jobs::new(JobsConfig { max_jobs: 3, ..JobsConfig::default() });
    Some(Session { jobs, config, _workspace: workspace })
}

impl Session {
    fn start(&self, script: &str) -> u32 {
        self.jobs.start(script, &ProcessSpec::bash(script), &self.config, false).unwrap().id
    }

    fn workspace(&self) -> &Path {
        &self.config.workspace
    }

    /// Waits for job `id` to end (at most 20 s) and returns how.
    async fn end(&self, id: u32) -> Exit {
        let info = self.jobs.wait(id, Duration::from_secs(20)).await.unwrap();
        match info.state {
            JobState::Finished(exit) => exit,
            JobState::Running => panic!("job {id} still runs: {info:?}"),
        }
    }

    /// Reads job `id` until its output contains `needle` (at most 20 s); returns all of it.
    async fn read_until(&self, id: u32, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = String::new();
        while !seen.contains(needle) && Instant::now() < deadline {
            seen.push_str(&self.jobs.read(id, Duration::from_millis(500)).await.unwrap().text);
        }
        assert!(seen.contains(needle), "no {needle:?} in: {seen}");
        seen
    }

    /// A foreground command in the same session.
    async fn run(&self, script: &str) -> process::ProcessOutput {
        let spec = ProcessSpec::bash(script);
        process::run(spec, &self.config, CancellationToken::new(), Some(Duration::from_secs(20)))
            .await
            .unwrap()
    }
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(1)?.parse().ok()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exit_code_is_noticed_once() {
    let Some(s) = session(false) else { return };
    let id = s.start("echo starting; sleep 1; echo done; exit 3");
    assert_eq!(s.end(id).await, Exit { code: Some(3), signal: None });
    let notices = s.jobs.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let text = notices[0].text();
    assert!(text.starts_with(&format!("[job {id} finished: exit 3 after 1.")), "{text}");
    assert!(text.contains("starting\ndone"), "{text}");
    assert!(text.contains(&notices[0].output_path.display().to_string()), "{text}");
    assert_eq!(std::fs::read_to_string(&notices[0].output_path).unwrap(), "starting\ndone\n");
    assert!(s.jobs.take_notices().is_empty(), "a notice must not repeat");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signal_is_reported_by_name() {
    let Some(s) = session(false) else { return };
    let spec = ProcessSpec::new("sh").arg("-c").arg("kill -SEGV $$");
    let id = s.jobs.start("segv", &spec, &s.config, false).unwrap().id;
    let exit = s.end(id).await;
    assert_eq!(exit.to_string(), "signal SIGSEGV");
    assert!(s.jobs.take_notices()[0].text().contains("signal SIGSEGV"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_double_forked_grandchild_keeps_the_job_running_until_session_end() {
    let Some(s) = session(false) else { return };
    let pidfile = s.workspace().join("grandchild.pid");
    let script = format!("(sleep 1000 & echo $! > {}); exit 0", pidfile.display());
    let id = s.start(&script);
    // The job's pid is its supervisor's, which leads the group.
    let supervisor = s.jobs.info(id).unwrap().pid;
    // The shell exits at once; the job is not finished while its grandchild lives.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pidfile.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grandchild: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(alive(grandchild));
    assert!(s.jobs.wait(id, Duration::from_millis(300)).await.unwrap().state == JobState::Running);
    assert!(s.jobs.take_notices().is_empty(), "reported finished while the grandchild lives");
    // Re-parented to the job's supervisor, a subreaper, rather than to init.
    let deadline = Instant::now() + Duration::from_secs(10);
    while parent(grandchild) != Some(supervisor) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(parent(grandchild), Some(supervisor));
    let leader = supervisor;
    let stopped = s.jobs.shutdown().await;
    assert_eq!(stopped.len(), 1);
    assert!(!alive(grandchild), "the grandchild survived the session");
    assert!(all_in_group(leader).is_empty(), "left in /proc: {:?}", all_in_group(leader));
}

#[tokio::test(flavor = "multi_thread")]
async fn session_end_leaves_no_process_in_proc() {
    let Some(s) = session(false) else { return };
    // One ignores SIGTERM, so the session end must escalate to SIGKILL.
    let ids = [
        s.start("sleep 1000"),
        s.start("trap '' TERM; sleep 1000 & wait"),
        s.start("yes > /dev/null"),
    ];
    let pgids: Vec<u32> = ids.iter().map(|&id| s.jobs.info(id).unwrap().pid).collect();
    for &pgid in &pgids {
        assert!(!all_in_group(pgid).is_empty());
    }
    let started = Instant::now();
    assert_eq!(s.jobs.shutdown().await.len(), 3);
    assert!(started.elapsed() < Duration::from_secs(5));
    for pgid in pgids {
        assert!(all_in_group(pgid).is_empty(), "group {pgid} left: {:?}", all_in_group(pgid));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_job_more_than_the_limit_is_refused_with_the_list() {
    let Some(s) = session(false) else { return };
    for _ in 0..3 {
        s.start("sleep 1000");
    }
    let err = s.jobs.start("sleep 1", &ProcessSpec::bash("sleep 1"), &s.config, false).unwrap_err();
    let JobError::TooMany { running } = &err else { panic!("{err}") };
    assert_eq!(running.len(), 3);
    let text = err.to_string();
    assert!(text.contains("3 jobs are running") && text.contains("1 running"), "{text}");
    s.jobs.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_on_a_terminal_answers_a_write() {
    let Some(s) = session(false) else { return };
    let id =
        s.jobs.start("python3 -i", &ProcessSpec::bash("python3 -i"), &s.config, true).unwrap().id;
    s.read_until(id, ">>> ").await;
    s.jobs.write(id, "print(6*7)\n").await.unwrap();
    s.read_until(id, "42").await;
    s.jobs.write(id, "exit()\n").await.unwrap();
    assert_eq!(s.end(id).await, Exit { code: Some(0), signal: None });
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_megabytes_of_output_stay_on_disk() {
    let Some(s) = session(false) else { return };
    let id = s.start("head -c 100000000 /dev/zero | tr '\\0' x");
    let mut peak = rss();
    while s.jobs.wait(id, Duration::from_millis(50)).await.unwrap().state == JobState::Running {
        peak = peak.max(rss());
    }
    assert!(peak < 64 << 20, "RSS reached {} MB", peak >> 20);
    let read = s.jobs.read(id, Duration::ZERO).await.unwrap();
    assert!(read.text.len() <= 1 << 20, "a read returned {} bytes", read.text.len());
    assert_eq!(read.skipped + read.text.len() as u64, 100_000_000);
    assert_eq!(std::fs::metadata(&read.info.output_path).unwrap().len(), 100_000_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_job_answers_a_later_call_on_the_private_loopback() {
    let Some(s) = session(true) else { return };
    let id = s.start("exec python3 -u -m http.server 8765 --bind 127.0.0.1");
    s.read_until(id, "Serving HTTP").await;
    std::fs::write(s.workspace().join("hello.txt"), "hello from the job\n").unwrap();
    let out = s.run("curl -sS --max-time 5 http://127.0.0.1:8765/hello.txt").await;
    assert_eq!(out.exit_code, Some(0), "{}", out.output);
    assert_eq!(out.output, "hello from the job\n");
    // Inside, only `lo` exists.
    let out = s.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").await;
    assert_eq!(out.output, "lo\n");
    // A listener on the host's own loopback is another device: unreachable from inside.
    let host = TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    let out = s.run(&format!("curl -sS --max-time 3 http://127.0.0.1:{port}/")).await;
    assert_ne!(out.exit_code, Some(0), "sandbox BREACH: reached the host: {}", out.output);
    assert!(out.output.contains("refused") || out.output.contains("Failed"), "{}", out.output);
    assert!(host.accept().is_err(), "sandbox BREACH: the host listener accepted a connection");
    let pgid = s.jobs.info(id).unwrap().pid;
    s.jobs.shutdown().await;
    assert!(all_in_group(pgid).is_empty());
}

/// A session whose namespace is made in the background (as `agent` does, so the first request
/// does not wait for it): every command joins that one namespace, holding only `lo`, and not the
/// host's.
#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_made_in_the_background_is_the_one_every_command_joins() {
    let Some(mut s) = session(false) else { return };
    let namespace = NetNamespace::in_background();
    if !namespace.is_available() {
        skipped("no private network namespace on this kernel");
        return;
    }
    s.config.loopback = Some(namespace);
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    let first = s.run("readlink /proc/self/ns/net").await;
    let second = s.run("readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1").await;
    let first = first.output.trim();
    assert!(first.starts_with("net:["), "{first}");
    assert_ne!(
        first,
        host.to_string_lossy(),
        "sandbox BREACH: the command is in the host's namespace"
    );
    assert_eq!(second.output.replace(' ', ""), format!("{first}\nlo\n"));
    // The control: without a namespace, a command is in the host's.
    s.config.loopback = None;
    let out = s.run("readlink /proc/self/ns/net").await;
    assert_eq!(out.output.trim(), host.to_string_lossy());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_namespace_loopback_stays_refused() {
    let Some(s) = session(false) else { return };
    let out = s.run("python3 -c 'import socket; socket.socket()'").await;
    assert_ne!(out.exit_code, Some(0), "an AF_INET socket opened without the namespace");
}

/// Every pid in process group `pgid`, zombies included.
fn all_in_group(pgid: u32) -> Vec<u32> {
    agent_test_support::process_group(pgid).into_iter().map(|member| member.pid).collect()
}
