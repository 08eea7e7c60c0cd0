//! apply_patch's grammar.

use agent_tools::fuzz::parse_patch;

/// A patch the grammar accepts, printed in the canonical form, parses to the same plan, and that
/// form prints to itself.
pub(super) fn round_trip(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Some(plan) = parse_patch(text) else { return };
    let printed = plan.print();
    let again = parse_patch(&printed);
    assert_eq!(again.as_ref(), Some(&plan), "the printed patch:\n{printed}");
    assert_eq!(again.map(|plan| plan.print()).as_deref(), Some(printed.as_str()));
}
