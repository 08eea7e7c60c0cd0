//! Trust in a plugin: what it runs, shown once at install, and remembered by content with the
//! user's data so that a session runs a plugin's hooks and servers only while they are still
//! what the user said yes to.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use super::{Manifest, tree};
use crate::{error::Context, log::SessionLog};

/// What the user was shown and said yes to: one line per thing the plugin runs.
pub fn runs(manifest: &Manifest, root: &Path) -> crate::Result<Vec<String>> {
    let root_text = root.display().to_string();
    let shown = |text: &str| {
        crate::visible::visible_line(&text.replace(&root_text, "${CLAUDE_PLUGIN_ROOT}"))
            .into_owned()
    };
    let mut lines = Vec::new();
    for hook in &manifest.hooks {
        let matcher = hook.matcher.as_deref().map(|m| format!(" [{m}]")).unwrap_or_default();
        lines.push(format!("  hook {}{}: {}", hook.event, shown(&matcher), shown(&hook.command)));
    }
    for (name, server) in &manifest.mcp {
        let what = match (server.get("command").and_then(|c| c.as_str()), server.get("url")) {
            (Some(command), _) => {
                let args: Vec<&str> = server
                    .get("args")
                    .and_then(|a| a.as_array())
                    .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default();
                format!("{command} {}", args.join(" ")).trim_end().to_owned()
            }
            (None, Some(url)) => format!("connects to {}", url.as_str().unwrap_or("?")),
            (None, None) => "(no command)".to_owned(),
        };
        lines.push(format!("  mcp server {}: {}", shown(name), shown(&what)));
    }
    for server in &manifest.lsp {
        lines.push(format!(
            "  lsp server {}: {}",
            shown(&server.name),
            shown(&server.command.join(" "))
        ));
    }
    for script in tree::scripts(root)? {
        lines.push(format!("  script {}", shown(&script.display().to_string())));
    }
    Ok(lines)
}

/// The fingerprint trust is given to: the lines shown and every script's bytes.
pub fn fingerprint(lines: &[String], root: &Path) -> crate::Result<String> {
    let mut parts: Vec<String> = lines.to_vec();
    for script in tree::scripts(root)? {
        let bytes = std::fs::read(root.join(&script)).unwrap_or_default();
        parts.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    Ok(crate::skills::fingerprint(&refs))
}

/// The file remembering which plugins the user trusted: plugin folder → fingerprint. It lives
/// with the user's data, never in a project, so a repository cannot ship its own trust.
fn trust_file() -> crate::Result<PathBuf> {
    let root = SessionLog::root()?;
    Ok(root.parent().unwrap_or(&root).join("trusted-plugins.json"))
}

fn trust_map() -> crate::Result<BTreeMap<String, String>> {
    Ok(std::fs::read_to_string(trust_file()?)
        .ok()
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default())
}

fn trust_key(folder: &Path) -> String {
    folder.canonicalize().unwrap_or_else(|_| folder.to_path_buf()).display().to_string()
}

/// Whether the plugin in `folder` is trusted with exactly `print`.
pub fn is_trusted(folder: &Path, print: &str) -> crate::Result<bool> {
    Ok(trust_map()?.get(&trust_key(folder)).is_some_and(|known| known == print))
}

/// Remembers that the user trusted `folder` with `print` (`None` forgets it).
pub fn remember(folder: &Path, print: Option<&str>) -> crate::Result<()> {
    let mut known = trust_map()?;
    let key = trust_key(folder);
    match print {
        Some(print) => known.insert(key, print.to_owned()),
        None => known.remove(&key),
    };
    let file = trust_file()?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&file, serde_json::to_string_pretty(&known)?)
        .with_context(|| format!("writing {}", file.display()))
}
