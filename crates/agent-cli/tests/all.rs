//! End-to-end tests of the `agent` binary: one test binary, one module per command.

// Helpers shared by the tests (not themselves `#[test]`s) fail loudly on purpose.
// The tests start the binary under test and `kill` as plain processes, outside any sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

// One skip helper for every test that needs a kernel feature, shared with agent-exec: under
// `AGENT_REQUIRE_SANDBOX` a skip fails.
#[path = "../../agent-exec/tests/skip/mod.rs"]
mod skip;
mod suite;
