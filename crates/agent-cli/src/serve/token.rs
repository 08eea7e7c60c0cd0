//! The server's bearer token: generated at start from the kernel's random source and written to
//! a file only its owner can read, so a local client can find it (docs/serve.md).

use std::{
    io::{Read, Write},
    os::unix::fs::{DirBuilderExt, OpenOptionsExt},
    path::{Path, PathBuf},
};

use anyhow::Context;

use crate::session::SessionLog;

/// A new token: 32 random bytes as 64 hex digits.
pub(crate) fn generate() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .context("reading /dev/urandom for the token")?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// `AGENT_DATA_DIR/serve/PORT.token` (the platform data directory without it): one file per
/// port, so two servers do not overwrite each other's.
pub(crate) fn default_path(port: u16) -> anyhow::Result<PathBuf> {
    let sessions = SessionLog::root()?;
    let data = sessions.parent().unwrap_or(&sessions);
    Ok(data.join("serve").join(format!("{port}.token")))
}

/// Writes the token to `path`, mode 0600, in a directory created 0700 when missing. An old file
/// is removed first, so the new one is created with that mode whatever the old one had.
pub(crate) fn write(path: &Path, token: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            return Err(err).with_context(|| format!("replacing {}", path.display()));
        }
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing the token to {}", path.display()))?;
    file.write_all(token.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .with_context(|| format!("writing the token to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_token_file_is_readable_by_its_owner_alone_even_over_an_open_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve").join("1.token");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let token = generate().unwrap();
        assert_eq!(token.len(), 64);
        assert_ne!(token, generate().unwrap());
        write(&path, &token).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{token}\n"));
    }
}
