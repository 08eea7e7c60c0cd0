//! One test binary for the whole crate keeps link time down.

// Many input types exist only for their schemas, so their fields are never read.
#![allow(dead_code)]

mod args;
mod rules;
mod strict_errors;
mod strict_snapshots;
