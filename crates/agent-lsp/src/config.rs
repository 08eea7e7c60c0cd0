//! The per-language server table (`[lsp.<language>]`) and the session's bounds, with the
//! defaults for the servers commonly found on `PATH`.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;
use serde_json::Value;

/// One language's server: how to start it and which files it takes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The language's name (the table's key: `python`, `typescript`, …); also the LSP
    /// `languageId` unless `language_id` says otherwise.
    #[serde(skip)]
    pub language: String,
    /// The program and its arguments (required unless `enabled = false`).
    #[serde(default)]
    pub command: Vec<String>,
    /// File name extensions it takes, without the dot (required unless `enabled = false`).
    #[serde(default)]
    pub file_types: Vec<String>,
    /// Files or directories that mark a project's root (`pyproject.toml`, `tsconfig.json`); the
    /// nearest directory holding one, up to the workspace root, is the server's root.
    #[serde(default)]
    pub root_markers: Vec<String>,
    /// Sent as `initializationOptions`.
    #[serde(default)]
    pub initialization_options: Option<Value>,
    /// The `languageId` of its documents per extension, when it differs from `language`
    /// (`tsx` → `typescriptreact`).
    #[serde(default)]
    pub language_ids: Vec<(String, String)>,
    /// `false` turns this language off.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// For a server that publishes one version's diagnostics in several messages (syntax, then
    /// types): how long to wait after one for the next. Zero for servers that publish once.
    #[serde(default, rename = "settle_ms", deserialize_with = "millis::deserialize")]
    pub settle: Duration,
}

/// A duration written as whole milliseconds (`settle_ms`-style values in the config file).
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

fn yes() -> bool {
    true
}

impl ServerConfig {
    /// The `languageId` of `path`.
    pub fn language_id(&self, path: &Path) -> String {
        let ext = extension(path);
        self.language_ids
            .iter()
            .find(|(e, _)| Some(e.as_str()) == ext.as_deref())
            .map_or_else(|| self.language.clone(), |(_, id)| id.clone())
    }

    /// Whether it takes `path`.
    pub fn takes(&self, path: &Path) -> bool {
        extension(path).is_some_and(|ext| self.file_types.contains(&ext))
    }

    /// The program's name, for messages.
    pub fn program(&self) -> &str {
        self.command.first().map_or("", String::as_str)
    }
}

fn extension(path: &Path) -> Option<String> {
    path.extension().map(|ext| ext.to_string_lossy().to_ascii_lowercase())
}

/// The bounds of the session's language servers.
#[derive(Debug, Clone, PartialEq)]
pub struct LspConfig {
    /// The servers, one per language.
    pub servers: Vec<ServerConfig>,
    /// How long an edit waits for the diagnostics of its version (1.5 s).
    pub wait: Duration,
    /// How long a server may take to start and answer `initialize` before it counts as failed.
    pub start_timeout: Duration,
    /// How long an edit's diagnostics are still awaited in the background after its observation
    /// said they were pending.
    pub give_up: Duration,
    /// New errors shown per file; the rest are counted.
    pub max_shown: usize,
    /// Failures (crashes, failed starts) after which a language is off for the session.
    pub max_failures: u32,
    /// The first restart's delay; each further one doubles it.
    pub backoff: Duration,
    /// Processes alive at once in a server's tree.
    pub max_processes: u64,
    /// Virtual address space per server process, in bytes.
    pub max_memory_bytes: u64,
    /// The largest message accepted from a server.
    pub max_message_bytes: usize,
    /// The servers' writable cache (and log) directory; `None` gives a temporary one.
    pub cache_dir: Option<PathBuf>,
}

impl Default for LspConfig {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            wait: Duration::from_millis(1500),
            start_timeout: Duration::from_secs(30),
            give_up: Duration::from_secs(30),
            max_shown: 5,
            max_failures: 3,
            backoff: Duration::from_millis(500),
            max_processes: 64,
            max_memory_bytes: 16 << 30,
            max_message_bytes: 16 << 20,
            cache_dir: None,
        }
    }
}

impl LspConfig {
    /// The server for `path`, if any enabled one takes it.
    pub fn server_for(&self, path: &Path) -> Option<&ServerConfig> {
        self.servers.iter().find(|server| server.enabled && server.takes(path))
    }
}

/// typescript-language-server publishes a file's syntax errors, then its type errors.
pub const TYPESCRIPT_SETTLE: Duration = Duration::from_millis(300);

/// The default table: for each language, the first of its usual servers found on `path_var`
/// (a `PATH` value). Languages whose servers are missing are left out.
pub fn defaults(path_var: Option<&std::ffi::OsStr>) -> Vec<ServerConfig> {
    let found = |program: &str| {
        path_var.is_some_and(|path| {
            std::env::split_paths(path).any(|dir| runnable(&dir.join(program), program))
        })
    };
    let server =
        |language: &str, command: &[&str], types: &[&str], markers: &[&str]| ServerConfig {
            language: language.to_owned(),
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            file_types: types.iter().map(|s| (*s).to_owned()).collect(),
            root_markers: markers.iter().map(|s| (*s).to_owned()).collect(),
            initialization_options: None,
            language_ids: Vec::new(),
            enabled: true,
            settle: Duration::ZERO,
        };
    let python_markers = ["pyproject.toml", "setup.py", "setup.cfg", "pyrightconfig.json"];
    let candidates: Vec<Vec<ServerConfig>> = vec![
        vec![
            server(
                "python",
                &["basedpyright-langserver", "--stdio"],
                &["py", "pyi"],
                &python_markers,
            ),
            server("python", &["pyright-langserver", "--stdio"], &["py", "pyi"], &python_markers),
            server("python", &["ruff", "server"], &["py", "pyi"], &python_markers),
        ],
        vec![ServerConfig {
            settle: TYPESCRIPT_SETTLE,
            language_ids: vec![
                ("tsx".into(), "typescriptreact".into()),
                ("js".into(), "javascript".into()),
                ("jsx".into(), "javascriptreact".into()),
                ("mjs".into(), "javascript".into()),
                ("cjs".into(), "javascript".into()),
            ],
            ..server(
                "typescript",
                &["typescript-language-server", "--stdio"],
                &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
                &["tsconfig.json", "jsconfig.json", "package.json"],
            )
        }],
        vec![server("rust", &["rust-analyzer"], &["rs"], &["Cargo.toml"])],
        vec![server("go", &["gopls"], &["go"], &["go.mod", "go.work"])],
        vec![ServerConfig {
            language_ids: vec![("c".into(), "c".into()), ("h".into(), "c".into())],
            ..server(
                "cpp",
                &["clangd"],
                &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
                &["compile_commands.json", "compile_flags.txt", ".clangd"],
            )
        }],
    ];
    candidates
        .into_iter()
        .filter_map(|choices| choices.into_iter().find(|s| found(s.program())))
        .collect()
}

/// Whether `path` would start `program`: an executable that is not a rustup proxy for a component
/// no toolchain has. rustup puts a `rust-analyzer` proxy on every machine it installs, and without
/// the component it fails on every start, which would offer the model a `diagnostics` tool and
/// then turn the language off after three failed starts.
fn runnable(path: &Path, program: &str) -> bool {
    if !is_executable(path) {
        return false;
    }
    let proxy = std::fs::canonicalize(path).is_ok_and(|real| {
        real.file_name().is_some_and(|name| name == "rustup" || name == "rustup-init")
    });
    !proxy || rustup_component_installed(program)
}

/// Whether any rustup toolchain (under `RUSTUP_HOME`, else `~/.rustup`) has `program` in its `bin`.
fn rustup_component_installed(program: &str) -> bool {
    let home = std::env::var_os("RUSTUP_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::home_dir().map(|home| home.join(".rustup")));
    let Some(toolchains) = home.map(|home| home.join("toolchains")) else { return false };
    let Ok(entries) = std::fs::read_dir(toolchains) else { return false };
    entries.flatten().any(|toolchain| is_executable(&toolchain.path().join("bin").join(program)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_take_what_is_on_path() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["pyright-langserver", "gopls"] {
            let path = dir.path().join(name);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let table = defaults(Some(dir.path().as_os_str()));
        let names: Vec<(&str, &str)> =
            table.iter().map(|s| (s.language.as_str(), s.program())).collect();
        assert_eq!(names, [("python", "pyright-langserver"), ("go", "gopls")]);
        let config = LspConfig { servers: table, ..LspConfig::default() };
        assert_eq!(
            config.server_for(Path::new("a/b.PY")).map(|s| s.program()),
            Some("pyright-langserver")
        );
        assert_eq!(config.server_for(Path::new("a/b.ts")), None);
    }

    /// A rustup proxy named `rust-analyzer` (a link to `rustup`) is no server when no toolchain
    /// has the component; the real program beside it is.
    #[test]
    fn a_rustup_proxy_without_its_component_is_no_server() {
        let dir = tempfile::tempdir().unwrap();
        let rustup = dir.path().join("rustup");
        std::fs::write(&rustup, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&rustup, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(&rustup, bin.join("rust-analyzer")).unwrap();
        assert!(!runnable(&bin.join("rust-analyzer"), "rust-analyzer-not-in-any-toolchain"));
        std::fs::remove_file(bin.join("rust-analyzer")).unwrap();
        std::fs::copy(&rustup, bin.join("rust-analyzer")).unwrap();
        assert!(runnable(&bin.join("rust-analyzer"), "rust-analyzer"));
    }
}
