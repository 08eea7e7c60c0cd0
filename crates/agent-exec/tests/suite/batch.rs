//! Batches: concurrency of reads, exclusion of writes, call order, cancellation.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use agent_core::{CancellationToken, ToolCall};
use agent_exec::{Executor, ExecutorConfig, PermissionMode, PermissionPolicy, Registry, Workspace};
use pretty_assertions::assert_eq;

use super::support::{Overlap, Sleeper, SleeperTool, call};

struct Bench {
    _dir: tempfile::TempDir,
    exec: Executor,
    reads: Arc<Overlap>,
    writes: Arc<Overlap>,
}

fn bench() -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let reads = Arc::new(Overlap::default());
    let writes = Arc::new(Overlap::default());
    let mut registry = Registry::new();
    let read = Sleeper { name: "read_sleep", writes: false, overlap: reads.clone() };
    let write = Sleeper { name: "write_sleep", writes: true, overlap: writes.clone() };
    registry.register(Arc::new(SleeperTool::new(read))).unwrap();
    registry.register(Arc::new(SleeperTool::new(write))).unwrap();
    let policy = PermissionPolicy::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Bypass);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("s"));
    Bench { _dir: dir, exec, reads, writes }
}

fn calls(spec: &[(&str, u64)]) -> Vec<ToolCall> {
    spec.iter()
        .enumerate()
        .map(|(idx, (name, ms))| call(&format!("c{idx}"), name, &format!(r#"{{"ms": {ms}}}"#)))
        .collect()
}

fn ids(outcomes: &[agent_exec::Outcome]) -> Vec<&str> {
    outcomes.iter().map(|outcome| outcome.call_id.as_str()).collect()
}

#[tokio::test]
async fn eight_reads_run_concurrently() {
    let b = bench();
    let batch = calls(&[("read_sleep", 200); 8]);
    let started = Instant::now();
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(350), "8 × 200 ms reads took {elapsed:?}");
    assert_eq!(b.reads.max.load(Ordering::SeqCst), 8);
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
    assert!(outcomes.iter().all(|outcome| outcome.ok));
}

#[tokio::test]
async fn reads_beyond_the_bound_wait_for_a_slot() {
    let b = bench();
    let batch = calls(&[("read_sleep", 100); 10]);
    let started = Instant::now();
    b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert_eq!(b.reads.max.load(Ordering::SeqCst), 8);
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn writes_never_overlap_and_wait_for_earlier_reads() {
    let b = bench();
    let batch =
        calls(&[("read_sleep", 100), ("write_sleep", 50), ("write_sleep", 10), ("read_sleep", 10)]);
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert_eq!(b.writes.max.load(Ordering::SeqCst), 1);
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3"]);
    let reads = b.reads.order.lock().unwrap().clone();
    let writes = b.writes.order.lock().unwrap().clone();
    // The writes run in call order, one after the other, after the first read ended and before
    // the last read started.
    assert_eq!(writes, ["start c1", "end c1", "start c2", "end c2"]);
    assert_eq!(reads, ["start c0", "end c0", "start c3", "end c3"]);
}

#[tokio::test]
async fn outputs_come_back_in_call_order_whatever_the_finishing_order() {
    let b = bench();
    let batch = calls(&[("read_sleep", 150), ("read_sleep", 10), ("nope", 0), ("read_sleep", 80)]);
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3"]);
    assert_eq!(outcomes[0].text, "slept 150ms");
    assert_eq!(outcomes[2].error_code, Some("unknown_tool"));
}

#[tokio::test]
async fn cancelling_the_batch_gives_every_unfinished_call_a_cancelled_outcome() {
    let b = bench();
    let batch =
        calls(&[("read_sleep", 10), ("read_sleep", 5000), ("write_sleep", 10), ("read_sleep", 10)]);
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let outcomes = b.exec.execute_batch(&batch, &token).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3"]);
    let codes: Vec<Option<&str>> = outcomes.iter().map(|outcome| outcome.error_code).collect();
    assert_eq!(codes, [None, Some("cancelled"), Some("cancelled"), Some("cancelled")]);
    assert_eq!(b.writes.order.lock().unwrap().len(), 0, "the write never started");
}

#[tokio::test]
async fn an_empty_batch_is_empty() {
    let b = bench();
    assert!(b.exec.execute_batch(&[], &CancellationToken::new()).await.is_empty());
}
