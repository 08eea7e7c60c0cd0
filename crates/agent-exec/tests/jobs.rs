//! Background jobs against real processes: exit statuses, process groups, the subreaper, the
//! pseudo-terminal, memory, the job limit, session end, and the session's private loopback.
//! Every effect is checked in `/proc`. A test whose kernel feature is missing prints
//! `SKIPPED: <reason>` (a failure under AGENT_REQUIRE_SANDBOX=1).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod skip;

use std::{
    net::TcpListener,
    path::Path,
    time::{Duration, Instant},
};

use agent_exec::{
    jobs::{Exit, JobError, JobState, Jobs, JobsConfig},
    process::{self, ProcessSpec},
    sandbox::{NetNamespace, SandboxConfig, SandboxPolicy, probe},
};
use skip::skipped;
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

/// Pids of processes (zombies included) in process group `pgid`, from `/proc/<pid>/stat`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // Fields after the parenthesised name: state, ppid, pgrp, …
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        if fields[2].parse::<u32>() == Ok(pgid) {
            pids.push(pid);
        }
    }
    pids
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
    let leader = s.jobs.info(id).unwrap().pid;
    // The leader exits at once; the job is not finished while its grandchild lives.
    let deadline = Instant::now() + Duration::from_secs(10);
    while (alive(leader) || !pidfile.exists()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grandchild: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(alive(grandchild));
    assert!(s.jobs.wait(id, Duration::from_millis(300)).await.unwrap().state == JobState::Running);
    assert!(s.jobs.take_notices().is_empty(), "reported finished while the grandchild lives");
    // Re-parented to this process, the subreaper, rather than to init.
    let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap();
    let ppid: u32 =
        stat[stat.rfind(')').unwrap() + 2..].split(' ').nth(1).unwrap().parse().unwrap();
    assert_eq!(ppid, std::process::id());
    let stopped = s.jobs.shutdown().await;
    assert_eq!(stopped.len(), 1);
    assert!(!alive(grandchild), "the grandchild survived the session");
    assert!(group_members(leader).is_empty(), "left in /proc: {:?}", group_members(leader));
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
        assert!(!group_members(pgid).is_empty());
    }
    let started = Instant::now();
    assert_eq!(s.jobs.shutdown().await.len(), 3);
    assert!(started.elapsed() < Duration::from_secs(5));
    for pgid in pgids {
        assert!(group_members(pgid).is_empty(), "group {pgid} left: {:?}", group_members(pgid));
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
    assert!(group_members(pgid).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_namespace_loopback_stays_refused() {
    let Some(s) = session(false) else { return };
    let out = s.run("python3 -c 'import socket; socket.socket()'").await;
    assert_ne!(out.exit_code, Some(0), "an AF_INET socket opened without the namespace");
}

/// The whole path with a scripted model: it starts a server as a job, queries it from a later
/// call, receives the notice of another job, and answers. The notice reaches the model once,
/// after the outputs of the turn in which the job ended, and the transcript replays as it ran.
#[tokio::test(flavor = "multi_thread")]
async fn a_scripted_session_serves_queries_and_hears_of_a_finished_job() {
    use agent_core::{CancellationToken, Item};
    use agent_exec::{Agent, PermissionMode, Transcript, agent::Finish};
    use agent_model::{
        ChatClient, ClientConfig,
        scripted::{Script, ScriptedCall, ScriptedServer, Turn},
    };
    use serde_json::json;

    let Some(s) = session(true) else { return };
    std::fs::write(s.workspace().join("hello.txt"), "hello from the job\n").unwrap();
    let server = "exec python3 -m http.server 8766 --bind 127.0.0.1";
    // Job 2 ends once the query has been made; the query then waits until its group is gone.
    let build = "echo $$ > build.pid; while [ ! -e go ]; do sleep 0.02; done; echo built; exit 3";
    let query = "touch go; for i in $(seq 100); do curl -sf http://127.0.0.1:8766/hello.txt && break; sleep 0.1; done; \
                 while kill -0 -- -$(cat build.pid) 2>/dev/null; do sleep 0.02; done";
    let model_server = ScriptedServer::start(Script::new([
        Turn::tool_calls([
            ScriptedCall::new("call_1", "bash", json!({"command": server, "background": true})),
            ScriptedCall::new("call_2", "bash", json!({"command": build, "background": true})),
        ]),
        Turn::tool_calls([ScriptedCall::new("call_3", "bash", json!({"command": query}))]),
        Turn::text("The server answered and the build failed with exit 3."),
    ]))
    .await
    .unwrap();
    let model = ChatClient::new(&ClientConfig::new(model_server.url(), "scripted")).unwrap();
    let bash = agent_tools::BashConfig {
        sandbox: s.config.clone(),
        jobs: s.jobs.clone(),
        ..agent_tools::BashConfig::default()
    };
    let builtin = agent_tools::BuiltinConfig { bash, ..Default::default() };
    let mut agent =
        agent_tools::BuiltinTools::builtin_tools(Agent::builder(s.workspace()), &builtin)
            .unwrap()
            .permission_mode(PermissionMode::Bypass)
            .build(model)
            .unwrap();
    let log = tempfile::tempdir().unwrap();
    let mut transcript = Transcript::open(log.path().join("transcript.jsonl"), Vec::new()).unwrap();
    let finish = agent
        .prompt_with(
            "Start the server, query it, tell me about the build.",
            &CancellationToken::new(),
            |event| {
                transcript.record(&event).unwrap();
            },
        )
        .await;
    assert!(matches!(finish, Finish::Answered(_)), "{finish:?}");

    let items = &agent.conversation().items;
    let outputs: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolOutput(output) => Some(output.output.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        outputs[0].starts_with("job_id: 1 ·") && outputs[1].starts_with("job_id: 2 ·"),
        "{outputs:?}"
    );
    assert!(outputs[2].contains("hello from the job"), "{}", outputs[2]);
    // One notice, right after the last output of the turn in which the job ended.
    let notices: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, Item::Message(m) if m.content.starts_with("[job 2 finished: exit 3")))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(notices.len(), 1, "{items:#?}");
    assert!(matches!(&items[notices[0] - 1], Item::ToolOutput(o) if o.call_id == "call_3"));
    let Item::Message(notice) = &items[notices[0]] else { unreachable!() };
    assert!(notice.content.contains("built"), "{}", notice.content);
    // The model received it exactly once: in the last request, and in no earlier one.
    let requests = model_server.requests();
    let carried: Vec<bool> =
        requests.iter().map(|r| r.body.contains("[job 2 finished: exit 3")).collect();
    assert_eq!(carried, [false, false, true]);
    // Job 1 (the server) still runs; it is no finished job, so no notice.
    assert_eq!(s.jobs.running().len(), 1);
    assert_eq!(&Transcript::read_items(&log.path().join("transcript.jsonl")).unwrap(), items);
    let pgid = s.jobs.running()[0].pid;
    s.jobs.shutdown().await;
    assert!(group_members(pgid).is_empty());
}
