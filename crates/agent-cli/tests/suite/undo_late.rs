//! A background job's write after its call returned, through the binary: the REPL keeps the job
//! alive across prompts (`agent exec` ends its jobs with the run), the next turn's checkpoint
//! names the late write as made while no call was running, and `agent undo` prints it.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::json;

use crate::suite::{DEADLINE, agent, screen::Screen, stderr, stdout};

/// The job waits for the test's `go` before it writes, so its write comes after its call returned.
const JOB: &str = "while [ ! -e go ]; do sleep 0.05; done; echo late > late.txt";

/// Prompt 1 starts the job in the background; prompt 2 writes `mine.txt` with a normal call.
fn script() -> Script {
    Script::new([
        Turn::tool_calls([ScriptedCall::new(
            "call_job",
            "bash",
            json!({"command": JOB, "background": true}),
        )]),
        Turn::text("Started the job."),
        Turn::tool_calls([ScriptedCall::new(
            "call_mine",
            "bash",
            json!({"command": "echo mine > mine.txt"}),
        )]),
        Turn::text("Wrote mine."),
    ])
}

/// Polls until `path` holds `text` (the job's write, an event); fails after [`DEADLINE`].
fn wait_for_file(path: &Path, text: &str, screen: &Screen) {
    let start = Instant::now();
    while std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        assert!(
            start.elapsed() < DEADLINE,
            "no {path:?} after {DEADLINE:?}:\n{}",
            screen.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_jobs_late_write_is_named_by_undo_and_a_calls_write_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let server = ScriptedServer::start(script()).await.unwrap();
    let url = server.url();
    let workspace = ws.clone();
    let screen = tokio::task::spawn_blocking(move || {
        let args =
            ["--base-url", &url, "--model", "m", "--api", "chat", "--permission-mode", "bypass"];
        let mut screen = Screen::agent(&workspace, &[&args[..], &["chat"]].concat(), &[]);
        screen.wait_for("›");
        screen.type_text("start the job\r");
        screen.wait_for("Started the job.");
        if screen.contents().contains("sandbox_unavailable") {
            return Err(screen.contents());
        }
        // The job is still waiting: its call has returned and nothing has been written yet.
        assert!(!workspace.join("late.txt").exists(), "{}", screen.contents());
        std::fs::write(workspace.join("go"), "").unwrap();
        wait_for_file(&workspace.join("late.txt"), "late\n", &screen);
        screen.type_text("write mine\r");
        screen.wait_for("Wrote mine.");
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        Ok(screen.contents())
    })
    .await
    .unwrap();
    let screen = match screen {
        Ok(screen) => screen,
        Err(screen) => {
            agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {screen}"));
            return;
        }
    };

    let undo = agent(&ws, &["undo"]);
    let text = stdout(&undo);
    assert_eq!(undo.status.code(), Some(0), "{text}{}\nthe REPL:\n{screen}", stderr(&undo));
    assert!(text.contains("agent: undid turn 2"), "{text}");
    let outside = "(changed while no call was running (a background job, or another program))";
    // The job's late write, and the test's own `go`, are named; undo cannot bring back what they
    // replaced, so it leaves them.
    assert!(text.contains(&format!("not covered  late.txt {outside}")), "{text}");
    assert!(text.contains(&format!("not covered  go {outside}")), "{text}");
    assert_eq!(std::fs::read_to_string(ws.join("late.txt")).unwrap(), "late\n");
    // The control: the call's own write is covered as usual, never named as made outside a call.
    assert!(text.contains("removed      mine.txt"), "{text}");
    assert!(!text.contains("mine.txt (changed while"), "{text}");
    assert!(!ws.join("mine.txt").exists(), "{text}");
}
