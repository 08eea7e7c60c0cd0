//! What a skill may and may not change about a session, through the binary: `allowed-tools`
//! narrows the turn it is invoked in (and never widens), and the REPL asks before a project's
//! skills reach the model.

use std::path::Path;

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::{Value, json};

use crate::suite::{exec::exec, screen::Screen, stderr};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs `exec 'use $reader'` where the project skill `reader` has `frontmatter`, and the model
/// calls `bash` to create `ran.txt` (allowed by the user's rule), then `read_file`. Returns
/// whether the command ran and the observations of the two calls.
async fn invoke(frontmatter: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".agents/skills/reader/SKILL.md"),
        &format!("---\nname: reader\ndescription: Reads files.\n{frontmatter}---\nRead it.\n"),
    );
    write(&dir.path().join("notes.txt"), "NOTES-TEXT\n");
    let turns = vec![
        Turn::tool_calls([ScriptedCall::new("c1", "bash", json!({"command": "touch ran.txt"}))]),
        Turn::tool_calls([ScriptedCall::new("c2", "read_file", json!({"path": "notes.txt"}))]),
        Turn::text("Done."),
    ];
    let args = [
        "--api",
        "chat",
        "--permission-mode",
        "dont-ask",
        "--allow",
        "Bash(touch ran.txt)",
        "exec",
        "use $reader on notes.txt",
    ];
    let (output, bodies) = exec(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let observation =
        |body: &Value| body["messages"].as_array().unwrap().last().unwrap().to_string();
    (dir.path().join("ran.txt").exists(), observation(&bodies[1]), observation(&bodies[2]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_tools_read_refuses_bash_in_the_turn_the_skill_is_invoked_in() {
    let (ran, bash, read) = invoke("allowed-tools: Read\n").await;
    assert!(!ran, "bash ran under `allowed-tools: Read`: {bash}");
    assert!(bash.contains("permission_denied"), "{bash}");
    assert!(bash.contains("not among the tools the skill `reader` allows"), "{bash}");
    // A tool the limit names still runs.
    assert!(read.contains("NOTES-TEXT"), "{read}");
    // The control: the same skill without the field limits nothing, and the user's rule runs
    // the command.
    let (ran, bash, _) = invoke("").await;
    assert!(ran, "{bash}");
}

/// Starts the REPL in a workspace with the project skill `greet`, answers the trust question
/// with `answer`, sends one prompt; returns the first request's system text.
fn trust_session(answer: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".agents/skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greets the team.\n---\nSay hello.\n",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(ScriptedServer::start(Script::new([Turn::text("Hi there.")])));
    let server = server.unwrap();
    let url = server.url();
    let args = ["--base-url", &url, "--model", "m", "--api", "chat", "chat"];
    let mut screen = Screen::agent(dir.path(), &args, &[]);
    screen.wait_for("use them in this workspace? [y/N]");
    assert!(screen.contents().contains("skill $greet: Greets the team."), "{}", screen.contents());
    screen.type_text(answer);
    screen.wait_for("›");
    screen.type_text("hello\r");
    screen.wait_for("Hi there.");
    screen.type_text("/exit\r");
    assert!(screen.wait_exit(), "{}", screen.contents());
    let requests = server.requests();
    requests[0].json()["messages"][0]["content"].as_str().unwrap().to_owned()
}

#[test]
fn the_repl_offers_a_project_skill_only_once_the_user_says_yes() {
    let declined = trust_session("n\r");
    assert!(!declined.contains("- greet: Greets the team."), "{declined}");
    let trusted = trust_session("y\r");
    assert!(trusted.contains("- greet: Greets the team."), "{trusted}");
}
