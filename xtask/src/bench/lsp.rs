//! `lsp.edit_to_diagnostics_ms` and `lsp.harness_share_ms`: an edit's wait for the errors it
//! introduced, against pyright from `scripts/peers/lsp/` (warm), and the part of it that is the
//! harness's own rather than the server's. Run by agent-lsp's `lsp_edit` example.

use super::{Bins, Figure};

/// Runs the example; without the peers it only leaves a note.
pub(super) fn run(
    bins: &Bins,
    quick: &[&str],
    figures: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    super::progress("running example lsp_edit (pyright, warm)…");
    super::run_example(bins, "lsp_edit", quick, &[], figures, notes)
}
