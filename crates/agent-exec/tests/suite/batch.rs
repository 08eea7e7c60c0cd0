//! Batches: concurrency of reads, exclusion of writes (registered or late), call order,
//! cancellation.
//!
//! The sleepers sleep on tokio's clock, so the tests run on virtual time (`start_paused`): the
//! clock jumps to the next timer when every task waits, durations are exact, and a loaded machine
//! cannot make them fail.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use agent_core::{BoxFuture, CancellationToken, Tool, ToolCall, ToolErrorKind};
use agent_exec::{
    Approval, ApprovalRequest, Approver, Executor, ExecutorConfig, LateTools, PermissionMode,
    PermissionPolicy, Registry, ToolLimits, Workspace,
};
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
    assert_eq!(outcomes[2].error_code, Some(ToolErrorKind::UnknownTool));
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
    let codes: Vec<Option<ToolErrorKind>> =
        outcomes.iter().map(|outcome| outcome.error_code.clone()).collect();
    assert_eq!(
        codes,
        [
            None,
            Some(ToolErrorKind::Cancelled),
            Some(ToolErrorKind::Cancelled),
            Some(ToolErrorKind::Cancelled)
        ]
    );
    // The write never started; the reads before it did, and only the short one finished.
    assert_eq!(b.order(), ["start c0", "start c1", "end c0", "end c1"]);
}

#[tokio::test(start_paused = true)]
async fn an_empty_batch_is_empty() {
    let b = bench();
    assert!(b.exec.execute_batch(&[], &CancellationToken::new()).await.is_empty());
}

/// Late tools (as an MCP server's arrive): looked up after the registry, judged the same way.
struct Late(Vec<Arc<dyn Tool>>);

impl LateTools for Late {
    fn refresh(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { false })
    }
    fn tools(&self) -> Vec<(Arc<dyn Tool>, ToolLimits)> {
        self.0.iter().map(|tool| (Arc::clone(tool), ToolLimits::default())).collect()
    }
    fn get(&self, name: &str) -> Option<(Arc<dyn Tool>, ToolLimits)> {
        self.tools().into_iter().find(|(tool, _)| tool.spec().name == name)
    }
}

/// An approver that says yes after 10 ms and counts how many of its prompts are open at once.
#[derive(Default)]
struct Counting {
    open: AtomicUsize,
    most_open: AtomicUsize,
    asked: AtomicUsize,
}

impl Approver for Counting {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_open.fetch_max(open, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(10)).await;
            self.open.fetch_sub(1, Ordering::SeqCst);
            Approval::AllowOnce
        })
    }
}

struct LateBench {
    _dir: tempfile::TempDir,
    exec: Executor,
    reads: Arc<Overlap>,
    writes: Arc<Overlap>,
    order: Arc<Mutex<Vec<String>>>,
    approver: Arc<Counting>,
}

/// An executor whose only tools are late: `late_read` (read-only) and `late_write` (not), in
/// the default mode, so that writes are put to a counting approver.
fn late_bench() -> LateBench {
    let dir = tempfile::tempdir().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let reads = Arc::new(Overlap::logging_to(&order));
    let writes = Arc::new(Overlap::logging_to(&order));
    let read = Sleeper { name: "late_read", writes: false, overlap: reads.clone() };
    let write = Sleeper { name: "late_write", writes: true, overlap: writes.clone() };
    let late = Late(vec![Arc::new(SleeperTool::new(read)), Arc::new(SleeperTool::new(write))]);
    let policy =
        PermissionPolicy::new(Workspace::new(dir.path()).unwrap(), PermissionMode::Default);
    let approver = Arc::new(Counting::default());
    let exec = Executor::new(Registry::new(), policy, ExecutorConfig::new("s"))
        .with_late_tools(Arc::new(late))
        .with_approver(approver.clone());
    LateBench { _dir: dir, exec, reads, writes, order, approver }
}

#[tokio::test(start_paused = true)]
async fn calls_of_a_late_tool_that_writes_run_one_at_a_time_with_one_approval_open() {
    let b = late_bench();
    let batch = calls(&[("late_write", 100), ("late_write", 100), ("late_write", 100)]);
    let started = Instant::now();
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert!(outcomes.iter().all(|outcome| outcome.ok), "{outcomes:?}");
    assert_eq!(b.writes.max.load(Ordering::SeqCst), 1);
    assert_eq!(b.approver.asked.load(Ordering::SeqCst), 3);
    assert_eq!(b.approver.most_open.load(Ordering::SeqCst), 1);
    let order = b.order.lock().unwrap().clone();
    assert_eq!(order, ["start c0", "end c0", "start c1", "end c1", "start c2", "end c2"]);
    // One after the other: three approvals and three calls.
    assert_eq!(started.elapsed(), Duration::from_millis(330));
}

#[tokio::test(start_paused = true)]
async fn calls_of_a_late_read_only_tool_run_at_once() {
    let b = late_bench();
    let batch = calls(&[("late_read", 200), ("late_read", 200), ("late_read", 200)]);
    let started = Instant::now();
    let outcomes = b.exec.execute_batch(&batch, &CancellationToken::new()).await;
    assert!(outcomes.iter().all(|outcome| outcome.ok), "{outcomes:?}");
    // The control: the same late look-up lets reads overlap, and nobody is asked.
    assert_eq!(b.reads.max.load(Ordering::SeqCst), 3);
    assert_eq!(b.approver.asked.load(Ordering::SeqCst), 0);
    assert_eq!(started.elapsed(), Duration::from_millis(200));
}
