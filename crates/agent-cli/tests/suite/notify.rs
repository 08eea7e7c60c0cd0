//! Notifications in a pseudo-terminal: a waiting approval rings the terminal (OSC 9 and BEL) and
//! runs the `[notify]` program with the JSON on its stdin, as the turn's end does; with
//! `enabled = false` neither happens.

use std::{path::Path, time::Instant};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{DEADLINE, screen::repl};

/// OSC 9 as the approval sends it, and the bell after it.
const OSC9: &str = "\x1b]9;agent: approval waiting: write_file";

/// The model asks to write a file (which needs approval in default mode), then answers.
fn script() -> Script {
    Script::new([
        Turn::tool_calls([ScriptedCall::new(
            "call_w",
            "write_file",
            json!({"path": "new.txt", "content": "hi\n"}),
        )]),
        Turn::text("All done."),
    ])
}

/// Runs one prompt through an approval (answered no) with `notify` as the `[notify]` table;
/// returns every byte the terminal got and the notify program's JSON lines.
async fn session(notify: &str) -> (String, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().to_path_buf();
    let out = workspace.join("notified.jsonl");
    let config = workspace.join(".no-config/agent/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let program = format!(
        "program = [\"/bin/sh\", \"-c\", \"cat >> '{}'; echo >> '{}'\"]",
        out.display(),
        out.display()
    );
    std::fs::write(&config, format!("[notify]\n{notify}\n{program}\n")).unwrap();
    let server = ScriptedServer::start(script()).await.unwrap();
    let enabled = !notify.contains("enabled = false");
    tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, &[]);
        screen.type_text("write the file\r");
        screen.wait_for("allow? [y]es");
        let raw = screen.raw();
        screen.type_text("n\r");
        screen.wait_for("All done.");
        if enabled {
            // Both events reach the program; it runs beside the REPL, so the file is awaited.
            wait_for_lines(&out, 2);
        }
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let lines =
            text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap());
        (raw, lines.collect())
    })
    .await
    .unwrap()
}

fn wait_for_lines(path: &Path, count: usize) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().filter(|l| !l.is_empty()).count() >= count {
            return;
        }
        assert!(start.elapsed() < DEADLINE, "{count} notifications not in {text:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_approval_rings_and_the_program_gets_the_json() {
    let (raw, events) = session("").await;
    let at = raw.find(OSC9).unwrap_or_else(|| panic!("no OSC 9 in {raw:?}"));
    let after = &raw[at..];
    assert!(after.contains("\x1b\\\x07"), "no ST then BEL after OSC 9: {after:?}");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["type"], "approval-requested");
    assert!(events[0]["last_message"].as_str().unwrap().starts_with("write_file: "));
    assert_eq!(events[1]["type"], "agent-turn-complete");
    assert_eq!(events[1]["last_message"], "All done.");
    let id = events[0]["session_id"].as_str().unwrap();
    assert!(!id.is_empty() && events[1]["session_id"] == id, "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabled_false_turns_both_off() {
    let (raw, events) = session("enabled = false").await;
    assert!(!raw.contains("\x1b]9;"), "OSC 9 while off: {raw:?}");
    assert!(events.is_empty(), "{events:?}");
}
