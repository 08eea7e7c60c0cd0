//! Installing, updating, enabling and removing plugins: a source (a folder, or a git URL cloned
//! with the system `git` and pinned to the commit it resolved) holding a plugin or a marketplace
//! catalogue, copied into a scope's store once the user has seen what it will run.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

use super::{Installed, Record, fingerprint, manifest, remember, runs, tree};
use crate::{
    Frontend,
    error::{Context, bail},
};

/// What `agent plugin install` was asked.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    /// A folder, or a git URL with an optional `@REF`.
    pub source: String,
    /// The plugin to take from a marketplace catalogue.
    pub plugin: Option<String>,
    /// Trust what the plugin runs without asking (`--yes`).
    pub yes: bool,
}

/// A source made local: the folder to read and, for git, the commit.
struct Fetched {
    dir: PathBuf,
    commit: Option<String>,
    /// Keeps a clone alive while it is read.
    _clone: Option<tempfile::TempDir>,
}

/// Whether `source` names a git repository rather than a folder.
fn is_git(source: &str) -> bool {
    ["file://", "https://", "http://", "ssh://", "git@", "git://"]
        .iter()
        .any(|p| source.starts_with(p))
}

/// `URL@REF` split at the last `@` after the last `/` (so `git@host:x` keeps its user).
fn split_ref(source: &str) -> (&str, Option<&str>) {
    // The user part of an scp-like `git@host:repo` is not a ref, slash or not.
    let user = if source.starts_with("git@") { 4 } else { 0 };
    let tail = source.rfind('/').map_or(0, |at| at + 1).max(user);
    match source[tail..].rfind('@') {
        Some(at) => (&source[..tail + at], Some(&source[tail + at + 1..])),
        None => (source, None),
    }
}

fn git(args: &[&str], dir: Option<&Path>) -> crate::Result<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the user's own `agent plugin install`, run before any session and its sandbox"
    )]
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    // No prompt for credentials, no hooks from the user's templates, and no `ext::` transport
    // (which runs a command of the URL's choosing).
    command
        .args(["-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null());
    let output = command.output().context("running git")?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            crate::visible::visible(String::from_utf8_lossy(&output.stderr).trim())
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn fetch(source: &str) -> crate::Result<Fetched> {
    if !is_git(source) {
        let dir = PathBuf::from(source);
        if !dir.is_dir() {
            bail!("{source} is not a folder or a git URL");
        }
        return Ok(Fetched { dir, commit: None, _clone: None });
    }
    let (url, reference) = split_ref(source);
    let clone = tempfile::tempdir().context("making a folder for the clone")?;
    let dir = clone.path().join("repo");
    let dir_text = dir.display().to_string();
    // `--` ends the options: a URL cannot pass itself off as one.
    git(&["clone", "--quiet", "--no-checkout", "--", url, &dir_text], None)?;
    let target = reference.unwrap_or("HEAD");
    let commit = git(&["rev-parse", "--verify", &format!("{target}^{{commit}}")], Some(&dir))
        .or_else(|_| {
            git(&["rev-parse", "--verify", &format!("origin/{target}^{{commit}}")], Some(&dir))
        })?;
    git(&["checkout", "--quiet", &commit], Some(&dir))?;
    Ok(Fetched { dir, commit: Some(commit), _clone: Some(clone) })
}

/// The plugin folder inside a source: the source itself, or an entry of its marketplace.
fn plugin_dir(source: &Path, wanted: Option<&str>) -> crate::Result<(PathBuf, Option<String>)> {
    let catalogue = [".claude-plugin/marketplace.json", ".agents/plugins/marketplace.json"]
        .into_iter()
        .find(|file| source.join(file).is_file());
    let Some(catalogue) = catalogue else {
        return Ok((source.to_path_buf(), None));
    };
    let text = tree::read_capped(&source.join(catalogue), manifest::MAX_MANIFEST_BYTES)?;
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {catalogue}"))?;
    let entries = value.get("plugins").and_then(Value::as_array).cloned().unwrap_or_default();
    let names: Vec<&str> = entries.iter().filter_map(|e| e.get("name")?.as_str()).collect();
    let entry = match wanted {
        Some(name) => entries.iter().find(|e| e.get("name").and_then(Value::as_str) == Some(name)),
        None if entries.len() == 1 => entries.first(),
        None => bail!(
            "{catalogue} lists {} plugins ({}); name one with --plugin",
            names.len(),
            names.join(", ")
        ),
    };
    let Some(entry) = entry else {
        bail!(
            "{catalogue} has no plugin `{}` (it lists: {})",
            wanted.unwrap_or_default(),
            names.join(", ")
        );
    };
    let name = entry.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    // A relative path, Claude Code's `./plugins/x` or Codex's `{"source": "local", "path": …}`;
    // a source elsewhere (another repository, a URL) is installed by naming it directly.
    let path = match entry.get("source") {
        Some(Value::String(path)) => path.clone(),
        Some(Value::Object(object)) if object.get("path").and_then(Value::as_str).is_some() => {
            object["path"].as_str().unwrap_or_default().to_owned()
        }
        other => bail!(
            "marketplace entry `{name}` comes from elsewhere ({}); install that source directly",
            other.map_or("no source".to_owned(), Value::to_string)
        ),
    };
    let root = value.pointer("/metadata/pluginRoot").and_then(Value::as_str).unwrap_or("");
    let joined =
        if path.starts_with("./") || root.is_empty() { path } else { format!("{root}/{path}") };
    let relative = manifest::inside(source, &joined)?;
    Ok((source.join(relative), Some(name)))
}

/// Installs a plugin into `installed`'s scope: shows what it will run and asks once (or takes
/// `--yes`); refused when it cannot ask. Returns the record and the lines shown.
pub fn install(
    installed: &mut Installed,
    request: &InstallRequest,
    frontend: &dyn Frontend,
) -> crate::Result<(Record, Vec<String>)> {
    let fetched = fetch(&request.source)?;
    let (dir, entry) = plugin_dir(&fetched.dir, request.plugin.as_deref())?;
    let fallback = entry.clone().unwrap_or_else(|| {
        dir.canonicalize()
            .unwrap_or(dir.clone())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    // Read once where it is, so a plugin that climbs out of its folder is refused before a byte
    // is copied.
    tree::files(&dir)?;
    let first = manifest::read(&dir, &fallback)?;
    if installed.records.iter().any(|r| r.name == first.name) {
        bail!(
            "plugin `{}` is already installed ({} scope); `agent plugin update {}` refreshes it",
            first.name,
            installed.scope.as_str(),
            first.name
        );
    }
    let folder = installed.folder(&first.name);
    if folder.exists() {
        std::fs::remove_dir_all(&folder)
            .with_context(|| format!("clearing {}", folder.display()))?;
    }
    tree::copy(&dir, &folder)?;
    let record = Record {
        name: first.name.clone(),
        format: first.format.unwrap_or(manifest::Format::ClaudeCode),
        source: request.source.clone(),
        marketplace_entry: entry,
        commit: fetched.commit,
        version: first.version.clone(),
        enabled: true,
    };
    match admit(&folder, &fallback, request.yes, frontend) {
        Ok(lines) => {
            installed.records.push(record.clone());
            installed.save()?;
            Ok((record, lines))
        }
        Err(err) => {
            let _ = std::fs::remove_dir_all(&folder);
            Err(err)
        }
    }
}

/// Shows what the plugin in `folder` runs and records the user's trust; an error when the user
/// says no or cannot be asked.
fn admit(
    folder: &Path,
    name: &str,
    yes: bool,
    frontend: &dyn Frontend,
) -> crate::Result<Vec<String>> {
    let manifest = manifest::read(folder, name)?;
    let lines = runs(&manifest, folder)?;
    let mut shown = vec![format!(
        "plugin `{}`{} ({}) will run these on your machine, outside the sandbox (${{CLAUDE_PLUGIN_ROOT}} is {}):",
        manifest.name,
        manifest.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
        manifest.format.map_or("?", manifest::Format::as_str),
        folder.display()
    )];
    shown.extend(lines.iter().cloned());
    for what in &manifest.neutralized {
        shown.push(format!("  ignored: {what}"));
    }
    for what in &manifest.unknown {
        shown.push(format!("  not used: {what}"));
    }
    if lines.is_empty() {
        // Recorded all the same: a project's plugin loads only once its user installed it.
        remember(folder, Some(&fingerprint(&lines, folder)?))?;
        shown[0] = format!(
            "plugin `{}` runs nothing (text only: skills, commands, agents)",
            manifest.name
        );
        return Ok(shown);
    }
    if !yes {
        if !frontend.can_ask() {
            for line in &shown {
                frontend.say(line);
            }
            bail!(
                "plugin `{}` runs commands and no one can be asked here; pass --yes to trust them",
                manifest.name
            );
        }
        if !frontend.confirm(&shown, "trust this plugin to run them?") {
            bail!("plugin `{}` was not trusted, so it is not installed", manifest.name);
        }
    }
    remember(folder, Some(&fingerprint(&lines, folder)?))?;
    Ok(shown)
}

/// Re-fetches a plugin from its source (a git install from the same `@REF`, to its new commit),
/// asking again when what it runs changed.
pub fn update(
    installed: &mut Installed,
    name: &str,
    yes: bool,
    frontend: &dyn Frontend,
) -> crate::Result<(Record, Vec<String>)> {
    let at = position(installed, name)?;
    let old = installed.records[at].clone();
    let fetched = fetch(&old.source)?;
    let (dir, _) = plugin_dir(&fetched.dir, old.marketplace_entry.as_deref())?;
    tree::files(&dir)?;
    let fresh = manifest::read(&dir, name)?;
    if fresh.name != old.name {
        bail!("the source now holds plugin `{}`, not `{}`", fresh.name, old.name);
    }
    let folder = installed.folder(name);
    let staging = installed.dir.join("plugins").join(format!(".{name}.new"));
    let _ = std::fs::remove_dir_all(&staging);
    tree::copy(&dir, &staging)?;
    let backup = installed.dir.join("plugins").join(format!(".{name}.old"));
    let _ = std::fs::remove_dir_all(&backup);
    std::fs::rename(&folder, &backup).with_context(|| format!("moving {}", folder.display()))?;
    std::fs::rename(&staging, &folder).with_context(|| format!("moving {}", staging.display()))?;
    let lines = runs(&manifest::read(&folder, name)?, &folder)?;
    let same = lines.is_empty() || super::is_trusted(&folder, &fingerprint(&lines, &folder)?)?;
    let shown = if same {
        lines
    } else {
        match admit(&folder, name, yes, frontend) {
            Ok(shown) => shown,
            Err(err) => {
                let _ = std::fs::remove_dir_all(&folder);
                let _ = std::fs::rename(&backup, &folder);
                return Err(err);
            }
        }
    };
    let _ = std::fs::remove_dir_all(&backup);
    let record = &mut installed.records[at];
    record.commit = fetched.commit;
    record.version = fresh.version;
    let record = record.clone();
    installed.save()?;
    Ok((record, shown))
}

/// Turns a plugin on or off for later sessions.
pub fn set_enabled(installed: &mut Installed, name: &str, enabled: bool) -> crate::Result<()> {
    let at = position(installed, name)?;
    installed.records[at].enabled = enabled;
    installed.save()
}

/// Removes a plugin: its record, its folder and the trust given to it.
pub fn remove(installed: &mut Installed, name: &str) -> crate::Result<()> {
    let at = position(installed, name)?;
    let folder = installed.folder(name);
    installed.records.remove(at);
    installed.save()?;
    remember(&folder, None)?;
    if folder.exists() {
        std::fs::remove_dir_all(&folder)
            .with_context(|| format!("removing {}", folder.display()))?;
    }
    Ok(())
}

fn position(installed: &Installed, name: &str) -> crate::Result<usize> {
    installed.records.iter().position(|r| r.name == name).with_context(|| {
        format!(
            "no plugin `{}` is installed in the {} scope",
            crate::visible::visible_line(name),
            installed.scope.as_str()
        )
    })
}

/// The parts of an installed plugin, for `agent plugin list`: `skills 2, commands 1, …`.
pub fn parts(folder: &Path, name: &str) -> crate::Result<Vec<(String, usize)>> {
    let manifest = manifest::read(folder, name)?;
    let count_dirs = |dirs: &[PathBuf], skill: bool| -> usize {
        dirs.iter()
            .map(|dir| {
                let dir = folder.join(dir);
                if dir.is_file() {
                    return 1;
                }
                std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .filter(|e| {
                        let p = e.path();
                        if skill {
                            p.join("SKILL.md").is_file()
                        } else {
                            p.extension().is_some_and(|x| x == "md")
                        }
                    })
                    .count()
            })
            .sum()
    };
    let commands = crate::commands::Commands::discover(
        &manifest.commands.iter().map(|d| (folder.join(d), false)).collect::<Vec<_>>(),
    );
    Ok(vec![
        ("skills".to_owned(), count_dirs(&manifest.skills, true)),
        ("commands".to_owned(), commands.list.len()),
        ("agents".to_owned(), count_dirs(&manifest.agents, false)),
        ("hooks".to_owned(), manifest.hooks.len()),
        ("mcp".to_owned(), manifest.mcp.len()),
        ("lsp".to_owned(), manifest.lsp.len()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(source: &str, git: bool, url: &str, reference: Option<&str>) {
        assert_eq!(is_git(source), git, "{source}");
        assert_eq!(split_ref(source), (url, reference), "{source}");
    }

    #[test]
    fn a_source_is_a_folder_or_a_git_url_with_an_optional_ref() {
        check("./plugins/kit", false, "./plugins/kit", None);
        check("file:///srv/repo@v1", true, "file:///srv/repo", Some("v1"));
        check("https://example.com/a/b.git", true, "https://example.com/a/b.git", None);
        check("git@example.com:a/b.git@main", true, "git@example.com:a/b.git", Some("main"));
        check("git@example.com:b.git", true, "git@example.com:b.git", None);
        check("ext::sh -c touch% /tmp/x", false, "ext::sh -c touch% /tmp/x", None);
    }
}
