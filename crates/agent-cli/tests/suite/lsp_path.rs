//! The suites pin `AGENT_LSP_PATH` empty (see `command`), so a language server installed on the
//! machine does not change the tools a test is offered; a test of diagnostics opts in by naming
//! where its server is.

use crate::suite::{Running, command};

/// Whether `agent tools list` offers `diagnostics` with a `gopls` on `PATH`, and `lsp_path` as
/// `AGENT_LSP_PATH` (`None`: the harness's empty pin).
fn offers_diagnostics(lsp_path: Option<&str>) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let server = bin.join("gopls");
    std::fs::write(&server, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&server, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let mut command = command(dir.path(), &["tools", "list"]);
    command.env("PATH", &path).stdin(std::process::Stdio::null());
    if let Some(lsp_path) = lsp_path {
        command.env("AGENT_LSP_PATH", lsp_path.replace("BIN", &bin.display().to_string()));
    }
    let output = Running::spawn(&mut command).finish("agent tools list");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).lines().any(|line| line.starts_with("diagnostics "))
}

#[test]
fn a_server_on_the_machines_path_changes_nothing_until_a_test_opts_in() {
    assert!(!offers_diagnostics(None), "the harness pins the server search path empty");
    assert!(offers_diagnostics(Some("BIN")), "a test that names the server's directory gets it");
}
