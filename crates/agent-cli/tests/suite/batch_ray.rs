//! The Ray driver (scripts/ray/batch.py) on a real local cluster: a head and two worker nodes
//! started with `ray start` on 127.0.0.1, a dozen tasks against the scripted model, one worker
//! killed while it runs a task, and RESULTS.jsonl compared with `agent batch`'s on the same
//! tasks. The cluster is stopped whatever happens, and nothing of it may be left.

use std::{
    collections::BTreeMap,
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Command, Stdio},
    time::Instant,
};

use agent_model::scripted::ScriptedServer;
use serde_json::Value;

use crate::suite::{
    DEADLINE, Running,
    batch::{Batch, check},
    processes_with, stderr,
};

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/ray/batch.py");

/// Runs the Python script named by its first argument with Ray's idea of this machine's address
/// set to 127.0.0.1. Ray replaces a loopback `--node-ip-address` with the address its host would
/// use to reach the internet (a UDP connect, sending nothing); the test keeps every byte of the
/// cluster on loopback, so `ray start` and the driver run under this shim.
const LOOPBACK: &str = "import runpy, sys; import ray._private.services as services; \
    services.node_ip_address_from_perspective = lambda *args, **kwargs: '127.0.0.1'; \
    sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')";

/// The nodes of a local cluster, each a `ray start --block` whose process tree is the node.
struct Cluster {
    root: tempfile::TempDir,
    python: PathBuf,
    nodes: Vec<(String, Running)>,
    /// Every process seen in a node's tree, checked gone at the end.
    seen: Vec<u32>,
}

impl Cluster {
    /// Temp dirs stay short: Ray's socket paths under them must fit in 107 bytes.
    fn new(python: PathBuf) -> Self {
        let root = tempfile::Builder::new().prefix("r").tempdir_in("/tmp").unwrap();
        Self { root, python, nodes: Vec::new(), seen: Vec::new() }
    }

    /// Starts node `name` with `args` and waits until Ray says it runs.
    fn start(&mut self, name: &str, args: &[&str]) {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(dir.join("work")).unwrap();
        let mut command = Command::new(&self.python);
        command
            .args(["-c", LOOPBACK])
            .arg(self.python.with_file_name("ray"))
            .args(["start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats"])
            .arg(format!("--temp-dir={}", dir.display()))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &dir)
            .env("RAY_USAGE_STATS_ENABLED", "0")
            // A dead node is noticed in seconds rather than half a minute.
            .env("RAY_health_check_initial_delay_ms", "0")
            .env("RAY_health_check_period_ms", "500")
            .env("RAY_health_check_timeout_ms", "500")
            .env("RAY_health_check_failure_threshold", "3")
            // What the agents below this node's workers see, as `suite::command` sets it.
            .env("AGENT_RAY_WORKDIR", dir.join("work"))
            .env("XDG_CONFIG_HOME", dir.join(".no-config"))
            .env("AGENT_LSP_PATH", "")
            .stdin(Stdio::null())
            .process_group(0);
        let mut node = Running::spawn(&mut command);
        let started = |node: &Running| {
            let said = node.stdout_so_far() + &node.stderr_so_far();
            said.contains("Ray runtime started")
        };
        node.wait_until(&format!("node {name} started"), started);
        self.nodes.push((name.to_owned(), node));
    }

    fn work(&self, name: &str) -> PathBuf {
        self.root.path().join(name).join("work")
    }

    /// Kills node `name` and every process below it, as a machine that dies.
    fn kill(&mut self, name: &str) {
        let index = self.nodes.iter().position(|(node, _)| node == name).unwrap();
        let (_, node) = self.nodes.remove(index);
        self.seen.extend(kill_tree(node.id()));
        node.kill();
    }

    /// Stops every node; the processes it ever ran must all be gone.
    fn stop(&mut self) -> Vec<u32> {
        for (_, node) in std::mem::take(&mut self.nodes) {
            self.seen.extend(kill_tree(node.id()));
            node.kill();
        }
        let start = Instant::now();
        let alive =
            |seen: &[u32]| seen.iter().copied().filter(|&pid| alive(pid)).collect::<Vec<_>>();
        while !alive(&self.seen).is_empty() && start.elapsed() < DEADLINE {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let mut left = alive(&self.seen);
        left.extend(processes_with(&self.root.path().to_string_lossy()));
        left
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `pid` and its descendants, killed with SIGKILL until none is left (children forked while
/// the tree is walked are caught by the next walk); every pid seen.
fn kill_tree(pid: u32) -> Vec<u32> {
    let mut seen = Vec::new();
    let start = Instant::now();
    loop {
        let mut tree = vec![pid];
        let mut index = 0;
        let parents: Vec<(u32, u32)> =
            all_processes().filter_map(|p| Some((p, parent(p)?))).collect();
        while index < tree.len() {
            let of = tree[index];
            tree.extend(
                parents.iter().filter(|(_, parent)| *parent == of).map(|(child, _)| *child),
            );
            index += 1;
        }
        tree.retain(|&pid| alive(pid));
        if tree.is_empty() || start.elapsed() > DEADLINE {
            return seen;
        }
        for &pid in &tree {
            let _ =
                Command::new("kill").args(["-9", &pid.to_string()]).stderr(Stdio::null()).status();
        }
        seen.extend(tree);
    }
}

fn all_processes() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
}

/// The parent and state of `pid` from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

fn parent(pid: u32) -> Option<u32> {
    stat(pid).map(|(_, parent)| parent)
}

/// Running, not a zombie waiting for its reaper.
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// The task id of an agent process: its copy is `<node work>/<id>.<random>/work`.
fn task_of(pid: u32) -> Option<String> {
    let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let line = String::from_utf8_lossy(&line).into_owned();
    let mut args = line.split('\0');
    args.find(|arg| *arg == "--workspace")?;
    let copy = PathBuf::from(args.next()?);
    let name = copy.parent()?.file_name()?.to_str()?.to_owned();
    Some(name.rsplit_once('.')?.0.to_owned())
}

/// A node's Ray id, from its raylet's command line.
fn node_id(cluster: &Cluster, name: &str) -> String {
    let temp = format!("--temp_dir={}", cluster.root.path().join(name).display());
    let raylet = processes_with(&temp).into_iter().find_map(|pid| {
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let line = String::from_utf8_lossy(&line).into_owned();
        line.split('\0').find_map(|arg| arg.strip_prefix("--node_id=").map(str::to_owned))
    });
    raylet.unwrap_or_else(|| panic!("no raylet of {name}"))
}

/// A free port on 127.0.0.1 for the head's GCS.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The results by id, without what may differ between two runs of the same tasks: timings,
/// nodes and session ids (the transcript path holds the session id; both must have one).
fn comparable(results: Vec<Value>) -> BTreeMap<String, Value> {
    let mut by_id = BTreeMap::new();
    for mut result in results {
        let object = result.as_object_mut().unwrap();
        for field in ["duration_ms", "node", "session_id"] {
            object.remove(field);
        }
        let transcript = object.remove("transcript").unwrap();
        object.insert("has_transcript".to_owned(), Value::Bool(transcript.is_string()));
        by_id.insert(object["id"].as_str().unwrap().to_owned(), result);
    }
    by_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ray_driver_survives_a_killed_worker_and_matches_agent_batch() {
    let Some(python) = agent_test_support::peer_python("ray") else { return };
    let (batch, script) = Batch::new("ray", 8, 3);
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let mut cluster = Cluster::new(python.clone());
    let address = format!("127.0.0.1:{}", free_port());
    let port = address.rsplit(':').next().unwrap().to_owned();
    cluster
        .start("head", &["--head", "--port", &port, "--num-cpus=0", "--include-dashboard=false"]);
    cluster.start("node1", &["--address", &address, "--num-cpus=2"]);
    cluster.start("node2", &["--address", &address, "--num-cpus=2"]);

    let agent = env!("CARGO_BIN_EXE_agent");
    let mut driver = Command::new(&python);
    driver
        .args([
            "-c",
            LOOPBACK,
            DRIVER,
            "TASKS.jsonl",
            "--address",
            &address,
            "--agent",
            agent,
            "--",
        ])
        .args(["--base-url", &url, "--model", "m", "--api", "chat"])
        .current_dir(&batch.root)
        .env("HOME", &batch.root)
        .stdin(Stdio::null());
    let mut driver = Running::spawn(&mut driver);
    // A hanging task's agent runs on node1: kill the node under it.
    let node1 = cluster.work("node1");
    let on_node1 = format!("{}/hang", node1.display());
    driver.wait_until("a hanging task on node1", |_| !processes_with(&on_node1).is_empty());
    let victims: Vec<String> = processes_with(&on_node1).into_iter().filter_map(task_of).collect();
    let node1_id = node_id(&cluster, "node1");
    cluster.kill("node1");
    let output =
        tokio::task::spawn_blocking(move || driver.finish("the Ray driver")).await.unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    // Every task has its one result, the killed ones' from another node; only the killed node
    // keeps what it was running (its copies, a worktree still registered).
    check(&batch, &output, std::slice::from_ref(&node1));
    assert_eq!(std::fs::read_dir(cluster.work("node2")).unwrap().count(), 0);
    // The task the node was running has its result from the other node.
    assert!(!victims.is_empty());
    for victim in &victims {
        let result = batch.results().into_iter().find(|r| r["id"] == victim.as_str()).unwrap();
        assert!(!result["node"].as_str().unwrap().contains(&node1_id[..12]), "{result}");
    }
    let on_ray = comparable(batch.results());
    let left = cluster.stop();
    assert_eq!(left, Vec::<u32>::new(), "processes of the cluster survived it");

    // The same tasks with `agent batch`: the same results, field by field.
    std::fs::rename(batch.out(), batch.root.join("ray.batch")).unwrap();
    let local = batch.start(&url);
    let output = tokio::task::spawn_blocking(move || local.finish("agent batch")).await.unwrap();
    // The worktree the dead node left (if it was running one) is still registered in the repository.
    check(&batch, &output, std::slice::from_ref(&node1));
    assert_eq!(comparable(batch.results()), on_ray);
}
