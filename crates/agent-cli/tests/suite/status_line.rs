//! The REPL in tmux: the status line shows the context share above the prompt and is drawn
//! again after each turn (only when it changed), a status command's first line is shown, and a
//! waiting approval rings the terminal (OSC 9 and the bell), runs the `[notify]` program and
//! fires the `Notification` hooks.

use std::{path::Path, time::Instant};

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{DEADLINE, tmux::Pane};

/// The start of the default status line for the scripted model in default mode.
const STATUS: &str = "m · default · context ";

/// An answer of about 200 tokens, so each turn moves a 4,096-token window by a few percent.
fn long_answer(n: usize) -> Turn {
    Turn::text(format!("Answer {n}: {}", "lorem ipsum dolor sit amet ".repeat(30)))
}

/// The context shares the status lines in `text` show, in order.
fn shares(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix(STATUS)?.split('%').next()?.parse().ok())
        .collect()
}

/// Writes `toml` as the REPL's config file under `workspace`.
fn config(workspace: &Path, toml: &str) {
    let path = workspace.join(".no-config/agent/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, toml).unwrap();
}

/// The row right above the prompt's (where the status line is drawn), once a prompt is drawn
/// last on the screen; `""` until then.
fn above_prompt(screen: &str) -> &str {
    let rows: Vec<&str> = screen.lines().collect();
    match rows.split_last() {
        Some((last, before)) if last.trim() == "›" => before.last().copied().unwrap_or(""),
        _ => "",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_shows_the_context_share_and_updates_after_each_turn() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("w");
    std::fs::create_dir(&workspace).unwrap();
    let server =
        ScriptedServer::start(Script::new([long_answer(1), long_answer(2)])).await.unwrap();
    tokio::task::spawn_blocking(move || {
        let Some(pane) = Pane::repl(&workspace, &server, &["--context-window", "4096"]) else {
            return;
        };
        let start = pane.wait_until("a status line", |s| above_prompt(s).starts_with(STATUS));
        assert_eq!(shares(&start).len(), 1, "{start}");
        let mut seen = shares(&start);
        for n in 1..=2 {
            pane.enter(&format!("question {n}"));
            let screen = pane.wait_until("the status line after the turn", |screen| {
                screen.contains(&format!("Answer {n}:"))
                    && above_prompt(screen).starts_with(STATUS)
                    && shares(&pane.history()).len() > seen.len()
            });
            let line = above_prompt(&screen);
            assert!(line.starts_with(STATUS) && line.contains(" tokens · no jobs"), "{screen}");
            seen = shares(&pane.history());
            assert!(seen[n] > seen[n - 1], "the share grew with the turn: {seen:?}\n{screen}");
        }
        // A command that changes nothing draws no new line.
        pane.enter("/jobs");
        pane.wait_until("the next prompt", |screen| screen.trim_end().ends_with("(no jobs)\n›"));
        assert_eq!(shares(&pane.history()), seen, "{}", pane.history());
        assert_eq!(pane.exit(), 0, "{}", pane.screen());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_command_reads_the_session_and_its_first_line_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("w");
    std::fs::create_dir(&workspace).unwrap();
    // Claude Code's fields, through jq; the second line is never shown.
    let command = r#"jq -r '"[" + .model.id + "] ctx " + (.context_window.used_percentage|tostring) + "% mode " + .permission_mode'; echo not shown"#;
    config(&workspace, &format!("[status_line]\ncommand = '''{command}'''\ntimeout_ms = 5000\n"));
    let server = ScriptedServer::start(Script::new([long_answer(1)])).await.unwrap();
    tokio::task::spawn_blocking(move || {
        let Some(pane) = Pane::repl(&workspace, &server, &["--context-window", "4096"]) else {
            return;
        };
        let first = pane.wait_until("the command's line", |s| above_prompt(s).contains("[m] ctx "));
        assert!(above_prompt(&first).starts_with("[m] ctx "), "{first}");
        assert!(above_prompt(&first).ends_with("% mode default"), "{first}");
        assert!(!first.contains("not shown"), "{first}");
        pane.enter("question");
        let after = pane.wait_until("a second line", |s| {
            s.matches("[m] ctx ").count() == 2 && above_prompt(s).starts_with("[m] ctx ")
        });
        assert!(above_prompt(&after).starts_with("[m] ctx "), "{after}");
        assert_ne!(above_prompt(&first), above_prompt(&after), "the share changed");
        assert_eq!(pane.exit(), 0, "{}", pane.screen());
    })
    .await
    .unwrap();
}

/// OSC 9 as the approval sends it.
const OSC9: &str = "\x1b]9;agent: approval waiting: write_file";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_approval_rings_runs_notify_and_fires_the_notification_hook() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("w");
    std::fs::create_dir(&workspace).unwrap();
    let notified = dir.path().join("notified.jsonl");
    let hooked = dir.path().join("hooked.jsonl");
    let append = |path: &Path| format!("cat >> '{0}'; echo >> '{0}'", path.display());
    config(
        &workspace,
        &format!(
            "[notify]\nprogram = [\"/bin/sh\", \"-c\", \"{}\"]\n\n[[hooks.Notification]]\n\
             command = \"{}\"\n",
            append(&notified),
            append(&hooked)
        ),
    );
    let script = Script::new([
        Turn::tool_calls([ScriptedCall::new(
            "call_w",
            "write_file",
            json!({"path": "new.txt", "content": "hi\n"}),
        )]),
        Turn::text("All done."),
    ]);
    let server = ScriptedServer::start(script).await.unwrap();
    tokio::task::spawn_blocking(move || {
        let Some(pane) = Pane::repl(&workspace, &server, &[]) else { return };
        pane.enter("write the file");
        pane.wait_for("allow? [y]es");
        let raw = pane.raw();
        let at = raw.find(OSC9).unwrap_or_else(|| panic!("no OSC 9 in {raw:?}"));
        assert!(raw[at..].contains("\x1b\\\x07"), "no ST then BEL after OSC 9: {raw:?}");
        // Both reach the program and the hook beside the prompt, which does not wait for them.
        let program = wait_for_lines(&notified, 1);
        assert_eq!(program[0]["type"], "approval-requested", "{program:?}");
        let hooks = wait_for_lines(&hooked, 1);
        assert_eq!(hooks[0]["hook_event_name"], "Notification", "{hooks:?}");
        assert_eq!(hooks[0]["notification_type"], "permission_prompt");
        let message = hooks[0]["message"].as_str().unwrap();
        assert!(message.starts_with("agent needs your approval: write_file: "), "{message}");
        assert_eq!(hooks[0]["session_id"], program[0]["session_id"]);
        pane.enter("n");
        pane.wait_for("All done.");
        assert!(pane.raw().contains("\x1b]9;agent: turn ended: All done."), "{}", pane.raw());
        let program = wait_for_lines(&notified, 2);
        assert_eq!(program[1]["type"], "agent-turn-complete");
        let hooks = wait_for_lines(&hooked, 2);
        assert_eq!(hooks[1]["notification_type"], "idle_prompt");
        assert_eq!(hooks[1]["message"], "agent is waiting for your input");
        assert!(!workspace.join("new.txt").exists(), "the call was refused");
        assert_eq!(pane.exit(), 0, "{}", pane.screen());
    })
    .await
    .unwrap();
}

/// The JSON lines of `path` once it has `count` of them; fails after [`DEADLINE`].
fn wait_for_lines(path: &Path, count: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
        if lines.len() >= count {
            return lines.iter().map(|line| serde_json::from_str(line).unwrap()).collect();
        }
        assert!(start.elapsed() < DEADLINE, "{count} lines not in {text:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
