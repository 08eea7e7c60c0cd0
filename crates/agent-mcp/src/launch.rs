//! Setting up a server's process: finding its program before the spawn, its stderr log, and the
//! errors of either (and of an HTTP client's set-up), which become a start error's reason.

use std::path::PathBuf;

use agent_sandbox::process::SpawnError;

/// Why a server's process or HTTP session could not be set up; its text becomes the
/// [`StartError`]'s reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    #[error("could not start `{0}`: no such program")]
    NoSuchProgram(String),
    #[error("creating {}: {source}", dir.display())]
    LogDir { dir: PathBuf, source: std::io::Error },
    #[error("opening {}: {source}", path.display())]
    Log { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("starting the server: {0}")]
    Thread(#[from] tokio::task::JoinError),
    #[error("the variable `{0}` (bearer_token_env_var) is not set")]
    NoToken(String),
    #[error("http_headers `{name}`: {source}")]
    HeaderName { name: String, source: reqwest::header::InvalidHeaderName },
    #[error("http_headers `{name}`: {source}")]
    HeaderValue { name: String, source: reqwest::header::InvalidHeaderValue },
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// Whether `program` may exist: a path (with a `/`) as it is or from `cwd`, a bare name in a
/// directory of `path`. Only a certain miss is false; the spawn itself has the last word.
pub(crate) fn findable(
    program: &str,
    cwd: Option<&std::path::Path>,
    path: Option<&std::ffi::OsStr>,
) -> bool {
    if program.contains('/') {
        let program = std::path::Path::new(program);
        return program.exists() || cwd.is_some_and(|cwd| cwd.join(program).exists());
    }
    path.is_none_or(|path| std::env::split_paths(path).any(|dir| dir.join(program).exists()))
}

/// The server's stderr log, appended to (`/dev/null` without a session folder).
pub(crate) fn open_log(path: Option<&std::path::Path>) -> Result<std::fs::File, LaunchError> {
    let opening = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| LaunchError::Log { path, source }
    };
    match path {
        Some(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|source| LaunchError::LogDir { dir: dir.to_path_buf(), source })?;
            }
            std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(opening(path))
        }
        None => {
            let null = std::path::Path::new("/dev/null");
            std::fs::File::options().write(true).open(null).map_err(opening(null))
        }
    }
}
