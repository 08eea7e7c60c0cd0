//! How a sandbox test that cannot run on this kernel says so, shared by the sandbox test binaries.

use std::io::Write as _;

/// Says why a check is skipped, on the real stderr: libtest captures `println!`, and a skip must
/// be visible in a passing run. Where the kernel is known to have every feature (CI sets
/// `AGENT_REQUIRE_SANDBOX=1`), a skip is a failure instead, so a lost feature can never pass
/// silently.
pub(crate) fn skipped(reason: &str) {
    assert!(
        std::env::var_os("AGENT_REQUIRE_SANDBOX").is_none(),
        "AGENT_REQUIRE_SANDBOX is set but this check cannot run: {reason}"
    );
    let _ = writeln!(std::io::stderr(), "SKIPPED: {reason}");
}
