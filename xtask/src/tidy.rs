//! `cargo xtask tidy`: repository invariants, also run by `cargo test` so nobody has to remember.
//!
//! The allowed crate edges below are the dependency diagram of docs/ARCHITECTURE.md; changing one is
//! an architecture change and must update both. The size budget is in `size.rs`, the checks of the
//! docs against the workspace and `ci.rs` in `docs.rs`, the rule that keeps test switches out of
//! release builds in `switches.rs`.

mod assembly;
mod deps;
mod docs;
mod figures;
mod references;
mod size;
mod source;
mod switches;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};
use serde_json::Value;

/// Internal crates each product crate may depend on (normal and build dependencies).
const ALLOWED_EDGES: &[(&str, &[&str])] = &[
    ("agent-core", &[]),
    // The OS half: no internal crate at all.
    ("agent-sandbox", &[]),
    ("agent-exec", &["agent-core", "agent-sandbox"]),
    // Skills, agent definition files and command frontmatter: the runtime takes their results as
    // its own types (`ToolLimit`, `AgentDefinition`, a `SchemaTool`), so it carries no YAML parser.
    ("agent-skills", &["agent-core", "agent-exec"]),
    // The checkpoint store implements exec's `Checkpointer` and reads the sandbox's write scans.
    ("agent-checkpoints", &["agent-core", "agent-exec", "agent-sandbox"]),
    // The tools use the sandbox directly; the runtime only for the one builder call that registers
    // them with their job table and instructions (`agent_tools::BuiltinTools`).
    ("agent-tools", &["agent-core", "agent-sandbox", "agent-exec"]),
    ("agent-model", &["agent-core"]),
    // MCP tools are registry tools, the MCP server exposes an executor, and a stdio server is a
    // child process started by the sandbox's `spawn_service`.
    ("agent-mcp", &["agent-core", "agent-exec", "agent-sandbox"]),
    // The LSP client implements agent-core's edit observer and its diagnostics tool, and runs
    // each language server under the sandbox (`spawn_sandboxed_service`).
    ("agent-lsp", &["agent-core", "agent-sandbox"]),
    // The ACP agent maps the loop's events and approvals onto the protocol; the binary builds
    // its sessions, so it names no model, tool or MCP client.
    ("agent-acp", &["agent-core", "agent-exec"]),
    // The one assembly of a session: configuration to a running agent with the built-in tools,
    // a model client, MCP and LSP servers. Every front end opens its sessions here.
    (
        "agent-session",
        &[
            "agent-core",
            "agent-exec",
            "agent-tools",
            "agent-model",
            "agent-mcp",
            "agent-lsp",
            "agent-skills",
            "agent-checkpoints",
        ],
    ),
    (
        "agent-cli",
        &[
            "agent-core",
            "agent-sandbox",
            "agent-exec",
            "agent-tools",
            "agent-model",
            "agent-mcp",
            "agent-lsp",
            "agent-acp",
            "agent-session",
            "agent-skills",
            "agent-checkpoints",
        ],
    ),
    // Test helpers: a dev-dependency only. No crate may ship with it (no list above names it).
    ("agent-test-support", &[]),
    // The fuzz targets (docs/fuzzing.md): every parser at a trust boundary, through each crate's
    // `fuzz` feature. Never shipped, and no crate depends on it.
    (
        "agent-fuzz",
        &[
            "agent-core",
            "agent-sandbox",
            "agent-exec",
            "agent-tools",
            "agent-model",
            "agent-mcp",
            "agent-lsp",
            "agent-acp",
            "agent-skills",
            "agent-session",
        ],
    ),
    ("xtask", &[]),
];

/// Crates that only a binary (agent-cli, xtask) may depend on.
const BINARY_ONLY: &[&str] = &["anyhow", "clap", "clap_complete", "tracing-subscriber"];
const LIBRARIES: &[&str] = &[
    "agent-core",
    "agent-sandbox",
    "agent-exec",
    "agent-tools",
    "agent-model",
    "agent-mcp",
    "agent-lsp",
    "agent-acp",
    "agent-session",
    "agent-skills",
    "agent-checkpoints",
    "agent-test-support",
];

/// Every problem found, as a readable line; empty when the tree is tidy.
pub(crate) fn check(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    check_sources(root, &mut problems)?;
    check_manifests(root, &mut problems)?;
    docs::check(root, &mut problems)?;
    figures::check(root, &mut problems)?;
    references::check_docs(root, &mut problems)?;
    deps::check_tree(root, &mut problems)?;
    Ok(problems)
}

/// Checks every `.rs` file: its `//!` header, its module layout, its size and its test switches.
fn check_sources(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for dir in ["crates", "xtask"] {
        collect_rs_files(&root.join(dir), &mut files)?;
    }
    let mut sizes = Vec::new();
    for file in files {
        let text =
            fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        if !text.trim_start_matches('\u{feff}').starts_with("//!") {
            problems.push(format!("{shown}: must begin with a `//!` line saying what it owns"));
        }
        // Modules are `foo.rs` beside `foo/`; integration test suites are the one exception,
        // since cargo would build `tests/suite.rs` as a test binary of its own.
        if file.file_name().is_some_and(|name| name == "mod.rs") && !shown.contains("/tests/") {
            problems.push(format!("{shown}: use `foo.rs` beside `foo/` instead of `foo/mod.rs`"));
        }
        source::check(&shown, &text, problems);
        assembly::check(&shown, &text, problems);
        references::check_source(&shown, &text, problems);
        switches::check(&shown, &text, problems);
        if let Some(lines) = size::lines_before_tests(&shown, &text) {
            sizes.push((shown, lines));
        }
    }
    size::check(&sizes, size::OVER_BUDGET, problems);
    Ok(())
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(()) };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        // Build output and snapshot folders hold no hand-written sources.
        if name == "target" || name == "snapshots" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type()?.is_dir() {
            collect_rs_files(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn check_manifests(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root)
        .output()
        .context("could not run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)?;
    let packages = metadata["packages"].as_array().context("cargo metadata: no packages")?;
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();

    for (crate_name, _) in ALLOWED_EDGES {
        if !members.contains(crate_name) {
            problems.push(format!("{crate_name}: expected workspace member is missing"));
        }
    }
    for package in packages {
        let name = package["name"].as_str().unwrap_or("?");
        let Some((_, allowed)) = ALLOWED_EDGES.iter().find(|(n, _)| *n == name) else {
            problems.push(format!(
                "{name}: not in the crate map; add it to ALLOWED_EDGES and docs/ARCHITECTURE.md"
            ));
            continue;
        };
        let deps: Vec<(&str, &str)> = package["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|dep| {
                (dep["name"].as_str().unwrap_or("?"), dep["kind"].as_str().unwrap_or("normal"))
            })
            .collect();
        check_edges(name, allowed, &deps, &members, problems);
        let manifest = package["manifest_path"].as_str().context("no manifest_path")?;
        let text = fs::read_to_string(manifest)?;
        check_manifest_text(name, &text, problems);
        deps::check_internal_edges(name, &text, problems);
    }
    let workspace = fs::read_to_string(root.join("Cargo.toml"))?;
    deps::check_internal_edges("the workspace", &workspace, problems);
    Ok(())
}

/// Checks one crate's dependencies (`(name, kind)` pairs from cargo metadata) against the map.
fn check_edges(
    name: &str,
    allowed: &[&str],
    deps: &[(&str, &str)],
    members: &[&str],
    problems: &mut Vec<String>,
) {
    for &(dep_name, kind) in deps {
        // Dev-dependencies may point sideways for tests; only shipped edges are checked.
        if kind == "dev" {
            continue;
        }
        if members.contains(&dep_name) && !allowed.contains(&dep_name) {
            problems
                .push(format!("{name} -> {dep_name}: edge not allowed by docs/ARCHITECTURE.md"));
        }
        if LIBRARIES.contains(&name) && BINARY_ONLY.contains(&dep_name) {
            problems.push(format!(
                "{name}: depends on {dep_name}, which only agent-cli and xtask may use"
            ));
        }
    }
}

/// Checks the parts of a manifest that `cargo metadata` does not report.
fn check_manifest_text(name: &str, text: &str, problems: &mut Vec<String>) {
    let mut section = "";
    let mut lints_inherited = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section == "[lints]" && line.replace(' ', "") == "workspace=true" {
            lints_inherited = true;
        }
        let in_deps = section.ends_with("dependencies]");
        if in_deps && line.starts_with("agent-") && !line.contains("workspace = true") {
            let dep = line.split(['.', ' ', '=']).next().unwrap_or(line);
            problems.push(format!("{name}: internal dependency {dep} must use `workspace = true`"));
        }
    }
    if !lints_inherited {
        problems.push(format!("{name}: Cargo.toml needs `[lints] workspace = true`"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_is_tidy() {
        let problems = check(&crate::project_root()).unwrap();
        assert!(problems.is_empty(), "tidy problems:\n{}", problems.join("\n"));
    }

    #[track_caller]
    fn check_text(manifest: &str, expect: &[&str]) {
        let mut problems = Vec::new();
        check_manifest_text("demo", manifest, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    fn manifest_without_lints_is_reported() {
        check_text(
            "[package]\nname = \"demo\"\n",
            &["demo: Cargo.toml needs `[lints] workspace = true`"],
        );
    }

    #[test]
    fn internal_dependency_by_path_is_reported() {
        check_text(
            "[dependencies]\nagent-core = { path = \"../agent-core\" }\n[lints]\nworkspace = true\n",
            &["demo: internal dependency agent-core must use `workspace = true`"],
        );
    }

    #[track_caller]
    fn check_deps(name: &str, deps: &[(&str, &str)], expect: &[&str]) {
        let allowed = ALLOWED_EDGES.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, a)| a);
        let members = ["agent-core", "agent-exec", "agent-tools", "agent-model", "agent-cli"];
        let mut problems = Vec::new();
        check_edges(name, allowed, deps, &members, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    fn exec_may_not_depend_on_model() {
        check_deps(
            "agent-exec",
            &[("agent-model", "normal")],
            &["agent-exec -> agent-model: edge not allowed by docs/ARCHITECTURE.md"],
        );
    }

    #[test]
    fn sideways_dev_dependency_is_allowed() {
        check_deps("agent-exec", &[("agent-tools", "dev"), ("agent-core", "normal")], &[]);
    }

    #[test]
    fn library_may_not_use_anyhow() {
        check_deps(
            "agent-core",
            &[("anyhow", "normal")],
            &["agent-core: depends on anyhow, which only agent-cli and xtask may use"],
        );
    }

    #[test]
    fn cli_may_use_clap() {
        check_deps("agent-cli", &[("clap", "normal"), ("agent-model", "normal")], &[]);
    }

    #[test]
    fn tidy_manifest_passes() {
        check_text(
            "[dependencies]\nagent-core.workspace = true\n\n[lints]\nworkspace = true\n",
            &[],
        );
    }
}
