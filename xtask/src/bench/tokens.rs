//! `first_request.tokens`: what the first request of a fresh install carries before the
//! conversation (the tool schemas and the instructions, o200k), as the installed
//! `agent tools list --tokens --json` counts it: the same count the budget test
//! (`crates/agent-cli/tests/suite/token_budget.rs`) takes from a real request body. A language
//! server is configured so that `diagnostics` is offered, as on a machine where one is found.

use std::{path::Path, process::Command};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{Bins, Figure, progress};

/// The first request's budgets: every default tool, and `--tools read_file,grep,glob,edit_file,bash`.
pub(crate) const TARGET_ALL: f64 = 2_000.0;
pub(crate) const TARGET_FIVE: f64 = 999.0;

/// Adds `first_request.tokens` and `first_request.tokens.five_tools`.
pub(crate) fn measure(
    bins: &Bins,
    figures: &mut Vec<Figure>,
    scratch: &Path,
) -> anyhow::Result<()> {
    progress("tokens: `agent tools list --tokens` for a fresh install…");
    let workspace = scratch.join("ws");
    std::fs::create_dir_all(&workspace)?;
    let config = scratch.join("config.toml");
    std::fs::write(&config, "[lsp.python]\ncommand = [\"true\"]\nfile_types = [\"py\"]\n")?;
    for (name, only) in
        [("first_request.tokens", None), ("first_request.tokens.five_tools", Some(FIVE))]
    {
        let mut command = Command::new(&bins.agent);
        command.current_dir(&workspace).env_clear().env("HOME", scratch);
        command.arg("--config").arg(&config).args(["--model", "test-model"]);
        if let Some(names) = only {
            command.args(["--tools", names]);
        }
        let output = command.args(["tools", "list", "--tokens", "--json"]).output()?;
        if !output.status.success() {
            bail!("agent tools list failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        let list: Value = serde_json::from_slice(&output.stdout)?;
        let total = list["total"].as_f64().context("no total in `tools list --tokens --json`")?;
        figures.push(Figure::of(name, "tokens", vec![total]));
    }
    Ok(())
}

const FIVE: &str = "read_file,grep,glob,edit_file,bash";
