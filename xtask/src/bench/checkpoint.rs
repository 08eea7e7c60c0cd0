//! The targets of the checkpoint figures (the example `checkpoint` of agent-checkpoints measures
//! them): a command that changes 3 files in a 50,000-file workspace, and a turn that writes nothing.

use super::Figure;

/// The target of a `checkpoint.*` figure, and whether it is met.
pub(crate) fn target(figure: &Figure) -> Option<(String, bool)> {
    let at_most = |limit: f64, text: &str| Some((text.to_owned(), figure.median <= limit));
    match figure.name.as_str() {
        // Two metadata walks of 50,000 files and three hashes: well under a model's latency.
        "checkpoint.command_scan_ms" => at_most(250.0, "≤ 250 ms"),
        // The three changed files' old and new content, a few hundred bytes.
        "checkpoint.bytes" => at_most(1_000.0, "≤ 1,000 bytes"),
        // One appended line: nothing a person could measure.
        "checkpoint.idle_turn_us" => at_most(1_000.0, "≤ 1 ms"),
        _ => None,
    }
}
