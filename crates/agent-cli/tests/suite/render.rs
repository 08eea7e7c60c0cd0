//! Rendered answers: Markdown on a terminal, the model's text unchanged through a pipe.

use std::path::Path;

use agent_model::scripted::{Script, ScriptedServer, Turn};

use crate::suite::{Running, command, stderr, stdout};

/// An answer using most of what the renderer handles.
const ANSWER: &str = "**Done.** I changed `main.rs`:\n\n```rust\nfn main() {\n    \
                      println!(\"hello, world\");\n}\n```\n\n## Next\n\n1. run *the tests*\n2. \
                      commit\n\n| file | change |\n|---|---|\n| main.rs | greeting |\n";

/// Runs `agent exec` against a scripted server answering [`ANSWER`], with `env` set; returns
/// the output.
async fn exec(workspace: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let server = ScriptedServer::start(Script::new([Turn::text(ANSWER)])).await.unwrap();
    let url = server.url();
    let mut args = vec!["--base-url", &url, "--model", "m", "--api", "chat"];
    args.extend(extra);
    args.extend(["exec", "change the greeting"]);
    let mut command = command(workspace, &args);
    command.stdin(std::process::Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || Running::spawn(&mut command).finish("agent exec"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_through_a_pipe_prints_the_markdown_as_the_model_wrote_it() {
    for stream in [&[][..], &["--no-stream"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let output = exec(dir.path(), stream, &[]).await;
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        // Byte for byte: the answer, and the newline that ends the run's output.
        assert_eq!(stdout(&output), format!("{ANSWER}\n"));
        assert!(!output.stdout.contains(&0x1b), "an escape code reached the pipe");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_rendering_shows_no_markers_and_no_colour_with_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("AGENT_RENDER", "markdown"), ("NO_COLOR", "1"), ("COLUMNS", "60")];
    let output = exec(dir.path(), &[], &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(!output.stdout.contains(&0x1b), "NO_COLOR output holds an escape code: {out}");
    for marker in ["**", "```", "## ", "|---"] {
        assert!(!out.contains(marker), "{marker} left in the rendered answer:\n{out}");
    }
    assert!(out.starts_with("Done. I changed `main.rs`:\n\n    fn main() {\n"), "{out}");
    assert!(out.contains("1. run the tests\n2. commit"), "{out}");
    assert!(out.contains("main.rs │ greeting"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_rendering_styles_with_escape_codes() {
    let dir = tempfile::tempdir().unwrap();
    let output = exec(dir.path(), &[], &[("AGENT_RENDER", "markdown")]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.contains("\u{1b}[1mDone.\u{1b}[0m"), "{out:?}");
    assert!(!out.contains("**") && !out.contains("```"), "{out}");
}
