//! Integration tests of the built-in tools, run on temporary workspaces.

// Fixture helpers outside `#[test]` functions are test code too: panicking on a broken fixture is
// the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// One skip helper for every test that needs a kernel feature or a runtime, shared with agent-exec:
// under `AGENT_REQUIRE_SANDBOX` a skip fails.
#[path = "../../agent-exec/tests/skip/mod.rs"]
mod skip;
mod suite;
