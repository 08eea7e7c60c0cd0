//! Integration tests of the registry, executor, batch, output cap and permission policy, as one
//! test binary.

mod suite {
    mod batch;
    mod errors;
    mod executor;
    mod permission;
    mod proptest;
    mod snapshots;
    mod support;
}
