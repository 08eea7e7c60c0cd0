//! `skills.discovery_ms`: what finding, reading and validating 200 skills costs, as the release
//! `agent skills list --json` shows it: each run times the command in a workspace holding 200
//! skill folders and in an empty one, in turns, and the figure is the difference of each pair
//! (so starting the process is taken out). The model named has no vocabulary, so no BPE table is
//! loaded for the token column.

use std::{path::Path, process::Command, time::Instant};

use anyhow::bail;

use super::{Bins, Figure, Options, progress};

/// How many skills the workspace holds.
const SKILLS: usize = 200;

/// Adds `skills.discovery_ms`.
pub(crate) fn measure(
    bins: &Bins,
    options: &Options,
    figures: &mut Vec<Figure>,
    scratch: &Path,
) -> anyhow::Result<()> {
    progress(&format!("skills: `agent skills list` with {SKILLS} skills and with none…"));
    let (full, empty) = (scratch.join("full"), scratch.join("empty"));
    std::fs::create_dir_all(&empty)?;
    for i in 0..SKILLS {
        let name = format!("skill-{i:03}");
        let dir = full.join(".agents/skills").join(&name);
        std::fs::create_dir_all(dir.join("scripts"))?;
        // A body of a few kilobytes, as published skills have: the whole file is read.
        let body = "Follow these steps with care and report what you did.\n".repeat(60);
        let text = format!(
            "---\nname: {name}\ndescription: Handles task {i} of the team's work, with its \
             checklist and scripts.\nlicense: MIT\n---\n# {name}\n\n{body}"
        );
        std::fs::write(dir.join("SKILL.md"), text)?;
        std::fs::write(dir.join("scripts/run.sh"), "echo run\n")?;
    }
    let runs = if options.quick { 5 } else { 20 };
    let mut diffs = Vec::new();
    // The first two rounds bring the files and the binary into the page cache.
    for round in 0..runs + 2 {
        let with = list(bins, &full)?;
        let without = list(bins, &empty)?;
        if round >= 2 {
            diffs.push(with - without);
        }
    }
    figures.push(Figure::of("skills.discovery_ms", "ms", diffs));
    Ok(())
}

/// One `agent skills list --json` in `workspace`, in milliseconds.
fn list(bins: &Bins, workspace: &Path) -> anyhow::Result<f64> {
    let started = Instant::now();
    let output = Command::new(&bins.agent)
        // A model without a vocabulary: the token column is then an estimate, and the figure is
        // discovery alone, not loading a BPE table (which a session has loaded anyway).
        .args(["--model", "bench-model", "skills", "list", "--json"])
        .current_dir(workspace)
        .env("HOME", workspace)
        .env("XDG_CONFIG_HOME", workspace.join(".config"))
        .output()?;
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    if !output.status.success() {
        bail!("agent skills list failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(elapsed)
}
