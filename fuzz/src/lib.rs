//! Fuzz targets for every parser at a trust boundary (docs/fuzzing.md).
//!
//! Each target is a plain `fn(&[u8])` that panics when a property fails: AFL++ runs it through
//! the harness (`src/main.rs`, `cargo xtask fuzz`), and `cargo test` replays the corpus under
//! `fuzz/corpus/<target>/` through the same function. The properties are the (a stream
//! split anywhere parses as the whole; a printed plan parses to the same plan; a truncated
//! transcript loads, dropping only the torn record; a frame over its cap is refused without
//! allocating it) and, where those do not fit, the one each target's doc comment names.

pub mod alloc;
pub mod cuts;
mod targets;

/// The allocator of every binary and test of this crate: the system's, with a record of the
/// largest single allocation (see [`alloc`]).
#[global_allocator]
static ALLOCATOR: alloc::Tracking = alloc::Tracking;

/// One fuzz target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Its name on the command line and its corpus folder.
    pub name: &'static str,
    /// The parser it drives, and the property it checks beyond "no panic".
    pub about: &'static str,
    /// Runs one input; panics when a property fails.
    pub run: fn(&[u8]),
}

/// Every target, most exposed first: the order `cargo xtask fuzz --list` prints.
pub const TARGETS: &[Target] = targets::ALL;

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}
