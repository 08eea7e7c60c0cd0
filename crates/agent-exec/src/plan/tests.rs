//! The plan's rules: ids, one item in progress, replaces that may not drop unfinished items,
//! completed items kept, and the log a resumed session reads back.

use super::*;

fn replace(items: &[(&str, PlanStatus)]) -> PlanUpdate {
    let list = items
        .iter()
        .map(|(text, status)| ReplaceItem { id: None, text: (*text).into(), status: *status })
        .collect();
    PlanUpdate { replace: Some(list), ..PlanUpdate::default() }
}

fn ops(ops: Vec<PlanOp>) -> PlanUpdate {
    PlanUpdate { ops, ..PlanUpdate::default() }
}

fn check(plan: &Plan, update: PlanUpdate, expected: &str) -> Plan {
    match plan.apply(&update) {
        Ok(next) => {
            assert_eq!(next.checklist(), expected);
            next
        }
        Err(err) => {
            assert_eq!(err.to_string(), expected);
            plan.clone()
        }
    }
}

use PlanStatus::{Cancelled, Completed, InProgress, Pending};

#[test]
fn replace_gives_ids_and_keeps_them_by_text() {
    let plan = check(
        &Plan::default(),
        replace(&[("read", InProgress), ("fix", Pending)]),
        "[>] 1. read\n[ ] 2. fix\n",
    );
    check(&plan, replace(&[("read", Completed), ("fix", InProgress)]), "[x] 1. read\n[>] 2. fix\n");
}

#[test]
fn replace_dropping_an_unfinished_item_is_refused_naming_it() {
    let plan = check(
        &Plan::default(),
        replace(&[("read", Pending), ("fix", Pending)]),
        "[ ] 1. read\n[ ] 2. fix\n",
    );
    check(
        &plan,
        replace(&[("read", Completed)]),
        "the new list leaves out unfinished items: `2` (fix); a plan never drops an item silently: keep it in the list, or set its status to cancelled first",
    );
}

#[test]
fn finished_items_left_out_of_a_replace_are_kept() {
    let plan = check(
        &Plan::default(),
        replace(&[("read", Completed), ("fix", Pending)]),
        "[x] 1. read\n[ ] 2. fix\n",
    );
    check(
        &plan,
        replace(&[("fix", InProgress), ("test", Pending)]),
        "[x] 1. read\n[>] 2. fix\n[ ] 3. test\n",
    );
}

#[test]
fn at_most_one_item_in_progress() {
    check(
        &Plan::default(),
        replace(&[("a", InProgress), ("b", InProgress)]),
        "more than one item would be in_progress (1, 2); finish or pause one first: at most one item is in_progress",
    );
}

#[test]
fn operations_add_set_and_remove_without_deleting() {
    let add = |text: &str| PlanOp::Add { id: None, text: text.into(), status: None };
    let plan = check(&Plan::default(), ops(vec![add("a"), add("b")]), "[ ] 1. a\n[ ] 2. b\n");
    let plan = check(
        &plan,
        ops(vec![
            PlanOp::SetStatus { id: "1".into(), status: Completed },
            PlanOp::Remove { id: "2".into() },
        ]),
        "[x] 1. a\n[-] 2. b\n",
    );
    check(
        &plan,
        ops(vec![PlanOp::Remove { id: "1".into() }]),
        "item `1` is completed and stays in the plan; completed items are never removed",
    );
    check(
        &plan,
        ops(vec![PlanOp::Remove { id: "9".into() }]),
        "no item has the id `9`; the plan's ids are: `1`, `2`",
    );
    assert_eq!(plan.progress(), (1, 1));
    let _ = Cancelled;
}

#[test]
fn an_empty_update_and_a_bad_text_are_refused() {
    check(
        &Plan::default(),
        PlanUpdate::default(),
        "the update changes nothing: give the whole list, or operations",
    );
    check(
        &Plan::default(),
        replace(&[(" ", Pending)]),
        "an item's text must be 1 to 300 characters (got 0)",
    );
}

#[test]
fn the_log_is_read_back_and_a_torn_line_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let book = PlanBook::open(dir.path());
    book.update(replace(&[("read", InProgress)])).unwrap();
    book.update(replace(&[("read", Completed), ("fix", Pending)])).unwrap();
    assert!(book.update(replace(&[])).is_err());
    let mut log = std::fs::OpenOptions::new().append(true).open(dir.path().join(PLAN_LOG)).unwrap();
    std::io::Write::write_all(&mut log, b"{\"schema_version\":1,\"se").unwrap();
    let again = PlanBook::open(dir.path());
    assert_eq!(again.snapshot(), book.snapshot());
    assert_eq!(again.seq(), 2);
    let pinned = again.pinned().unwrap();
    assert!(pinned.ends_with("[x] 1. read\n[ ] 2. fix\n"), "{pinned}");
}
