//! `agent batch` against the scripted model server: forty tasks that edit files, run commands,
//! fail and hang past their limit, each in its own copy; and a batch killed with `kill -9`
//! halfway, run again to exactly one result per task with nothing of the first run left.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use agent_model::scripted::{Fault, Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{Running, all_gone, command, processes_with, stderr};

/// The kinds of task.
const KINDS: [&str; 4] = ["edit", "run", "fail", "hang"];

/// A batch's files: the tasks, a plain directory and a git repository they start from.
pub(crate) struct Batch {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    /// A marker in every hanging task's `sleep`, unique to this test.
    pub(crate) marker: String,
    /// How many tasks of each kind.
    per_kind: usize,
}

impl Batch {
    /// `per_kind` tasks of each kind: `edit` writes its own file and lists the directory (half in copies of a
    /// directory, half in worktrees of a repository at its first commit), `run` touches a file
    /// through an allow rule, `fail` ends at its turn limit or on a model error, `hang` sleeps
    /// past its wall limit of `wall` seconds.
    pub(crate) fn new(name: &str, wall: u64, per_kind: usize) -> (Self, Script) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("home");
        std::fs::create_dir_all(root.join("plain")).unwrap();
        std::fs::write(root.join("plain/a.txt"), "base\n").unwrap();
        let repo = root.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "base\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "one"]);
        // A second commit the tasks must not see: they check out the first.
        std::fs::write(repo.join("later.txt"), "later\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "two"]);
        let marker = format!("{}.{}{}", 300 + name.len(), std::process::id(), name.len());
        let mut script = Script::new([]);
        let mut lines = String::new();
        // The edit tasks first, so several run at once; then the others, interleaved.
        let edits = (0..per_kind).map(|n| ("edit", n));
        let others = (0..per_kind).flat_map(|n| KINDS[1..].iter().map(move |kind| (*kind, n)));
        for (kind, n) in edits.chain(others) {
            {
                let id = format!("{kind}{n}");
                let mut task = json!({"id": id, "prompt": format!("task-{id}: do it")});
                if kind == "edit" && n % 2 == 1 {
                    task["repo"] = json!("repo");
                    task["commit"] = json!("HEAD~1");
                } else {
                    task["workspace"] = json!("plain");
                }
                let mut steps = match kind {
                    "edit" => {
                        task["permission_mode"] = json!("bypass");
                        let file =
                            json!({"path": format!("{id}.txt"), "content": format!("{id}\n")});
                        vec![
                            call(&id, "w", "write_file", file),
                            // A slow model before the listing: the tasks running at once have all
                            // written their files when each lists its directory, so a shared
                            // directory would show.
                            call(&id, "l", "bash", json!({"command": "ls -a"})).with_delay_ms(1000),
                        ]
                    }
                    "run" => {
                        task["allow"] = json!(["Bash(touch *)"]);
                        vec![call(&id, "t", "bash", json!({"command": format!("touch {id}.out")}))]
                    }
                    "fail" if n % 2 == 0 => {
                        task["limits"] = json!({"turns": 1});
                        vec![call(&id, "x", "bash", json!({"command": "true"}))]
                    }
                    "fail" => {
                        let refused = Fault::Status {
                            status: 400,
                            body: r#"{"error":{"message":"refused"}}"#.to_owned(),
                            content_type: None,
                            headers: Default::default(),
                        };
                        vec![Turn::fault(refused)]
                    }
                    _ => {
                        task["permission_mode"] = json!("bypass");
                        task["limits"] = json!({"wall_secs": wall});
                        let sleep = json!({"command": format!("sleep {marker}")});
                        vec![call(&id, "s", "bash", sleep)]
                    }
                };
                if steps[0].fault.is_none() {
                    steps.push(Turn::text(format!("done {id}")));
                }
                // Each request is answered by the step after the last call id it contains (the
                // prompt's marker for the first step), so tasks interleave freely on one server.
                for (step, turn) in steps.iter().enumerate().rev() {
                    let when = match step {
                        0 => format!("task-{id}:"),
                        _ => steps[step - 1].tool_calls[0].call_id.clone(),
                    };
                    script = script.with_standing(when, turn.clone());
                }
                lines.push_str(&format!("{task}\n"));
            }
        }
        // Later steps first: the first matching standing answer wins.
        script.standing.sort_by_key(|standing| !standing.when_body_contains.starts_with("call_"));
        std::fs::write(root.join("TASKS.jsonl"), lines).unwrap();
        (Self { _dir: dir, root, marker, per_kind }, script)
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.root.join("TASKS.batch")
    }

    /// `agent batch` of this batch against `url`, running.
    pub(crate) fn start(&self, url: &str) -> Running {
        let args = [
            "--base-url",
            url,
            "--model",
            "m",
            "--api",
            "chat",
            "batch",
            "TASKS.jsonl",
            "--jobs",
            "4",
        ];
        Running::spawn(command(&self.root, &args).stdin(Stdio::null()))
    }

    /// The lines of RESULTS.jsonl.
    pub(crate) fn results(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.out().join("RESULTS.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// The tool outputs of a task's transcript.
    fn outputs(&self, result: &Value) -> Vec<String> {
        let path = self.out().join(result["transcript"].as_str().unwrap());
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|line| line["item"]["type"] == "tool_output")
            .map(|line| line["item"]["output"].to_string())
            .collect()
    }
}

/// A scripted turn that calls `tool` with id `call_<task><step>`.
fn call(task: &str, step: &str, tool: &str, arguments: Value) -> Turn {
    Turn::tool_calls([ScriptedCall::new(format!("call_{task}{step}"), tool, arguments)])
}

fn git(dir: &Path, args: &[&str]) {
    let identity = ["-c", "user.name=t", "-c", "user.email=t@localhost"];
    let status = Command::new("git").args(identity).args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Checks a finished batch: one result per task, each with its kind's status and patch, no task
/// seeing another's files, no copy or process left (but the worktrees that a killed node could
/// not remove, still registered in the repository).
pub(crate) fn check(batch: &Batch, output: &Output, dead: &[PathBuf]) {
    let results = batch.results();
    let total = 4 * batch.per_kind;
    let ids: BTreeSet<&str> = results.iter().map(|result| result["id"].as_str().unwrap()).collect();
    assert_eq!((results.len(), ids.len()), (total, total), "{}", stderr(output));
    for result in &results {
        let id = result["id"].as_str().unwrap();
        let patch = result["patch"]
            .as_str()
            .map(|path| std::fs::read_to_string(batch.out().join(path)).unwrap());
        let files: Vec<&str> = patch
            .iter()
            .flat_map(|patch| patch.lines())
            .filter_map(|line| line.strip_prefix("diff --git a/")?.split(' ').next())
            .collect();
        match id.trim_end_matches(char::is_numeric) {
            "edit" => {
                assert_eq!(
                    (&result["status"], &result["answer"]),
                    (&json!("completed"), &json!(format!("done {id}"))),
                    "{result}"
                );
                assert_eq!(files, [format!("{id}.txt")], "{result}");
                // The listing shows the task's copy: the base, its own file, nothing of another
                // task, and no later commit of the repository.
                let listing = &batch.outputs(result)[1];
                let names: Vec<&str> = listing
                    .trim_matches('"')
                    .split("\\n")
                    .filter(|name| name.ends_with(".txt"))
                    .collect();
                assert_eq!(names, ["a.txt", &format!("{id}.txt")], "{listing}");
            }
            "run" => {
                assert_eq!(result["status"], "completed", "{result}");
                assert_eq!(files, [format!("{id}.out")], "{result}");
            }
            "fail" => {
                assert_eq!(
                    (&result["status"], &result["exit_code"]),
                    (&json!("failed"), &json!(1)),
                    "{result}"
                );
                let reason = if id.ends_with(['0', '2', '4', '6', '8']) {
                    "max_turns"
                } else {
                    "model_error"
                };
                assert_eq!(result["reason"], reason, "{result}");
            }
            _ => {
                assert_eq!(
                    (&result["status"], &result["exit_code"]),
                    (&json!("wall_limit"), &Value::Null),
                    "{result}"
                );
                assert!(result["session_id"].is_string(), "{result}");
            }
        }
    }
    all_gone(&batch.marker);
    let work = batch.out().join("work");
    let left = std::fs::read_dir(&work).map_or(0, Iterator::count);
    assert_eq!(left, 0, "copies left in {}", work.display());
    let worktrees = Command::new("git")
        .args(["worktree", "list", "--porcelain"])
        .current_dir(batch.root.join("repo"))
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&worktrees.stdout).into_owned();
    let extra: Vec<&str> = listed
        .lines()
        .filter_map(|line| line.strip_prefix("worktree "))
        .skip(1)
        .filter(|path| !dead.iter().any(|dir| Path::new(path).starts_with(dir)))
        .collect();
    assert_eq!(extra, Vec::<&str>::new(), "worktrees left registered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_tasks_give_forty_results_with_their_statuses_and_patches() {
    let (batch, script) = Batch::new("all", 2, 10);
    let server = ScriptedServer::start(script).await.unwrap();
    let running = batch.start(&server.url());
    let output = tokio::task::spawn_blocking(move || running.finish("agent batch")).await.unwrap();
    // Not every task completed, so the batch says so with exit 1.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    check(&batch, &output, &[]);
    let summary = "20 completed, 10 failed, 10 wall_limit";
    assert!(stderr(&output).contains(summary), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_killed_with_kill_9_halfway_resumes_to_exactly_forty_results() {
    let (batch, script) = Batch::new("resume", 4, 10);
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let work = batch.out().join("work");
    let mut running = batch.start(&url);
    // Half the results written and a hanging task's sleep running: the batch is mid-way.
    let marker = batch.marker.clone();
    let what = "20 results and a hanging task";
    let halfway = |_: &Running| batch.results().len() >= 20 && !processes_with(&marker).is_empty();
    running.wait_until(what, halfway);
    let first = running.id();
    assert!(Command::new("kill").args(["-9", &first.to_string()]).status().unwrap().success());
    let first_output = running.finish("the killed batch");
    assert_eq!(first_output.status.code(), None, "killed by a signal");
    // What the first run left: its agents (named by their copy on the command line), still
    // running with nobody to end them, and its results so far.
    let agents = processes_with(&work.to_string_lossy());
    assert!(!agents.is_empty() && !processes_with(&marker).is_empty(), "nothing was left to clean");
    let before: BTreeMap<String, Value> = batch
        .results()
        .into_iter()
        .map(|result| (result["id"].as_str().unwrap().to_owned(), result))
        .collect();

    let rerun = batch.start(&url);
    let output =
        tokio::task::spawn_blocking(move || rerun.finish("the resumed batch")).await.unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("finished in an earlier run"), "{}", stderr(&output));
    check(&batch, &output, &[]);
    // The first run's agents are gone, and its results were kept, not run again.
    let alive: Vec<u32> = agents
        .into_iter()
        .filter(|pid| {
            Path::new(&format!("/proc/{pid}/cmdline")).exists()
                && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| !line.is_empty())
        })
        .collect();
    assert_eq!(alive, Vec::<u32>::new(), "agents of the first run survived");
    let after = batch.results();
    for (id, result) in &before {
        let now = after.iter().find(|line| line["id"] == id.as_str()).unwrap();
        assert_eq!(now["session_id"], result["session_id"], "{id} ran twice");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_kills_every_running_task_and_writes_no_result_for_them() {
    let (batch, script) = Batch::new("ctrlc", 600, 2);
    let server = ScriptedServer::start(script).await.unwrap();
    let mut running = batch.start(&server.url());
    let marker = batch.marker.clone();
    // Both hanging tasks run their sleep (four jobs: they start with the first tasks).
    running.wait_until("two hanging tasks", |_| processes_with(&marker).len() >= 2);
    let pid = running.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let output = running.finish("the interrupted batch");
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    // Every task's process group is gone: the agents (named by their copy) and their commands.
    all_gone(&marker);
    assert_eq!(processes_with(&batch.out().join("work").to_string_lossy()), Vec::<u32>::new());
    let hung = batch
        .results()
        .into_iter()
        .filter(|result| result["id"].as_str().unwrap().starts_with("hang"));
    assert_eq!(hung.count(), 0, "an interrupted task got a result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_its_token_limit_is_ended_and_the_others_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("home");
    std::fs::create_dir_all(root.join("plain")).unwrap();
    // `many` calls a tool at every turn; each request's tokens count towards its limit of 60.
    let mut script = Script::new([]).with_standing("task-ok:", Turn::text("fine"));
    for turn in (1..=5).rev() {
        let next = call("many", &turn.to_string(), "bash", json!({"command": "true"}));
        let when =
            if turn == 1 { "task-many:".to_owned() } else { format!("call_many{}", turn - 1) };
        script = script.with_standing(when, next);
    }
    script.standing.sort_by_key(|standing| !standing.when_body_contains.starts_with("call_"));
    let tasks = [
        json!({"id": "many", "prompt": "task-many: go", "workspace": "plain", "permission_mode": "bypass", "limits": {"tokens": 60}}),
        json!({"id": "ok", "prompt": "task-ok: go", "workspace": "plain"}),
    ];
    std::fs::write(root.join("TASKS.jsonl"), tasks.map(|task| format!("{task}\n")).concat())
        .unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let url = server.url();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "batch", "TASKS.jsonl"];
    let running = Running::spawn(command(&root, &args).stdin(Stdio::null()));
    let output = tokio::task::spawn_blocking(move || running.finish("agent batch")).await.unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = std::fs::read_to_string(root.join("TASKS.batch/RESULTS.jsonl")).unwrap();
    let results: BTreeMap<String, Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|result| (result["id"].as_str().unwrap().to_owned(), result))
        .collect();
    let many = &results["many"];
    assert_eq!(
        (&many["status"], &many["exit_code"]),
        (&json!("token_limit"), &Value::Null),
        "{many}"
    );
    let used = many["tokens_in"].as_u64().unwrap() + many["tokens_out"].as_u64().unwrap();
    assert!(used > 60 && server.requests().len() < 6, "{many}");
    assert_eq!(results["ok"]["status"], "completed");
}

#[test]
fn every_bad_line_is_reported_and_no_task_starts() {
    let dir = tempfile::tempdir().unwrap();
    let lines = "{\"id\":\"a\",\"prompt\":\"p\",\"workspace\":\".\"}\nnot json\n{\"id\":\"a\",\"prompt\":\"p\",\"workspace\":\".\"}\n{\"id\":\"b\",\"prompt\":\"p\"}\n";
    std::fs::write(dir.path().join("TASKS.jsonl"), lines).unwrap();
    let output = crate::suite::agent(dir.path(), &["batch", "TASKS.jsonl"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let said = stderr(&output);
    for line in [
        ":2: expected",
        ":3: the id `a` is used by an earlier line",
        ":4: no `workspace`",
        "3 bad lines",
    ] {
        assert!(said.contains(line), "{line:?} not in {said}");
    }
    assert!(!dir.path().join("TASKS.batch").exists(), "a bad file started the batch");
}
