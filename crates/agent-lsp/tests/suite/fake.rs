//! Fake servers: one that never answers (the edit returns within its deadline saying pending),
//! one that forks 100 processes (stopped by the process limit; the session goes on).

use std::time::{Duration, Instant};

use agent_lsp::LspConfig;

use super::support::{Fixture, fake, group_alive};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_leaves_the_edit_pending_within_the_deadline() {
    for mode in ["silent", "quiet"] {
        let config = LspConfig { wait: Duration::from_millis(1500), ..LspConfig::default() };
        let fx = Fixture::new(fake(mode), config);
        let path = fx.file("a.fk", "one\n");
        let started = Instant::now();
        let text = fx.edit(&path, "two\n").await;
        let took = started.elapsed();
        assert!(took < Duration::from_millis(1700), "{mode}: {took:?}");
        assert_eq!(
            text,
            "Diagnostics for a.fk are pending (python3 did not answer within 1.5 s); the next edit of a.fk brings them.",
            "{mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_failing_is_off_for_the_session_with_one_notice() {
    let config = LspConfig {
        wait: Duration::from_secs(20),
        backoff: Duration::from_millis(10),
        ..LspConfig::default()
    };
    let fx = Fixture::new(fake("exit"), config);
    let path = fx.file("a.fk", "one\n");
    assert_eq!(
        fx.edit(&path, "two\n").await,
        "No diagnostics for a.fk: python3 failed 3 times; diagnostics for fake are off for this session."
    );
    assert_eq!(fx.edit(&path, "three\n").await, "");
    assert!(fx.session.server_pids().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_forking_100_processes_is_stopped_by_the_process_limit() {
    let config = LspConfig {
        wait: Duration::from_secs(20),
        max_processes: 16,
        cache_dir: Some(tempfile::tempdir().unwrap().keep()),
        ..LspConfig::default()
    };
    let cache = config.cache_dir.clone().unwrap();
    let fx = Fixture::new(fake("fork"), config);
    let path = fx.file("a.fk", "one\n");
    // It started (it answers initialize once its forks failed), and the edit came back.
    let text = fx.edit(&path, "two\n").await;
    assert!(text.is_empty() || text.contains("pending"), "{text}");
    let log = std::fs::read_to_string(cache.join("fake/server.log")).unwrap();
    let forked: u32 = log.trim().strip_prefix("forked ").unwrap().parse().unwrap();
    assert!(forked < 16, "{log}");
    let pids = fx.session.server_pids().await;
    let members = agent_test_support::process_group(pids[0]);
    assert!(members.len() <= 17, "{} processes", members.len());
    // The session goes on: the next edit is answered, and nothing is left after it.
    let _ = fx.edit(&path, "three\n").await;
    drop(fx);
    assert!(super::support::eventually(|| !group_alive(pids[0])).await);
    let _ = std::fs::remove_dir_all(cache);
}
