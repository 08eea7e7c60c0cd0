//! The recorder and undo on a real directory, with the calls' writes made by the test itself.

use std::{collections::BTreeMap, os::unix::fs::PermissionsExt, path::Path};

use agent_core::Access;
use agent_sandbox::writes::{NotCovered, ScanRules};

use super::*;

fn ok<T, E: std::fmt::Display>(result: Result<T, E>) -> T {
    result.unwrap_or_else(|err| panic!("{err}"))
}

/// Every path under `root` but `.git`, with its content and mode.
fn tree(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let scan = TreeScan::take(root, &ScanRules { ignored_dirs: vec![], ..ScanRules::default() });
    scan.covered()
        .map(|(rel, meta)| {
            let bytes = std::fs::read(root.join(rel)).unwrap_or_default();
            (rel.to_path_buf(), (bytes, meta.mode))
        })
        .collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    session: PathBuf,
    checkpoints: Checkpoints,
}

fn fixture(files: &[(&str, &str)], cap: u64) -> Fixture {
    let dir = ok(tempfile::tempdir());
    let root = dir.path().join("work");
    let session = dir.path().join("session");
    for (path, text) in files {
        let path = root.join(path);
        ok(std::fs::create_dir_all(path.parent().unwrap_or(&root)));
        ok(std::fs::write(path, text));
    }
    let config = CheckpointConfig { store_cap: cap, ..CheckpointConfig::default() };
    let checkpoints = ok(Checkpoints::open(&session, &root, config));
    Fixture { root: ok(root.canonicalize()), session, checkpoints, _dir: dir }
}

impl Fixture {
    /// One call: `access` declared, then `write` done, as a tool or command would.
    fn call(&self, access: &[Access], runs: bool, write: impl FnOnce(&Path)) {
        let guard = self.checkpoints.before_call(access, runs, false);
        write(&self.root);
        if let Some(guard) = guard {
            self.checkpoints.after_call(guard);
        }
    }

    fn undo(&self, id: u32, options: UndoOptions) -> UndoReport {
        let mut store = ok(Store::open(&self.session, DEFAULT_STORE_CAP));
        ok(undo(&mut store, &self.root, id, options))
    }
}

fn command() -> Vec<Access> {
    vec![Access::Command { line: "…".into(), workdir: None }]
}

#[test]
fn a_turn_of_edits_and_commands_is_undone_exactly_and_redone() {
    let fx = fixture(
        &[("a.txt", "one\n"), ("b.txt", "two\n"), ("c.txt", "three\n"), ("d/e.sh", "echo\n")],
        DEFAULT_STORE_CAP,
    );
    let before = tree(&fx.root);
    ok(fx.checkpoints.begin_turn(0, "change things"));
    fx.call(&[Access::Write("a.txt".into())], false, |root| {
        ok(std::fs::write(root.join("a.txt"), "ONE\n"))
    });
    fx.call(&command(), true, |root| {
        ok(std::fs::write(root.join("a.txt"), "ONE again\n"));
        ok(std::fs::remove_file(root.join("b.txt")));
        ok(std::fs::rename(root.join("c.txt"), root.join("moved.txt")));
        ok(std::fs::create_dir(root.join("new")));
        ok(std::fs::write(root.join("new/file"), "new\n"));
        ok(std::fs::set_permissions(root.join("d/e.sh"), std::fs::Permissions::from_mode(0o755)));
    });
    let after = tree(&fx.root);
    assert_ne!(before, after);
    let report = fx.undo(1, UndoOptions::default());
    assert_eq!(tree(&fx.root), before, "{report:#?}");
    assert!(report.conflicts.is_empty());
    assert_eq!(report.renamed_back, [(PathBuf::from("moved.txt"), PathBuf::from("c.txt"))]);
    assert_eq!(
        report.removed,
        [PathBuf::from("moved.txt"), PathBuf::from("new/file"), PathBuf::from("new")]
    );
    let redo = fx.undo(ok(report.recorded_as.ok_or("no undo record")), UndoOptions::default());
    assert_eq!(tree(&fx.root), after, "{redo:#?}");
}

#[test]
fn a_path_changed_after_the_turn_is_a_conflict_until_forced() {
    let fx = fixture(&[("a.txt", "one\n")], DEFAULT_STORE_CAP);
    ok(fx.checkpoints.begin_turn(0, "edit"));
    fx.call(&[Access::Write("a.txt".into())], false, |root| {
        ok(std::fs::write(root.join("a.txt"), "agent\n"))
    });
    ok(std::fs::write(fx.root.join("a.txt"), "user\n"));
    let report = fx.undo(1, UndoOptions::default());
    assert_eq!(report.conflicts.len(), 1);
    assert!(report.conflicts[0].diff.contains("-agent\n+user\n"), "{}", report.conflicts[0].diff);
    assert_eq!(ok(std::fs::read_to_string(fx.root.join("a.txt"))), "user\n");
    let dry = fx.undo(1, UndoOptions { dry_run: true, force: true });
    assert_eq!(dry.restored, [PathBuf::from("a.txt")]);
    assert_eq!(ok(std::fs::read_to_string(fx.root.join("a.txt"))), "user\n");
    fx.undo(1, UndoOptions { dry_run: false, force: true });
    assert_eq!(ok(std::fs::read_to_string(fx.root.join("a.txt"))), "one\n");
}

#[test]
fn a_turn_past_the_cap_records_what_fits_and_names_the_rest() {
    let fx = fixture(&[("small", "s"), ("large", &"x".repeat(64))], 40);
    ok(fx.checkpoints.begin_turn(0, "write"));
    fx.call(&command(), true, |root| {
        ok(std::fs::write(root.join("small"), "S"));
        ok(std::fs::write(root.join("large"), "y".repeat(64)));
    });
    let store = ok(Store::open(&fx.session, 40));
    assert!(store.used() <= 40, "{}", store.used());
    let record = ok(store.record(1));
    assert_eq!(
        record.changes.iter().map(|c| c.path.as_path()).collect::<Vec<_>>(),
        [Path::new("small")]
    );
    assert!(
        record
            .not_covered
            .iter()
            .any(|s| s.path == Path::new("large")
                && matches!(s.why, NotCovered::OverCap { cap: 40 })),
        "{record:#?}"
    );
}

#[test]
fn a_turn_that_writes_nothing_leaves_no_record_and_nothing_in_git() {
    let fx = fixture(&[("a", "a"), (".git/HEAD", "ref")], DEFAULT_STORE_CAP);
    ok(fx.checkpoints.begin_turn(0, "look"));
    fx.call(&[Access::Read("a".into())], false, |_| {});
    fx.call(&[Access::Write(".git/HEAD".into())], false, |_| {});
    let store = ok(Store::open(&fx.session, DEFAULT_STORE_CAP));
    let records = ok(store.records());
    assert!(records.iter().all(|r| r.changes.is_empty()), "{records:#?}");
    assert_eq!(ok(std::fs::read_to_string(fx.root.join(".git/HEAD"))), "ref");
}

#[test]
fn a_background_write_after_its_call_is_named_in_the_next_turn() {
    let fx = fixture(&[("a.txt", "one\n"), ("b.txt", "two\n")], DEFAULT_STORE_CAP);
    ok(fx.checkpoints.begin_turn(0, "start a job"));
    fx.call(&command(), true, |root| ok(std::fs::write(root.join("a.txt"), "job started\n")));
    // The job goes on after its call returned: it writes, creates and deletes with no call running.
    ok(std::fs::write(fx.root.join("a.txt"), "job finished\n"));
    ok(std::fs::write(fx.root.join("late.txt"), "late\n"));
    ok(std::fs::remove_file(fx.root.join("b.txt")));
    ok(fx.checkpoints.begin_turn(10, "next"));
    fx.call(&command(), true, |root| ok(std::fs::write(root.join("c.txt"), "c\n")));
    let store = ok(Store::open(&fx.session, DEFAULT_STORE_CAP));
    let records = ok(store.records());
    let second = records.iter().find(|r| r.turn == 2).unwrap_or_else(|| panic!("{records:#?}"));
    let outside: Vec<&Path> = second
        .not_covered
        .iter()
        .filter(|s| s.why == NotCovered::OutsideCall)
        .map(|s| s.path.as_path())
        .collect();
    assert_eq!(outside, [Path::new("a.txt"), Path::new("b.txt"), Path::new("late.txt")]);
    // The command's own write is covered as usual, and nothing the job wrote is claimed as it.
    let changed: Vec<&Path> = second.changes.iter().map(|c| c.path.as_path()).collect();
    assert_eq!(changed, [Path::new("c.txt")]);
}

#[test]
fn writes_made_by_calls_are_not_named_as_outside_any_call() {
    let fx = fixture(&[("a.txt", "one\n")], DEFAULT_STORE_CAP);
    ok(fx.checkpoints.begin_turn(0, "edit then run"));
    fx.call(&command(), true, |root| ok(std::fs::write(root.join("a.txt"), "two\n")));
    fx.call(&[Access::Write("a.txt".into())], false, |root| {
        ok(std::fs::write(root.join("a.txt"), "three\n"))
    });
    fx.call(&command(), true, |root| ok(std::fs::write(root.join("b.txt"), "b\n")));
    let store = ok(Store::open(&fx.session, DEFAULT_STORE_CAP));
    let records = ok(store.records());
    assert!(records.iter().all(|r| r.not_covered.is_empty()), "{records:#?}");
}
