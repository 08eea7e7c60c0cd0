//! Integration tests of the registry, executor, batch, output cap and permission policy, as one
//! test binary.

// Helpers outside `#[test]` functions unwrap too; clippy.toml only exempts the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite {
    mod batch;
    mod children;
    mod compaction;
    mod errors;
    mod executor;
    mod jobs;
    mod native;
    mod permission;
    mod plan;
    mod project_doc;
    mod proptest;
    mod reexports;
    mod snapshots;
    mod support;
}
