//! Entry points for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): a custom command read
//! from a file's text, and its expansion under a chosen limit of repeated substitution, so a
//! fuzzer reaches the refusal with small inputs.

use std::path::PathBuf;

use crate::commands::{Command, ExpansionTooLarge, Unusable};

/// The command a file holding `text` defines (named `fuzz`), as discovery reads it.
pub fn command(text: &str) -> Result<Command, Unusable> {
    crate::commands::parse("fuzz".to_owned(), text, PathBuf::from("fuzz.md"), true)
}

/// [`Command::expand`] with `limit` bytes of repeated substitution in place of
/// [`crate::commands::MAX_REPEATED_BYTES`].
pub fn expand_within(
    command: &Command,
    args: &str,
    limit: usize,
) -> Result<String, ExpansionTooLarge> {
    command.expand_within(args, limit)
}
