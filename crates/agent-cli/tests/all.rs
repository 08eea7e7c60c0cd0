//! End-to-end tests of the `agent` binary: one test binary, one module per command.

// Helpers shared by the tests (not themselves `#[test]`s) fail loudly on purpose.
// The tests start the binary under test and `kill` as plain processes, outside any sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

// Every test that needs a kernel feature or a peer skips through `agent_test_support::skipped`:
// under `AGENT_NO_SKIP` a skip fails.
mod suite;
