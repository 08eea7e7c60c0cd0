//! bash in the background and the job tool: the texts the model reads, against real processes.

use agent_exec::jobs::{Jobs, JobsConfig};
use agent_tools::{BashConfig, BuiltinConfig};
use insta::assert_snapshot;
use serde_json::{Value, json};

use super::{Fixture, sandbox_missing};

/// A fixture whose jobs write their output under the workspace (so paths redact to `[WS]`).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let jobs = Jobs::new(JobsConfig {
        dir: Some(dir.path().join(".jobs")),
        max_jobs: 2,
        ..JobsConfig::default()
    });
    let config = BuiltinConfig {
        bash: BashConfig { jobs, ..BashConfig::default() },
        ..BuiltinConfig::default()
    };
    Fixture::with_config_in(config, dir)
}

/// Replaces durations (`1.0 s`) with `[T]`.
fn stable(text: &str) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            let is_time =
                word.contains('.') && word.chars().all(|c| c.is_ascii_digit() || c == '.');
            if is_time { "[T]".to_owned() } else { word.to_owned() }
        })
        .collect();
    words.join(" ")
}

async fn check(fx: &Fixture, name: &str, args: Value) -> String {
    stable(&fx.call(name, args).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_background_command_returns_its_id_and_is_read_until_its_end() {
    let fx = fixture();
    // It prints only after each line it reads, so every read below sees a known state.
    let command = "read line; echo got $line; read line; exit 3";
    let out = check(&fx, "bash", json!({"command": command, "background": true})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert_snapshot!(out);
    let out = check(&fx, "job", json!({"action": "output", "job_id": 1, "wait_ms": 100})).await;
    assert_snapshot!(out);
    let write = json!({"action": "write", "job_id": 1, "text": "hello\n", "wait_ms": 5000});
    assert_snapshot!(check(&fx, "job", write).await);
    let write = json!({"action": "write", "job_id": 1, "text": "bye\n", "wait_ms": 5000});
    assert_snapshot!(check(&fx, "job", write).await);
    let out = check(&fx, "job", json!({"action": "list"})).await;
    assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread")]
async fn yield_ms_returns_a_quick_command_whole_and_a_slow_one_as_a_job() {
    let fx = fixture();
    let out = check(&fx, "bash", json!({"command": "echo quick", "yield_ms": 5000})).await;
    if sandbox_missing(&out) {
        return;
    }
    assert_snapshot!(out);
    let out = check(&fx, "bash", json!({"command": "sleep 1000", "yield_ms": 300})).await;
    assert_snapshot!(out);
    let out = check(&fx, "job", json!({"action": "kill", "job_id": 2})).await;
    assert_snapshot!(out);
    let out = check(&fx, "job", json!({"action": "kill", "job_id": 2})).await;
    assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_are_capped_and_filtered() {
    let fx = fixture();
    let out = check(&fx, "bash", json!({"command": "seq 1 100000", "yield_ms": 10000})).await;
    if sandbox_missing(&out) {
        return;
    }
    // Finished within the yield: the tail of the output, and where the whole of it is.
    assert!(out.len() < 40_000, "{} bytes", out.len());
    let command = "seq 1 100000; sleep 1000";
    let out = check(&fx, "bash", json!({"command": command, "background": true})).await;
    assert!(out.starts_with("job_id: 2 ·"), "{out}");
    // With a filter, the read waits for a matching line.
    let filter = json!({"action": "output", "job_id": 2, "wait_ms": 20000, "filter": "^77777$"});
    assert_snapshot!(check(&fx, "job", filter).await);
    // Job 3 prints once told to, and says when it is done; the read comes after that.
    let command = "while [ ! -e go ]; do sleep 0.02; done; seq 1 100000; touch done; sleep 1000";
    let out = check(&fx, "bash", json!({"command": command, "background": true})).await;
    assert!(out.starts_with("job_id: 3 ·"), "{out}");
    let wait = "touch go; while [ ! -e done ]; do sleep 0.02; done";
    check(&fx, "bash", json!({"command": wait})).await;
    let read = check(&fx, "job", json!({"action": "output", "job_id": 3})).await;
    assert!(read.len() < 10_300, "{} bytes", read.len());
    assert!(read.contains("\n[… 578895 earlier bytes not shown …]\n"), "{read}");
    assert!(read.ends_with("100000\n[whole output: [WS]/.jobs/3.log]"), "{read}");
    // The limit is 2 running jobs here: one more is refused, naming the running ones.
    let out = check(&fx, "bash", json!({"command": "sleep 1", "background": true})).await;
    assert_snapshot!(out);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_job_answers_python() {
    let fx = fixture();
    let out =
        check(&fx, "bash", json!({"command": "python3 -i", "background": true, "tty": true})).await;
    if sandbox_missing(&out) {
        return;
    }
    // Typed-ahead input is discarded while the interpreter sets up its line editor, as in a real
    // terminal; so wait for the prompt first. Only the output is kept, without the headers.
    let mut seen = String::new();
    let output = json!({"action": "output", "job_id": 1, "wait_ms": 1000});
    for _ in 0..30 {
        seen.push_str(&body(&check(&fx, "job", output.clone()).await));
        if seen.contains(">>>") {
            break;
        }
    }
    assert!(seen.contains(">>>"), "{seen}");
    let write = json!({"action": "write", "job_id": 1, "text": "print(6*7)\n", "wait_ms": 1000});
    seen = body(&check(&fx, "job", write).await);
    for _ in 0..30 {
        if seen.contains("42") {
            break;
        }
        seen.push_str(&body(&check(&fx, "job", output.clone()).await));
    }
    assert!(seen.contains("42"), "{seen}");
}

/// The output part of a read: what follows its header line(s).
fn body(read: &str) -> String {
    let text = read.split_once("\n").map_or("", |(_, rest)| rest);
    // A write's result starts with one more line.
    let text = if read.starts_with("wrote ") {
        text.split_once("\n").map_or("", |(_, rest)| rest)
    } else {
        text
    };
    if text == "(no new output)" { String::new() } else { text.to_owned() }
}

#[tokio::test(flavor = "multi_thread")]
async fn mistakes_are_observations() {
    let fx = fixture();
    assert_snapshot!(check(&fx, "job", json!({"action": "output", "job_id": 9})).await);
    assert_snapshot!(check(&fx, "job", json!({"action": "kill"})).await);
    assert_snapshot!(check(&fx, "job", json!({"action": "list"})).await);
    assert_snapshot!(check(&fx, "bash", json!({"command": "cat", "tty": true})).await);
}

/// The interactive-job quiet rule (docs/jobs.md): a write returns once the job has been quiet for
/// a moment, not at its first byte, so the echo of `print(6*7)` and the answer `42` come in the
/// write's own result. Twenty fresh interpreters, since a late answer shows only now and then.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_to_python_on_a_terminal_returns_the_answer_in_its_own_result() {
    let fx = fixture();
    for run in 1..=20 {
        let start = json!({"command": "python3 -i", "background": true, "tty": true});
        let out = fx.call("bash", start).await;
        if sandbox_missing(&out) {
            return;
        }
        let prompt =
            fx.call("job", json!({"action": "output", "job_id": run, "wait_ms": 20000})).await;
        assert!(prompt.trim_end().ends_with(">>>"), "run {run}: no prompt in {prompt}");
        let write =
            json!({"action": "write", "job_id": run, "text": "print(6*7)\n", "wait_ms": 20000});
        let out = fx.call("job", write).await;
        assert!(out.contains("\n42\r\n"), "run {run}: no 42 in the write's result: {out}");
        fx.call("job", json!({"action": "kill", "job_id": run})).await;
    }
}
