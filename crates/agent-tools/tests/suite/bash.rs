//! bash: real processes under the sandbox; header, interleaving, timeouts, workdir checks.

use insta::assert_snapshot;
use serde_json::json;

use super::{Fixture, sandbox_missing};

/// Replaces the run time in the header (`· 0.0 s ·`) so snapshots are stable.
fn stable(text: &str) -> String {
    let mut out = String::new();
    for (index, line) in text.lines().enumerate() {
        if index == 0 {
            let mut parts: Vec<&str> = line.split(" · ").collect();
            if parts.len() > 1 {
                parts[1] = "[TIME]";
            }
            out.push_str(&parts.join(" · "));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
}

#[tokio::test]
async fn header_exit_code_and_interleaved_output() {
    let fx = Fixture::new();
    let out =
        fx.call("bash", json!({"command": "echo one; echo two >&2; echo three; exit 3"})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert_snapshot!(stable(&out), @r"
    exit 3 · [TIME] · workdir .
    one
    two
    three
    ");
}

#[tokio::test]
async fn workdir_is_resolved_inside_the_workspace() {
    let fx = Fixture::new();
    fx.put("sub/dir/file.txt", "content\n");
    let out = fx.call("bash", json!({"command": "ls; true", "workdir": "sub/dir"})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert_snapshot!(stable(&out), @r"
    exit 0 · [TIME] · workdir sub/dir
    file.txt
    ");
    assert!(
        fx.call("bash", json!({"command": "ls", "workdir": ".."}))
            .await
            .contains("outside_workspace")
    );
    assert_snapshot!(fx.call("bash", json!({"command": "ls", "workdir": "nope"})).await, @r#"{"ok":false,"error":"invalid_arguments","message":"workdir nope is not an existing directory"}"#);
}

#[tokio::test]
async fn no_output_and_no_stdin() {
    let fx = Fixture::new();
    // `cat` with no arguments reads stdin: it must see end-of-file at once, not hang.
    let out = fx.call("bash", json!({"command": "cat", "timeout_ms": 5000})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert_snapshot!(stable(&out), @r"
    exit 0 · [TIME] · workdir .
    (no output)
    ");
}

#[tokio::test]
async fn timeout_kills_and_returns_the_last_output() {
    let fx = Fixture::new();
    let started = std::time::Instant::now();
    let out =
        fx.call("bash", json!({"command": "echo started; sleep 30", "timeout_ms": 500})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_snapshot!(out, @r#"{"ok":false,"error":"timeout","message":"killed after 0.5 s (the whole process group; workdir .). Servers and watchers cannot run in the background here: run them bounded (for example `timeout 10 <cmd>`). Prompts for input: add --yes / --non-interactive. If the command is just slow, raise timeout_ms (at most 600 s). Last output:\nstarted\n"}"#);
}

/// Pids of the processes in process group `pgid` that can still run (zombies have exited), once
/// there are none or after 20 s: a killed process leaves `/proc` asynchronously.
fn survivors(pgid: u32) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let pids = agent_test_support::live_in_group(pgid);
        if pids.is_empty() || std::time::Instant::now() > deadline {
            return pids;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_kills_the_command_promptly() {
    use std::time::{Duration, Instant};
    let fx = Fixture::new();
    let tool = fx.tools.iter().find(|t| t.spec().name == "bash").unwrap();
    // The shell writes its pid (the process group's id) before it starts `sleep`; the cancel comes
    // once the marker is there, so the group is known to be running when it is killed.
    let command = "echo $$ > started.pid; sleep 30";
    let call = tool.prepare(&json!({ "command": command }).to_string()).unwrap();
    let ctx = agent_core::ToolContext::new(fx.boundary(), "session".into(), "call_cancel");
    let cancel = ctx.cancel.clone();
    let marker = fx.root().join("started.pid");
    let canceller = tokio::spawn(async move {
        let deadline = Instant::now() + Duration::from_secs(20);
        let pgid = loop {
            let text = std::fs::read_to_string(&marker).unwrap_or_default();
            if let Ok(pgid) = text.trim().parse::<u32>() {
                break Some(pgid);
            }
            if Instant::now() >= deadline {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        cancel.cancel();
        pgid.map(|pgid| (pgid, Instant::now()))
    });
    let result = tool.run(call, ctx).await;
    let out = match result {
        Ok(output) => output.text,
        Err(err) => err.observation(),
    };
    if sandbox_missing(&out) {
        canceller.abort();
        return;
    }
    let (pgid, cancelled_at) = canceller.await.unwrap().expect("the command never wrote its pid");
    assert!(cancelled_at.elapsed() < Duration::from_secs(10), "took {:?}", cancelled_at.elapsed());
    assert_eq!(survivors(pgid), Vec::<u32>::new(), "left running after the cancel");
    assert_snapshot!(out, @r#"{"ok":false,"error":"cancelled","message":"the command was cancelled and its process group killed"}"#);
}

/// A library may set any `Duration`; one too far out to be an instant is no deadline, where it
/// used to panic (`overflow when adding duration to instant`) in every bash call.
#[tokio::test]
async fn a_time_limit_too_far_out_to_be_an_instant_runs_the_command_without_a_panic() {
    let bash = agent_tools::BashConfig {
        default_timeout: std::time::Duration::MAX,
        max_timeout: std::time::Duration::MAX,
        ..agent_tools::BashConfig::default()
    };
    let fx = Fixture::with_config(agent_tools::BuiltinConfig { bash, ..Default::default() });
    let out = fx.call("bash", json!({"command": "echo still here"})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert!(out.starts_with("exit 0 ·") && out.contains("still here"), "{out}");
}
