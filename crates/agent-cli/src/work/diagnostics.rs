//! The language-server lines an edit's observation ends with (docs/lsp.md), picked out of its
//! text so the terminal shows new errors under the edit's diff.

use crate::preview::{Block, Tone};

/// The lines agent-lsp's report begins with; an indented line after one of them is its detail.
const STARTS: &[&str] =
    &["This edit ", "An earlier edit of ", "Diagnostics for ", "No diagnostics for ", "It fixed "];

/// Adds the observation's diagnostics lines to `block`: new errors as errors, the rest dimmed.
pub(crate) fn push(block: &mut Block, output: &str) {
    let mut inside = false;
    for line in output.lines() {
        if STARTS.iter().any(|start| line.starts_with(start)) {
            inside = line.contains(" introduced ");
            block.push(if inside { Tone::Error } else { Tone::Dim }, line.to_owned());
        } else if inside && line.starts_with("  ") {
            block.push(Tone::Error, line.to_owned());
        } else {
            inside = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_report_out_of_an_edit_observation() {
        let output = "Edited a.py: 1 replacement at line 4 (+1 −1)\n     4→z: int = \"text\"\n\
                      This edit introduced 1 error in a.py (pyright-langserver):\n  4:10: Type mismatch\n";
        let mut block = Block::default();
        push(&mut block, output);
        let style = crate::preview::Style::plain(80);
        let shown = block.render(&style, None, "");
        assert_eq!(
            shown.trim_end(),
            "  This edit introduced 1 error in a.py (pyright-langserver):\n    4:10: Type mismatch"
        );
    }
}
