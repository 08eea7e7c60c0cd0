//! Batches: concurrency of reads, exclusion of writes, call order, cancellation.
//!
//! The sleepers sleep on tokio's clock, so the tests run on virtual time (`start_paused`): the
//! clock jumps to the next timer when every task waits, durations are exact, and a loaded machine
//! cannot make them fail.

use std::{
    sync::{Arc, Mutex, atomic::Ordering},
    time::Duration,
};

use agent_core::{CancellationToken, ToolCall};
use agent_exec::{Executor, ExecutorConfig, PermissionMode, PermissionPolicy, Registry, Workspace};
use pretty_assertions::assert_eq;
use tokio::time::Instant;

use super::support::{Overlap, Sleeper, SleeperTool, call};

struct Bench {
    _dir: tempfile::TempDir,
    exec: Executor,
    reads: Arc<Overlap>,
    writes: Arc<Overlap>,
    /// Starts and ends of reads and writes alike, in the order they happened.
    order: Arc<Mutex<Vec<String>>>,
}

impl Bench {
    fn order(&self) -> Vec<String> {
        self.order.lock().unwrap().clone()
    }
}

fn bench() -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let reads = Arc::new(Overlap::logging_to(&order));
    let writes = Arc::new(Overlap::logging_to(&order));
    let mut registry = Registry::new();
    let read = Sleeper { name: "read_sleep", writes: false, overlap: reads.clone() };
    let write = Sleeper { name: "write_sleep", writes: true, overlap: writes.clone() };
    registry.register(Arc::new(SleeperTool::new(read))).unwrap();
    registry.register(Arc::new(SleeperTool::new(write))).unwrap();
    let policy = PermissionPolicy::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Bypass);
    let exec = Executor::new(registry, policy, ExecutorConfig::new("s"));
    Bench { _dir: dir, exec, reads, writes, order }
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

#[tokio::test(start_paused = true)]
async fn eight_reads_run_concurrently() {
    let b = bench();
    let batch = calls(&[("read_sleep", 200); 8]);
    let started = Instant::now();
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    // All eight at once: one sleep long, not eight.
    assert_eq!(started.elapsed(), Duration::from_millis(200));
    assert_eq!(b.reads.max.load(Ordering::SeqCst), 8);
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
    assert!(outcomes.iter().all(|outcome| outcome.ok));
}

#[tokio::test(start_paused = true)]
async fn reads_beyond_the_bound_wait_for_a_slot() {
    let b = bench();
    let batch = calls(&[("read_sleep", 100); 10]);
    let started = Instant::now();
    b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert_eq!(b.reads.max.load(Ordering::SeqCst), 8);
    // Eight in the first slot round, the last two after them.
    assert_eq!(started.elapsed(), Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn writes_never_overlap_and_wait_for_earlier_reads() {
    let b = bench();
    let batch =
        calls(&[("read_sleep", 100), ("write_sleep", 50), ("write_sleep", 10), ("read_sleep", 10)]);
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert_eq!(b.writes.max.load(Ordering::SeqCst), 1);
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3"]);
    // The writes run in call order, one after the other, after the first read ended and before
    // the last read started.
    assert_eq!(
        b.order(),
        ["start c0", "end c0", "start c1", "end c1", "start c2", "end c2", "start c3", "end c3"]
    );
}

#[tokio::test(start_paused = true)]
async fn outputs_come_back_in_call_order_whatever_the_finishing_order() {
    let b = bench();
    let batch = calls(&[("read_sleep", 150), ("read_sleep", 10), ("nope", 0), ("read_sleep", 80)]);
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3"]);
    assert_eq!(outcomes[0].text, "slept 150ms");
    assert_eq!(outcomes[2].error_code, Some("unknown_tool"));
}

#[tokio::test(start_paused = true)]
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
    // Nobody waits for the 5 s read: the batch ends when the cancel comes.
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    assert_eq!(ids(&outcomes), ["c0", "c1", "c2", "c3"]);
    let codes: Vec<Option<&str>> = outcomes.iter().map(|outcome| outcome.error_code).collect();
    assert_eq!(codes, [None, Some("cancelled"), Some("cancelled"), Some("cancelled")]);
    // The write never started; the reads before it did, and only the short one finished.
    assert_eq!(b.order(), ["start c0", "start c1", "end c0", "end c1"]);
}

#[tokio::test(start_paused = true)]
async fn an_empty_batch_is_empty() {
    let b = bench();
    assert!(b.exec.execute_batch(&[], &CancellationToken::new()).await.is_empty());
}
