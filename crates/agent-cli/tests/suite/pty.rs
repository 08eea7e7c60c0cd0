//! What the terminal shows, driven in a pseudo-terminal (`screen::Screen`) against the scripted model
//! server: approvals show the change, what was denied stays undone, the work is visible, and
//! the same run through a pipe has no escape codes.

use std::time::Duration;

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::json;

use crate::suite::screen::{Screen, repl};

const MAIN: &str = "fn main() {\n    println!(\"hello\");\n}\n";

/// The model reads `main.rs`, edits it to greet the world, then answers `answer`.
fn edit_script(answer: &str) -> Script {
    Script::new([
        Turn::tool_calls([ScriptedCall::new("call_r", "read_file", json!({"path": "main.rs"}))]),
        Turn::tool_calls([ScriptedCall::new(
            "call_e",
            "edit_file",
            json!({
                "path": "main.rs",
                "old_string": "    println!(\"hello\");",
                "new_string": "    println!(\"hello, world\");",
            }),
        )]),
        Turn::text(answer),
    ])
}

/// What an edit session showed: the screen at the approval prompt and at the end, and every
/// byte written.
struct Shown {
    at_prompt: String,
    at_end: String,
    raw: String,
}

/// Runs the edit script, answering the approval with `answer`, with `env` set; then types each
/// line of `then` and waits for its text.
async fn edit_session(
    answer: &'static str,
    env: &'static [(&str, &str)],
    then: &'static [(&str, &str)],
) -> (tempfile::TempDir, Shown) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), MAIN).unwrap();
    let server = ScriptedServer::start(edit_script("All done.")).await.unwrap();
    let workspace = dir.path().to_path_buf();
    let shown = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, env);
        screen.type_text("greet the world\r");
        screen.wait_for("allow? [y]es");
        let at_prompt = screen.contents();
        // Nothing is written while the question is open.
        assert_eq!(std::fs::read_to_string(workspace.join("main.rs")).unwrap(), MAIN);
        screen.type_text(answer);
        screen.wait_for("All done.");
        for (line, text) in then {
            screen.type_text(line);
            screen.wait_for(text);
        }
        let at_end = screen.contents();
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        Shown { at_prompt, at_end, raw: screen.raw() }
    })
    .await
    .unwrap();
    (dir, shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_edit_approval_shows_the_diff_and_yes_applies_it() {
    let then = &[("/diff\r", "/diff"), ("/last\r", "3→}")];
    let (dir, Shown { at_prompt, at_end, raw }) = edit_session("y\r", &[], then).await;
    let added = "+    println!(\"hello, world\");";
    assert!(at_prompt.contains("? edit_file main.rs"), "{at_prompt}");
    assert!(at_prompt.contains("-    println!(\"hello\");"), "{at_prompt}");
    assert!(at_prompt.contains(added), "{at_prompt}");
    // On a terminal the diff is coloured.
    assert!(raw.contains(&format!("\x1b[32m{added}\x1b[0m")), "{raw:?}");
    let edited = std::fs::read_to_string(dir.path().join("main.rs")).unwrap();
    assert_eq!(edited, "fn main() {\n    println!(\"hello, world\");\n}\n");
    // After the answer: the preview of what the call did, under its status line; then /diff
    // and /last show the change again.
    let after = at_end.split("allow? [y]es").nth(1).unwrap();
    let preview = after.split("/diff").next().unwrap();
    assert!(preview.contains("edit_file: ok ("), "{at_end}");
    assert!(preview.contains("Edited main.rs: 1 replacement at line 2 (+1 −1)"), "{at_end}");
    assert!(preview.contains(added), "the diff preview follows the call: {at_end}");
    let (diff, last) = after.split_once("/last").unwrap();
    assert!(diff.contains("main.rs") && diff.contains(added), "/diff: {at_end}");
    assert!(last.contains(added) && last.contains("Edited main.rs"), "/last: {at_end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_edit_leaves_the_file_as_it_was() {
    // NO_COLOR turns the colours off, on a terminal too.
    let (dir, Shown { at_prompt, at_end, raw }) =
        edit_session("n\r", &[("NO_COLOR", "1")], &[("/diff\r", "no file changes")]).await;
    assert!(raw.contains("\n  +    println!(\"hello, world\");\r\n"), "{raw:?}");
    assert!(at_prompt.contains("+    println!(\"hello, world\");"), "{at_prompt}");
    assert_eq!(std::fs::read(dir.path().join("main.rs")).unwrap(), MAIN.as_bytes());
    assert!(at_end.contains("edit_file: error: rejected"), "{at_end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bash_approval_shows_the_command_and_its_duration_leaves_out_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo made > made.txt && echo wrote the flag";
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new("call_b", "bash", json!({"command": command}))]),
        Turn::text("Ran it."),
    ]))
    .await
    .unwrap();
    let workspace = dir.path().to_path_buf();
    let wait = Duration::from_secs(3);
    let (at_prompt, at_end) = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, &[]);
        screen.type_text("run it\r");
        screen.wait_for("allow? [y]es");
        let at_prompt = screen.contents();
        // The person reads the prompt for a while; that time is not the command's.
        std::thread::sleep(wait);
        screen.type_text("y\r");
        screen.wait_for("Ran it.");
        let at_end = screen.contents();
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        (at_prompt, at_end)
    })
    .await
    .unwrap();
    assert!(at_prompt.contains(&format!("$ {command}")), "{at_prompt}");
    let root = dir.path().canonicalize().unwrap();
    assert!(at_prompt.contains(&format!("in {}", root.display())), "{at_prompt}");
    assert!(at_prompt.contains("sandbox: workspace-write, network off"), "{at_prompt}");
    if at_end.contains("sandbox_unavailable") {
        agent_test_support::skipped(&format!("the OS sandbox is unavailable here: {at_end}"));
        return;
    }
    let millis: u64 = at_end
        .split("bash: ok (")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration: {at_end}"));
    // Half the wait: far below what the wait alone would add, with room for a loaded machine.
    assert!(
        u128::from(millis) < wait.as_millis() / 2,
        "{millis} ms includes the {wait:?} approval wait: {at_end}"
    );
    // The preview under the status line: the exit code and the last lines of output.
    let after = at_end.split("bash: ok (").nth(1).unwrap();
    assert!(after.contains("exit 0 ·") && after.contains("wrote the flag"), "{at_end}");
    assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).unwrap(), "made\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_run_through_a_pipe_prints_no_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), MAIN).unwrap();
    let server = ScriptedServer::start(edit_script("All done.")).await.unwrap();
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let args = ["--base-url", &url, "--model", "m", "--api", "chat"];
        let args = [&args[..], &["--permission-mode", "accept-edits", "exec", "greet"]].concat();
        // A terminal type is set, so only the pipe itself can be what turns colour off.
        let mut command = crate::suite::command(&workspace, &args);
        command.env("TERM", "xterm-256color").stdin(std::process::Stdio::null());
        crate::suite::Running::spawn(&mut command).finish("agent exec")
    })
    .await
    .unwrap();
    let (out, err) = (crate::suite::stdout(&output), crate::suite::stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(out, "All done.\n");
    assert!(!out.contains('\x1b') && !err.contains('\x1b'), "{err:?}");
    // The work is visible on stderr as plain text.
    assert!(err.contains("  +    println!(\"hello, world\");\n"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.rs")).unwrap(),
        "fn main() {\n    println!(\"hello, world\");\n}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_preview_is_capped_and_v_shows_all_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let content: String = (1..=80).map(|n| format!("line {n}\n")).collect();
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new(
            "call_w",
            "write_file",
            json!({"path": "new.txt", "content": content}),
        )]),
        Turn::text("Written."),
    ]))
    .await
    .unwrap();
    let workspace = dir.path().to_path_buf();
    let (at_prompt, viewed) = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, &[]);
        screen.type_text("write it\r");
        screen.wait_for("[v]iew all: ");
        let at_prompt = screen.contents();
        screen.type_text("v\r");
        // The line after the last one, so the screen holds the whole list, not a half-drawn end.
        screen.wait_for("+line 80\n");
        let viewed = screen.contents();
        // The question is asked again, and the answer still counts.
        screen.wait_until("the question again", |text| {
            text.trim_end().ends_with("[a]lways for this session:")
        });
        screen.type_text("y\r");
        screen.wait_for("Written.");
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        (at_prompt, viewed)
    })
    .await
    .unwrap();
    assert!(at_prompt.contains("? write_file new.txt (new file, 80 lines)"), "{at_prompt}");
    assert!(at_prompt.contains("+line 1\n") && !at_prompt.contains("+line 80"), "{at_prompt}");
    assert!(at_prompt.contains("more lines (v shows all)"), "{at_prompt}");
    assert!(viewed.contains("+line 79\n  +line 80\n"), "{viewed}");
    let written = std::fs::read_to_string(dir.path().join("new.txt")).unwrap();
    assert_eq!(written.lines().count(), 80);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_approval_names_server_and_tool_and_a_denied_call_never_reaches_it() {
    let Some(python) = crate::suite::mcp::python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let markers = tempfile::tempdir().unwrap();
    let table = crate::suite::mcp::py_table(&python, markers.path(), "required = true\n");
    let config = crate::suite::mcp::config(dir.path(), &table);
    let server = ScriptedServer::start(Script::new([
        Turn::tool_calls([ScriptedCall::new("call_m", "mcp__py__touch", json!({"name": "m"}))]),
        Turn::text("Not touched."),
    ]))
    .await
    .unwrap();
    let workspace = dir.path().to_path_buf();
    let at_prompt = tokio::task::spawn_blocking(move || {
        let url = server.url();
        let args = ["--base-url", &url, "--model", "m", "--api", "chat", "--config", &config];
        let mut screen = Screen::agent(&workspace, &[&args[..], &["chat"]].concat(), &[]);
        screen.wait_for("›");
        screen.type_text("touch it\r");
        screen.wait_for("allow? [y]es");
        let at_prompt = screen.contents();
        screen.type_text("n\r");
        screen.wait_for("Not touched.");
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        at_prompt
    })
    .await
    .unwrap();
    assert!(at_prompt.contains("? mcp__py__touch (MCP server `py`, tool `touch`)"), "{at_prompt}");
    assert!(at_prompt.contains("  {\n    \"name\": \"m\"\n  }\n"), "{at_prompt}");
    assert!(!markers.path().join("m").exists(), "the denied call reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_is_rendered_and_status_names_the_model_and_the_tokens() {
    let answer = "**Done.** The greeting now names the world:\n\n```rust\nfn main() {\n    println!(\"hello, world\");\n}\n```\n\n- run `cargo test`\n- commit\n";
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Script::new([Turn::text(answer)])).await.unwrap();
    let workspace = dir.path().to_path_buf();
    let (answered, status) = tokio::task::spawn_blocking(move || {
        let mut screen = repl(&workspace, &server, &[]);
        screen.type_text("greet the world\r");
        screen.wait_for("• commit");
        let answered = screen.contents();
        screen.type_text("/status\r");
        screen.wait_for("this session");
        let status = screen.contents();
        screen.type_text("/exit\r");
        assert!(screen.wait_exit(), "{}", screen.contents());
        (answered, status)
    })
    .await
    .unwrap();
    assert!(answered.contains("Done. The greeting now names the world:"), "{answered}");
    assert!(answered.contains("        println!(\"hello, world\");"), "indented code: {answered}");
    assert!(!answered.contains("**") && !answered.contains("```"), "{answered}");
    assert!(
        answered.contains("• run cargo test") || answered.contains("• run `cargo test`"),
        "{answered}"
    );
    assert!(status.contains("  model        m\n") || status.contains("model        m"), "{status}");
    assert!(status.contains("tokens       42 in"), "{status}");
}
