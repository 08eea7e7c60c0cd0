//! End-to-end tests of the `agent` binary: one test binary, one module per command.

// Helpers shared by the tests (not themselves `#[test]`s) fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
