//! pyright: a new type error beside an unrelated old one, its fix, a no-op edit, a crash and
//! restart, and no server left after the session.

use super::support::{Fixture, eventually, group_alive, peer_bin, server};

const BEFORE: &str = "def f(x: int) -> int:\n    return x\n\n\ny: int = undefined_name\n";
const BROKEN: &str =
    "def f(x: int) -> int:\n    return x\n\nz: int = \"text\"\n\ny: int = undefined_name\n";
const FIXED: &str =
    "def f(x: int) -> int:\n    return x\n\nz: int = 3\n\ny: int = undefined_name\n";

fn fixture() -> Option<Fixture> {
    let program = peer_bin("pyright-langserver")?;
    let config = server("python", vec![program, "--stdio".into()], &["py"]);
    Some(Fixture::new(config, Fixture::patient()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_reports_only_the_new_error_then_the_fix_then_nothing() {
    let Some(fx) = fixture() else { return };
    let path = fx.file("a.py", BEFORE);
    let text = fx.edit(&path, BROKEN).await;
    insta::assert_snapshot!("pyright_introduced", text);
    assert_eq!(
        fx.edit(&path, FIXED).await,
        "This edit fixed 1 error in a.py (pyright-langserver); 1 left."
    );
    assert_eq!(fx.edit(&path, FIXED).await, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_killed_mid_session_restarts_and_nothing_outlives_the_session() {
    let Some(fx) = fixture() else { return };
    let path = fx.file("a.py", BEFORE);
    assert!(fx.edit(&path, BROKEN).await.contains("introduced 1 error"));
    let pids = fx.session.server_pids().await;
    assert_eq!(pids.len(), 1);
    // The crash: the whole group dies, as with the OOM killer.
    let status = std::process::Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{}", pids[0])])
        .status();
    assert!(status.unwrap().success());
    let gone = eventually(|| !group_alive(pids[0])).await;
    assert!(gone, "{:?}", agent_test_support::process_group(pids[0]));
    assert_eq!(
        fx.edit(&path, FIXED).await,
        "This edit fixed 1 error in a.py (pyright-langserver); 1 left."
    );
    let restarted = fx.session.server_pids().await;
    assert!(restarted.len() == 1 && restarted != pids, "{restarted:?}");
    assert!(group_alive(restarted[0]));
    drop(fx);
    assert!(eventually(|| !group_alive(restarted[0])).await, "the server outlived the session");
}

/// A file a command rewrote is checked after the command: its new error is the command's, a
/// rewrite of the same length right after the last one is still seen (the metadata cannot tell
/// them apart), and a look with nothing changed says nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_a_command_rewrote_is_reported_as_the_commands_change() {
    let Some(fx) = fixture() else { return };
    let path = fx.file("a.py", BEFORE);
    assert!(fx.edit(&path, BROKEN).await.contains("introduced 1 error"));
    // As a command would: the file changes with no edit tool involved.
    std::fs::write(&path, FIXED).unwrap();
    assert_eq!(
        fx.session.after_command().await,
        "This command fixed 1 error in a.py (pyright-langserver); 1 left."
    );
    // A rewrite of the same length that a coarse clock stamps with the same time: only the
    // content can tell, and the last read was too soon after the last write to trust the time.
    let same_length = FIXED.replace("z: int = 3", "z: str = 3");
    assert_eq!(same_length.len(), FIXED.len());
    let stamped = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, &same_length).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(stamped).unwrap();
    let text = fx.session.after_command().await;
    assert!(text.starts_with("This command introduced 1 error in a.py"), "{text}");
    assert!(text.contains("\"Literal[3]\" is not assignable to declared type \"str\""), "{text}");
    assert_eq!(fx.session.after_command().await, "");
    // A deleted file is closed without a word.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(fx.session.after_command().await, "");
}
