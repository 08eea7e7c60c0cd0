//! Test helpers shared by the workspace's test suites: how a test that cannot run on this machine
//! says so.
//!
//! A test that needs a kernel feature (Landlock, seccomp, user namespaces) or a peer program (jq,
//! python3, the MCP peers) calls [`skipped`] when it is missing. The skip is printed in a passing
//! run; where the machine is known to have everything (CI sets `AGENT_NO_SKIP=1`), it is a failure
//! instead, so a lost feature or peer can never pass silently.
//!
//! This crate is a dev-dependency only (tidy checks that no crate ships with it).

use std::io::Write as _;

/// The switch that turns every skip into a failure.
pub const NO_SKIP: &str = "AGENT_NO_SKIP";

/// The switch's old name, still honoured: it once governed only the sandbox tests.
pub const NO_SKIP_ALIAS: &str = "AGENT_REQUIRE_SANDBOX";

/// Whether skips are failures here: `AGENT_NO_SKIP` (or its alias `AGENT_REQUIRE_SANDBOX`) is set.
pub fn no_skip() -> bool {
    [NO_SKIP, NO_SKIP_ALIAS].iter().any(|name| std::env::var_os(name).is_some())
}

/// Says why a check is skipped, on the real stderr: libtest captures `println!`, and a skip must
/// be visible in a passing run. Under [`no_skip`] the skip fails the test instead.
#[track_caller]
pub fn skipped(reason: &str) {
    assert!(!no_skip(), "{NO_SKIP} is set but this check cannot run: {reason}");
    let _ = writeln!(std::io::stderr(), "SKIPPED: {reason}");
}
