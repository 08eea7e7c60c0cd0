//! Integration tests of the built-in tools, run on temporary workspaces.

// Fixture helpers outside `#[test]` functions are test code too: panicking on a broken fixture is
// the point, and skipped cases say so on stdout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod suite;
