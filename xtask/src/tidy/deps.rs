//! Feature hygiene of the crate edges: every internal dependency says `default-features = false`
//! (and so names the features it forwards), and the runtime and the tools without their features
//! compile neither JavaScript engine nor TypeScript compiler.
//!
//! The crate map itself (which crate may depend on which) is `ALLOWED_EDGES` in `tidy.rs`.

use std::{path::Path, process::Command};

use anyhow::{Context, bail};

/// The heavy optional engines behind agent-tools' `execute-code` and `typescript` features, by
/// package-name prefix: QuickJS (`rquickjs`, `rquickjs-sys`, …) and oxc (`oxc_parser`, …).
const ENGINES: &[&str] = &["rquickjs", "oxc"];

/// The builds that must not contain [`ENGINES`]: `cargo tree` arguments after `-p`. A library user
/// who adds the runtime, the OS sandbox, the MCP bridge or the tools without `execute-code` gets
/// no engine compiled.
const ENGINE_FREE: &[&[&str]] = &[
    &["agent-sandbox"],
    &["agent-exec", "--no-default-features"],
    &["agent-exec"],
    &["agent-mcp"],
    &["agent-tools", "--no-default-features"],
];

/// Checks the dependency lines of one manifest (`name` says whose): every internal crate
/// (`agent-…`) is depended on with `default-features = false`, so features are forwarded only
/// where an edge names them. Applies to the root's `[workspace.dependencies]` too: without it
/// there, a member's `default-features = false` would be ignored.
pub(super) fn check_internal_edges(name: &str, manifest: &str, problems: &mut Vec<String>) {
    let mut section = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if !section.ends_with("dependencies]") || !line.starts_with("agent-") {
            continue;
        }
        if !line.replace(' ', "").contains("default-features=false") {
            let dep = line.split(['.', ' ', '=']).next().unwrap_or(line);
            problems.push(format!(
                "{name}: internal dependency {dep} must say `default-features = false` and name \
                 the features it needs"
            ));
        }
    }
}

/// Runs `cargo tree -e normal` (offline) for each build in [`ENGINE_FREE`] and reports any engine
/// package in it.
pub(super) fn check_tree(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for build in ENGINE_FREE {
        let output = Command::new(&cargo)
            .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "--format", "{p}"])
            .arg("-p")
            .args(*build)
            .current_dir(root)
            .output()
            .context("could not run cargo tree")?;
        if !output.status.success() {
            bail!(
                "cargo tree -p {} failed: {}",
                build.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let tree = String::from_utf8_lossy(&output.stdout);
        check_engines(&build.join(" "), &tree, problems);
    }
    Ok(())
}

/// Reports the engine packages in `tree`, the output of `cargo tree --prefix none` for `build`.
fn check_engines(build: &str, tree: &str, problems: &mut Vec<String>) {
    let mut found: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|package| ENGINES.iter().any(|engine| package.starts_with(engine)))
        .collect();
    found.sort_unstable();
    found.dedup();
    if !found.is_empty() {
        problems.push(format!(
            "cargo tree -e normal -p {build} contains {}: a crate edge forwards agent-tools' \
             execute-code or typescript feature (write it with `default-features = false`)",
            found.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_text(manifest: &str, expect: &[&str]) {
        let mut problems = Vec::new();
        check_internal_edges("demo", manifest, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    fn an_internal_edge_with_default_features_is_reported() {
        check_text(
            "[dependencies]\nagent-exec.workspace = true\nserde.workspace = true\n",
            &["demo: internal dependency agent-exec must say `default-features = false` and name \
               the features it needs"],
        );
        check_text(
            "[dev-dependencies]\nagent-tools = { workspace = true, features = [\"typescript\"] }\n",
            &[
                "demo: internal dependency agent-tools must say `default-features = false` and name \
               the features it needs",
            ],
        );
    }

    #[test]
    fn an_edge_without_default_features_passes() {
        check_text(
            "[dependencies]\nagent-core = { workspace = true, default-features = false }\n\
             [workspace.dependencies]\nagent-exec = { path = \"crates/agent-exec\", default-features = false }\n\
             [package]\nagent-name = \"not a dependency\"\n",
            &[],
        );
    }

    #[test]
    fn test_support_is_a_dev_dependency_only() {
        let allowed = |name: &str| {
            super::super::ALLOWED_EDGES.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, a)| a)
        };
        let members = ["agent-core", "agent-sandbox", "agent-exec", "agent-test-support"];
        let mut problems = Vec::new();
        let deps = [("agent-test-support", "dev"), ("agent-core", "normal")];
        super::super::check_edges(
            "agent-exec",
            allowed("agent-exec"),
            &deps,
            &members,
            &mut problems,
        );
        assert_eq!(problems, Vec::<String>::new());
        let deps = [("agent-test-support", "normal")];
        super::super::check_edges(
            "agent-exec",
            allowed("agent-exec"),
            &deps,
            &members,
            &mut problems,
        );
        assert_eq!(
            problems,
            ["agent-exec -> agent-test-support: edge not allowed by docs/ARCHITECTURE.md"]
        );
        // And it depends on no internal crate itself.
        let mut problems = Vec::new();
        let deps = [("agent-core", "normal")];
        super::super::check_edges(
            "agent-test-support",
            allowed("agent-test-support"),
            &deps,
            &members,
            &mut problems,
        );
        assert_eq!(
            problems,
            ["agent-test-support -> agent-core: edge not allowed by docs/ARCHITECTURE.md"]
        );
    }

    #[test]
    fn the_sandbox_depends_on_no_internal_crate() {
        let members = ["agent-core", "agent-sandbox"];
        let mut problems = Vec::new();
        super::super::check_edges(
            "agent-sandbox",
            &[],
            &[("agent-core", "normal")],
            &members,
            &mut problems,
        );
        assert_eq!(
            problems,
            ["agent-sandbox -> agent-core: edge not allowed by docs/ARCHITECTURE.md"]
        );
        let allowed = super::super::ALLOWED_EDGES.iter().find(|(n, _)| *n == "agent-sandbox");
        assert_eq!(allowed.map(|(_, a)| a.len()), Some(0));
    }

    #[test]
    fn an_engine_in_the_tree_is_reported() {
        let tree = "agent-tools v0.1.0 (/w)\nrquickjs v0.14.0\nrquickjs-sys v0.14.0\noxc_parser v0.146.0\n\
                    rquickjs v0.14.0 (*)\nserde v1.0.0\n";
        let mut problems = Vec::new();
        check_engines("agent-tools --no-default-features", tree, &mut problems);
        assert_eq!(
            problems,
            ["cargo tree -e normal -p agent-tools --no-default-features contains oxc_parser, \
              rquickjs, rquickjs-sys: a crate edge forwards agent-tools' execute-code or \
              typescript feature (write it with `default-features = false`)"]
        );
        let mut problems = Vec::new();
        check_engines("agent-exec", "agent-exec v0.1.0\nserde v1.0.0\n", &mut problems);
        assert_eq!(problems, Vec::<String>::new());
    }
}
