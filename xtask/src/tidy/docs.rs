//! The docs checked against the code they describe: the list of CI steps that README.md and
//! docs/ARCHITECTURE.md quote, their crate tables against the crates of the workspace, and
//! ARCHITECTURE's table of allowed edges against `ALLOWED_EDGES`.
//!
//! Both drifted before these checks (three different lists of what CI runs; a crate table without
//! agent-mcp), so the docs now quote and tidy compares.

use std::{fs, path::Path};

use anyhow::Context;

use super::ALLOWED_EDGES;
use crate::ci;

/// The comment a doc puts on the line before a fenced block that quotes `cargo xtask ci --list`.
const CI_LIST_MARKER: &str = "<!-- cargo xtask ci --list -->";

/// The docs that quote the CI steps and name every crate.
const README: &str = "README.md";
const ARCHITECTURE: &str = "docs/ARCHITECTURE.md";

/// Checks README.md and docs/ARCHITECTURE.md against `ci --list` and the crates under `crates/`.
pub(super) fn check(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let members = crate_dirs(root)?;
    let steps = ci::list();
    for doc in [README, ARCHITECTURE] {
        let text = fs::read_to_string(root.join(doc)).with_context(|| format!("reading {doc}"))?;
        check_ci_quote(doc, &text, &steps, problems);
    }
    let readme = fs::read_to_string(root.join(README)).context("reading README.md")?;
    let named = crates_in_table(&section(&readme, "## Code organization"));
    check_crates(README, "the \"Code organization\" table", &named, &members, problems);
    let architecture =
        fs::read_to_string(root.join(ARCHITECTURE)).context("reading ARCHITECTURE")?;
    let named = crates_in_headings(&section(&architecture, "## Code map"));
    check_crates(ARCHITECTURE, "the code map", &named, &members, problems);
    let table = edge_table(&section(&architecture, "## Dependency diagram"));
    check_edge_table(&table, ALLOWED_EDGES, problems);
    Ok(())
}

/// The workspace members under `crates/` (the root manifest's `crates/*`): every folder there with
/// a `Cargo.toml`, by folder name.
fn crate_dirs(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root.join("crates")).context("reading crates/")? {
        let entry = entry?;
        if entry.path().join("Cargo.toml").is_file() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Checks that `text` (the document `doc`) quotes `steps` exactly in the fenced block after
/// `CI_LIST_MARKER`.
fn check_ci_quote(doc: &str, text: &str, steps: &str, problems: &mut Vec<String>) {
    let mut lines = text.lines().skip_while(|line| line.trim() != CI_LIST_MARKER);
    if lines.next().is_none() {
        problems.push(format!("{doc}: no `{CI_LIST_MARKER}` block quoting the CI steps"));
        return;
    }
    let opens = lines.next().is_some_and(|line| line.starts_with("```"));
    let quoted: Vec<&str> = lines.take_while(|line| !line.starts_with("```")).collect();
    let quoted = quoted.iter().map(|line| format!("{line}\n")).collect::<String>();
    if !opens || quoted != steps {
        let fenced = format!("```\n{steps}```");
        problems.push(format!(
            "{doc}: the block after `{CI_LIST_MARKER}` must be `cargo xtask ci --list`'s output:\n{fenced}"
        ));
    }
}

/// The lines of `text` from the first heading that starts with `heading` to the next heading of the
/// same level or higher.
fn section(text: &str, heading: &str) -> String {
    let level = heading.split(' ').next().map_or(0, str::len);
    let mut lines = text.lines().skip_while(|line| !line.starts_with(heading));
    let Some(first) = lines.next() else { return String::new() };
    let ends = |line: &&str| {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        hashes > 0 && hashes <= level && line[hashes..].starts_with(' ')
    };
    let mut out = format!("{first}\n");
    for line in lines.take_while(|line| !ends(line)) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The crates a markdown table names in its first column (``| `crates/NAME` |``).
fn crates_in_table(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| crate_name(line.strip_prefix("| `crates/")?)).collect()
}

/// The crates the code map gives a heading (``### `crates/NAME` ``).
fn crates_in_headings(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| crate_name(line.strip_prefix("### `crates/")?)).collect()
}

/// `NAME` from the rest of a ``crates/NAME` …`` mention.
fn crate_name(rest: &str) -> Option<String> {
    let (name, _) = rest.split_once('`')?;
    Some(name.trim_end_matches('/').to_owned())
}

/// The rows of ARCHITECTURE's edge table (`| crate | a, b |`, or `no internal crate …`): each crate
/// with the crates it may depend on.
fn edge_table(text: &str) -> Vec<(String, Vec<String>)> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, name, allowed, ..] = cells[..] else { continue };
        if !(name.starts_with("agent-") || name == "xtask") {
            continue;
        }
        let allowed = if allowed.starts_with("no internal crate") {
            Vec::new()
        } else {
            allowed.split(',').map(|dep| dep.trim().to_owned()).collect()
        };
        rows.push((name.to_owned(), allowed));
    }
    rows
}

/// Checks that ARCHITECTURE's edge table `table` says what `allowed` (tidy's `ALLOWED_EDGES`) says,
/// row for row, in any order.
fn check_edge_table(
    table: &[(String, Vec<String>)],
    allowed: &[(&str, &[&str])],
    problems: &mut Vec<String>,
) {
    let sorted = |deps: &[&str]| {
        let mut deps: Vec<String> = deps.iter().map(|dep| (*dep).to_owned()).collect();
        deps.sort();
        deps
    };
    for (name, deps) in allowed {
        let want = sorted(deps);
        match table.iter().find(|(row, _)| row == name) {
            None => problems.push(format!(
                "{ARCHITECTURE}: the edge table has no row for {name} (ALLOWED_EDGES: {})",
                shown(&want)
            )),
            Some((_, row)) => {
                let have = sorted(&row.iter().map(String::as_str).collect::<Vec<_>>());
                if have != want {
                    problems.push(format!(
                        "{ARCHITECTURE}: the edge table lets {name} depend on {}, ALLOWED_EDGES on {}",
                        shown(&have),
                        shown(&want)
                    ));
                }
            }
        }
    }
    for (name, _) in table {
        if !allowed.iter().any(|(crate_name, _)| crate_name == name) {
            problems.push(format!("{ARCHITECTURE}: the edge table has a row for {name}, which ALLOWED_EDGES does not know"));
        }
    }
}

/// A list of crates as the messages show it.
fn shown(deps: &[String]) -> String {
    if deps.is_empty() { "no internal crate".to_owned() } else { deps.join(", ") }
}

/// Checks that `named` (what `place` in `doc` names) is exactly the workspace's crates.
fn check_crates(
    doc: &str,
    place: &str,
    named: &[String],
    members: &[String],
    problems: &mut Vec<String>,
) {
    for member in members {
        if !named.contains(member) {
            problems
                .push(format!("{doc}: {place} does not name the workspace member crates/{member}"));
        }
    }
    for name in named {
        if !members.contains(name) {
            problems.push(format!(
                "{doc}: {place} names crates/{name}, which is not a workspace member"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEPS: &str = "fmt  cargo fmt\ntest  cargo test\n";

    #[track_caller]
    fn quote(text: &str, expect: &[&str]) {
        let mut problems = Vec::new();
        check_ci_quote("README.md", text, STEPS, &mut problems);
        let wrong = format!(
            "README.md: the block after `{CI_LIST_MARKER}` must be `cargo xtask ci --list`'s output:\n```\n{STEPS}```"
        );
        let expect: Vec<String> = expect.iter().map(|e| e.replace("WRONG", &wrong)).collect();
        assert_eq!(problems, expect);
    }

    #[test]
    #[rustfmt::skip]
    fn ci_steps_are_quoted_exactly() {
        quote("intro\n<!-- cargo xtask ci --list -->\n```\nfmt  cargo fmt\ntest  cargo test\n```\nafter\n", &[]);
        quote("<!-- cargo xtask ci --list -->\n```text\nfmt  cargo fmt\ntest  cargo test\n```\n", &[]);
        quote("<!-- cargo xtask ci --list -->\n```\nfmt  cargo fmt\n```\n", &["WRONG"]);
        quote("<!-- cargo xtask ci --list -->\n```\nfmt  cargo fmt\ntest  cargo test\nmore  cargo more\n```\n", &["WRONG"]);
        quote("<!-- cargo xtask ci --list -->\nfmt  cargo fmt\ntest  cargo test\n", &["WRONG"]);
        quote("```\nfmt  cargo fmt\ntest  cargo test\n```\n", &["README.md: no `<!-- cargo xtask ci --list -->` block quoting the CI steps"]);
    }

    #[track_caller]
    fn table(readme: &str, expect: &[&str]) {
        let members = ["agent-core".to_owned(), "agent-sandbox".to_owned()];
        let named = crates_in_table(&section(readme, "## Code organization"));
        let mut problems = Vec::new();
        check_crates(README, "the table", &named, &members, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    #[rustfmt::skip]
    fn readme_table_names_every_crate() {
        table("## Code organization\n\n| crate | owns |\n|---|---|\n| `crates/agent-core` | words |\n| `crates/agent-sandbox` | the OS |\n| `xtask` | tasks |\n", &[]);
        table("## Code organization\n\n| `crates/agent-core` | words |\n\n## Next\n| `crates/agent-sandbox` | elsewhere |\n", &["README.md: the table does not name the workspace member crates/agent-sandbox"]);
        table("## Code organization\n\n| `crates/agent-core` | a |\n| `crates/agent-sandbox` | b |\n| `crates/agent-gone` | c |\n", &["README.md: the table names crates/agent-gone, which is not a workspace member"]);
        table("no such section\n| `crates/agent-core` | a |\n", &["README.md: the table does not name the workspace member crates/agent-core", "README.md: the table does not name the workspace member crates/agent-sandbox"]);
    }

    #[track_caller]
    fn code_map(architecture: &str, expect: &[&str]) {
        let members = ["agent-core".to_owned(), "agent-sandbox".to_owned()];
        let named = crates_in_headings(&section(architecture, "## Code map"));
        let mut problems = Vec::new();
        check_crates(ARCHITECTURE, "the code map", &named, &members, &mut problems);
        assert_eq!(problems, expect);
    }

    #[track_caller]
    fn edges(architecture: &str, expect: &[&str]) {
        const ALLOWED: &[(&str, &[&str])] =
            &[("agent-core", &[]), ("agent-exec", &["agent-core", "agent-sandbox"])];
        let table = edge_table(&section(architecture, "## Dependency diagram (enforced)"));
        let mut problems = Vec::new();
        check_edge_table(&table, ALLOWED, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    #[rustfmt::skip]
    fn edge_table_says_what_tidy_allows() {
        edges("## Dependency diagram (enforced)\n\n| crate | may depend on |\n|---|---|\n| agent-core | no internal crate |\n| agent-exec | agent-sandbox, agent-core |\n", &[]);
        edges("## Dependency diagram (enforced)\n\n| agent-core | no internal crate (and more) |\n| agent-exec | agent-core |\n", &["docs/ARCHITECTURE.md: the edge table lets agent-exec depend on agent-core, ALLOWED_EDGES on agent-core, agent-sandbox"]);
        edges("## Dependency diagram (enforced)\n\n| agent-exec | agent-core, agent-sandbox |\n| agent-gone | no internal crate |\n", &["docs/ARCHITECTURE.md: the edge table has no row for agent-core (ALLOWED_EDGES: no internal crate)", "docs/ARCHITECTURE.md: the edge table has a row for agent-gone, which ALLOWED_EDGES does not know"]);
    }

    #[test]
    #[rustfmt::skip]
    fn code_map_names_every_crate() {
        code_map("## Code map\n\n### `crates/agent-core`\n\ntext\n\n### `crates/agent-sandbox`\n\n### `xtask`\n", &[]);
        code_map("## Code map\n\n### `crates/agent-core`\n\n## Dependency diagram\n\n### `crates/agent-sandbox`\n", &["docs/ARCHITECTURE.md: the code map does not name the workspace member crates/agent-sandbox"]);
    }
}
