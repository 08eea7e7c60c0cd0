//! Integration tests of the built-in tools, run on temporary workspaces.

// Fixture helpers outside `#[test]` functions are test code too: panicking on a broken fixture is
// the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Every test that needs a kernel feature or a runtime skips through `agent_test_support::skipped`:
// under `AGENT_NO_SKIP` a skip fails.
mod suite;
