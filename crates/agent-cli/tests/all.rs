//! End-to-end tests of the `agent` binary: one test binary, one module per command.

mod suite;
