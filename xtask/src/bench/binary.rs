//! The installed binary's size: `binary.size` against the 25 MiB budget, and
//! `binary.growth` against the size recorded here, so a change that adds more than 1 MiB fails its
//! row until it updates [`BASELINE_MB`] on purpose and says why in `docs/BENCHMARKS.md`.

use std::path::Path;

use anyhow::Context as _;

use super::Figure;

/// The budget for the installed `agent` (MiB, as `binary.size` is measured).
const BUDGET_MB: f64 = 25.0;

/// The size of the installed `agent` when it was last decided (MiB), with every default feature.
/// A change that grows the binary by more than [`ALLOWED_GROWTH_MB`] updates this number in the
/// same commit, with a line in `docs/BENCHMARKS.md` saying what the megabytes buy; a change that
/// shrinks it lowers the number so the guard stays tight.
const BASELINE_MB: f64 = 25.01;

/// How much a change may add before its row fails.
const ALLOWED_GROWTH_MB: f64 = 1.0;

/// `binary.size` and `binary.growth` of the installed binary at `agent`.
pub(crate) fn figures(agent: &Path) -> anyhow::Result<Vec<Figure>> {
    let bytes = std::fs::metadata(agent)
        .with_context(|| format!("reading the size of {}", agent.display()))?
        .len();
    // MiB, like the memory figures; the budget and the baseline are in the same unit.
    let size = bytes as f64 / (1024.0 * 1024.0);
    Ok(vec![
        Figure::of("binary.size", "MiB", vec![size]),
        Figure::of("binary.growth", "MiB", vec![size - BASELINE_MB]),
    ])
}

/// The target of a `binary.*` figure, and whether it is met.
pub(crate) fn target(figure: &Figure) -> Option<(String, bool)> {
    match figure.name.as_str() {
        "binary.size" => Some((format!("≤ {BUDGET_MB} MiB"), figure.median <= BUDGET_MB)),
        "binary.growth" => Some((
            format!(
                "≤ {ALLOWED_GROWTH_MB} MiB over the recorded {BASELINE_MB:.2} MiB \
                 (xtask/src/bench/binary.rs)"
            ),
            figure.median <= ALLOWED_GROWTH_MB,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, median: f64, met: bool) {
        let figure = Figure::of(name, "MiB", vec![median]);
        assert_eq!(target(&figure).map(|(_, ok)| ok), Some(met), "{name} = {median}");
    }

    #[test]
    fn growth_over_one_megabyte_fails_until_the_baseline_moves() {
        check("binary.growth", 0.99, true);
        check("binary.growth", -3.0, true);
        check("binary.growth", 1.01, false);
        check("binary.size", BUDGET_MB, true);
        check("binary.size", BUDGET_MB + 0.01, false);
    }
}
