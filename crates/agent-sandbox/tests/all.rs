//! Integration tests of the OS sandbox against real processes, as one test binary: the sandbox
//! policies, the secret list and the background jobs. A test whose kernel feature is missing says
//! `SKIPPED: <reason>` on stderr, and fails instead under `AGENT_NO_SKIP=1`.

// Helpers outside `#[test]` functions unwrap too; clippy.toml only exempts the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite {
    mod jobs;
    mod proxy;
    mod proxy_names;
    mod sandbox;
    mod secrets;
}
