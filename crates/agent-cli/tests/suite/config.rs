//! Configuration is never silently ignored: a named config file that does not exist, a limit out
//! of range and a workspace that cannot be one are refused before anything starts (exit 2), each
//! said once, in plain words.

use std::path::Path;

use agent_model::scripted::Turn;

use crate::suite::{agent, command, exec::exec, stderr};

/// Runs `args` against a scripted server that must never be asked; the output.
async fn refused(dir: &Path, args: &[&str]) -> std::process::Output {
    let (output, bodies) = exec(dir, vec![Turn::text("never")], args).await;
    assert!(bodies.is_empty(), "the model was called: {bodies:?}");
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_config_file_is_an_error_for_every_command_but_mcp_add() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo").join("config.toml");
    let path = missing.to_str().unwrap();
    let said = format!("agent: the config file {path} (named by --config) does not exist\n");
    for args in [
        vec!["--config", path, "exec", "hi"],
        vec!["--config", path, "chat"],
        vec!["--config", path, "tools", "list"],
        vec!["--config", path, "tools", "call", "list_dir", "{}"],
        vec!["--config", path, "mcp", "list"],
        vec!["--config", path, "mcp", "get", "x"],
        vec!["--config", path, "mcp", "approve"],
        vec!["--config", path, "mcp", "serve"],
    ] {
        let output = refused(dir.path(), &args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert_eq!(stderr(&output), said, "{args:?}");
    }
    // `remove` has nothing to remove from a file that is not there, and says which file.
    let output = agent(dir.path(), &["--config", path, "mcp", "remove", "x"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(&format!("{path} does not exist")), "{}", stderr(&output));
    assert!(!missing.exists());
    // `add` is how the file comes to be.
    let output = agent(dir.path(), &["--config", path, "mcp", "add", "x", "--", "true"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(std::fs::read_to_string(&missing).unwrap().contains("[mcp_servers.x]"));
    // The default file may be missing: a first run needs none.
    let output = refused(dir.path(), &["tools", "list"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_out_of_range_exits_2_naming_the_key_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let path = config.to_str().unwrap();
    for (text, said) in [
        (
            "[limits]\ntool_timeout_secs = 0\n",
            "[limits] tool_timeout_secs = 0 is out of range: it takes 1 to 86400 seconds",
        ),
        (
            "[profiles.p.limits]\nbash_timeout_secs = 18446744073709551615\n",
            "[profiles.p.limits] bash_timeout_secs = 18446744073709551615 is out of range: it takes 1 to 86400 seconds",
        ),
        (
            "[limits]\nbash_timeout_secs = 900\n",
            "bash_timeout_secs = 900 is above bash_max_timeout_secs = 600",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let output = refused(dir.path(), &["--config", path, "exec", "hi"]).await;
        assert_eq!(output.status.code(), Some(2), "{text}: {}", stderr(&output));
        assert!(stderr(&output).contains(said), "{text}: {}", stderr(&output));
    }
    let output = refused(dir.path(), &["--max-turns", "0", "exec", "hi"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--max-turns = 0 is out of range: it takes 1 to 10000 turns"));
    // The control: values inside the ranges run.
    std::fs::write(&config, "[limits]\ntool_timeout_secs = 1\nbash_timeout_secs = 600\n").unwrap();
    let (output, _) =
        exec(dir.path(), vec![Turn::text("ok")], &["--config", path, "exec", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_that_cannot_be_one_is_named_in_plain_words_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "").unwrap();
    let missing = dir.path().join("nowhere");
    for (workspace, said) in [(&missing, "does not exist"), (&file, "is not a directory")] {
        let path = workspace.to_str().unwrap();
        for command in [&["exec", "hi"][..], &["tools", "list"], &["mcp", "list"]] {
            let mut args = vec!["--workspace", path];
            args.extend_from_slice(command);
            let output = refused(dir.path(), &args).await;
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
            assert_eq!(stderr(&output), format!("agent: workspace {path} {said}\n"), "{args:?}");
        }
    }
}

#[test]
fn an_error_and_its_cause_are_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data-is-a-file");
    std::fs::write(&data, "").unwrap();
    let output = command(dir.path(), &["--base-url", "http://127.0.0.1:9/v1", "exec", "hi"])
        .env("AGENT_DATA_DIR", &data)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
}
