//! Secret files: the one list of files every path that can reveal content keeps from the model
//! (the file tools, the OS sandbox, the permission policy), and the allow rules that expose them.
//!
//! A secret is either a file in the workspace whose name matches a pattern (`.env`, `*.pem`, …)
//! or a credential location under the home directory (`~/.ssh`, `~/.aws`, …). `Read(…)` allow
//! rules reveal what they name. See `docs/sandbox.md` ("Secret files") for what each path does
//! with the list and where its limits are.

mod walk;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock, PoisonError},
    time::{Duration, Instant},
};

use crate::paths::PathSet;

/// File-name patterns of secret files, in gitignore style: a bare name matches at any depth, and
/// a pattern that names a directory also covers everything below it.
pub const PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh",
    ".aws",
    ".netrc",
    // Not `secrets.*`: that hides source files (`secrets.rs`, `secrets.py`) and breaks builds.
    "secrets.{json,yaml,yml,toml,env,ini,txt,conf,cfg}",
];

/// Credential locations, relative to the home directory: hidden from sandboxed processes
/// whether they are files or directories.
pub const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".docker/config.json",
    ".kube/config",
    ".npmrc",
    ".pypirc",
    ".config/agent",
];

/// How long the list of secret files found in a workspace is used before the tree is walked
/// again (in the background). A walk costs about what `find` over the tree costs, up to half a
/// second for large trees (see `docs/sandbox.md`), too much for every command; a secret file a
/// user adds mid-session is hidden once the next walk finishes.
const WALK_REUSE: Duration = Duration::from_secs(30);

/// Workspaces whose walks are cached at once.
const MAX_WALKS: usize = 16;

/// Which files count as secrets: the configuration a front end fills from its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFiles {
    /// Patterns of secret files in the workspace ([`PATTERNS`] by default).
    pub patterns: Vec<String>,
    /// Credential locations relative to the home directory ([`CREDENTIALS`] by default).
    pub credentials: Vec<String>,
}

impl Default for SecretFiles {
    fn default() -> Self {
        Self {
            patterns: PATTERNS.iter().map(|p| (*p).to_owned()).collect(),
            credentials: CREDENTIALS.iter().map(|p| (*p).to_owned()).collect(),
        }
    }
}

/// A secret file or credential location that is hidden, and the rule that would expose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The absolute path.
    pub path: PathBuf,
    /// How the path is shown: relative to the workspace (`config/.env`) or the home (`~/.ssh`).
    pub shown: String,
    /// The allow rule that would expose it, such as `Read(./.env)` or `Read(~/.ssh)`.
    pub rule: String,
}

impl Hidden {
    fn new(path: PathBuf, shown: String, home: bool) -> Self {
        let rule = if home { format!("Read({shown})") } else { format!("Read(./{shown})") };
        Self { path, shown, rule }
    }

    /// The note a command's observation carries when it touched this path.
    pub fn note(&self) -> String {
        format!(
            "`{}` is hidden from commands; an allow rule `{}` exposes it",
            self.shown, self.rule
        )
    }
}

/// The compiled secret list of a session, with the paths its `Read(…)` allow rules expose.
///
/// Cheap to clone: clones share the compiled sets and the cache of workspace walks.
#[derive(Debug, Clone)]
pub struct Secrets {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    files: SecretFiles,
    /// The patterns compiled to match anywhere.
    matcher: PathSet,
    /// What the workspace walk matches: file names against the patterns without a `/`, and
    /// whole paths against the others.
    walk: walk::Matcher,
    /// What `Read(…)` allow rules name.
    revealed: PathSet,
    /// The user's home directory, whose credential locations are always hidden.
    home: Option<PathBuf>,
    /// Workspace walks by canonical root.
    walks: Mutex<HashMap<PathBuf, Walk>>,
}

/// One cached workspace walk.
#[derive(Debug)]
struct Walk {
    /// When the walk finished.
    at: Instant,
    /// What it found, minus what allow rules expose.
    found: Arc<[Hidden]>,
    /// The device and inode of each found path when it was found.
    ids: Vec<Option<(u64, u64)>>,
    /// Whether a background walk is replacing it.
    refreshing: bool,
}

impl Walk {
    /// Whether every path found is still the file that was found (one `lstat` each).
    fn still_there(&self) -> bool {
        self.found.iter().zip(&self.ids).all(|(hidden, id)| file_id(&hidden.path) == *id)
    }
}

/// The device and inode at `path`, without following a final symlink.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|meta| (meta.dev(), meta.ino()))
}

impl Default for Secrets {
    /// The built-in list with nothing revealed, compiled once per process and shared.
    fn default() -> Self {
        static BUILTIN: OnceLock<Secrets> = OnceLock::new();
        BUILTIN.get_or_init(|| Self::new(SecretFiles::default())).clone()
    }
}

impl Secrets {
    /// The list `files`, with nothing revealed. Patterns that do not compile are skipped (the
    /// built-in ones always compile).
    pub fn new(files: SecretFiles) -> Self {
        Self::with_revealed(files, PathSet::default())
    }

    /// The list `files`, where paths matching `revealed` are exposed. The permission policy builds
    /// `revealed` from its `Read(…)` allow rules (`agent_exec::secrets_for_rules`), so
    /// a command in the sandbox sees what the rules expose.
    pub fn with_revealed(files: SecretFiles, revealed: PathSet) -> Self {
        let mut globs = Vec::new();
        for pattern in &files.patterns {
            globs.extend(anywhere(pattern));
        }
        let matcher = PathSet::new(&globs).unwrap_or_else(|_| {
            // One bad pattern must not drop the others: compile them one by one.
            PathSet::union(
                globs.iter().filter_map(|g| PathSet::new(std::slice::from_ref(g)).ok()).collect(),
            )
        });
        let walk = walk::Matcher::new(&files.patterns);
        let inner =
            Inner { files, matcher, walk, revealed, home: user_home(), walks: Mutex::default() };
        Self { inner: Arc::new(inner) }
    }

    /// One set matching every secret: the patterns anywhere, and the credential locations (and
    /// everything below them) under the user's home. The permission policy judges reads with it.
    pub fn path_set(&self) -> PathSet {
        let mut globs = Vec::new();
        for home in self.homes(None) {
            let home = globset::escape(&home.to_string_lossy());
            for cred in &self.inner.files.credentials {
                let cred = globset::escape(cred.trim_matches('/'));
                globs.push(format!("{home}/{cred}"));
                globs.push(format!("{home}/{cred}/**"));
            }
        }
        let credentials = PathSet::new(&globs).unwrap_or_default();
        PathSet::union(vec![self.inner.matcher.clone(), credentials])
    }

    /// The configuration this list was built from.
    pub fn files(&self) -> &SecretFiles {
        &self.inner.files
    }

    /// Whether a canonical path is a secret (by pattern, or inside a credential location of
    /// `home` or the user's home), whatever the allow rules say.
    pub fn is_secret(&self, path: &Path, home: Option<&Path>) -> bool {
        if self.inner.matcher.matches(path) {
            return true;
        }
        self.homes(home).iter().any(|home| {
            self.inner.files.credentials.iter().any(|cred| path.starts_with(home.join(cred)))
        })
    }

    /// Whether an allow rule exposes `path`.
    pub fn is_revealed(&self, path: &Path) -> bool {
        self.inner.revealed.matches(path)
    }

    /// The secret at `path` that must stay hidden, with the rule that would expose it; `None`
    /// when `path` is no secret or an allow rule exposes it. `root` is the workspace root the
    /// path is shown relative to.
    pub fn hidden(&self, path: &Path, root: &Path) -> Option<Hidden> {
        if self.is_revealed(path) || !self.is_secret(path, None) {
            return None;
        }
        if let Ok(rel) = path.strip_prefix(root) {
            return Some(Hidden::new(path.to_owned(), slash(rel), false));
        }
        for home in self.homes(None) {
            if let Ok(rel) = path.strip_prefix(&home) {
                return Some(Hidden::new(path.to_owned(), format!("~/{}", slash(rel)), true));
            }
        }
        let shown = path.display().to_string();
        let rule = format!("Read(/{shown})");
        Some(Hidden { path: path.to_owned(), shown, rule })
    }

    /// Everything a sandboxed process in `workspace` must not see: the workspace's secret files
    /// and the credential locations that exist under the user's home and `child_home` (the home
    /// the process is given), minus what allow rules expose.
    ///
    /// The workspace walk is cached (see [`Secrets::refresh`]); the credential locations are
    /// checked on every call (a few `lstat`s).
    pub fn to_hide(&self, workspace: Option<&Path>, child_home: Option<&Path>) -> Vec<Hidden> {
        let mut hidden: Vec<Hidden> =
            workspace.map(|root| self.workspace_files(root).to_vec()).unwrap_or_default();
        for home in self.homes(child_home) {
            for cred in &self.inner.files.credentials {
                let path = home.join(cred);
                if std::fs::symlink_metadata(&path).is_err() || self.is_revealed(&path) {
                    continue;
                }
                if hidden.iter().any(|h| path.starts_with(&h.path)) {
                    continue;
                }
                hidden.push(Hidden::new(path, format!("~/{cred}"), true));
            }
        }
        hidden
    }

    /// The secret files in the workspace at `root`. The first call walks the tree; later calls
    /// get the cached list, and once it is older than [`WALK_REUSE`] a background thread walks
    /// again while callers keep the previous list, so no command waits for a walk but the first.
    ///
    /// A cached file that is gone or was replaced (another inode at its path) makes the call walk
    /// again at once: a command can move a secret's directory (`mv config c2`; the secret itself,
    /// a mount point, cannot move), and the next command must cover it at its new path.
    fn workspace_files(&self, root: &Path) -> Arc<[Hidden]> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
        let mut walks = self.inner.walks.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(walk) = walks.get_mut(&root)
            && walk.still_there()
        {
            if walk.at.elapsed() >= WALK_REUSE && !walk.refreshing {
                let (secrets, dir) = (self.clone(), root.clone());
                let spawned = std::thread::Builder::new()
                    .name("secret-walk".to_owned())
                    .spawn(move || secrets.store_walk(dir));
                walk.refreshing = spawned.is_ok();
            }
            return Arc::clone(&walk.found);
        }
        drop(walks);
        self.store_walk(root)
    }

    /// Walks the workspace at the canonical `root` and caches what it found.
    fn store_walk(&self, root: PathBuf) -> Arc<[Hidden]> {
        let found: Arc<[Hidden]> = walk::secrets(&root, &self.inner.walk)
            .into_iter()
            .filter(|path| !self.is_revealed(path))
            .map(|path| {
                let shown = slash(path.strip_prefix(&root).unwrap_or(&path));
                Hidden::new(path, shown, false)
            })
            .collect();
        let ids = found.iter().map(|hidden| file_id(&hidden.path)).collect();
        let mut walks = self.inner.walks.lock().unwrap_or_else(PoisonError::into_inner);
        if walks.len() >= MAX_WALKS && !walks.contains_key(&root) {
            // A library user cycling through many workspaces must not grow the cache forever.
            walks.clear();
        }
        let walk = Walk { at: Instant::now(), found: Arc::clone(&found), ids, refreshing: false };
        walks.insert(root, walk);
        found
    }

    /// Forgets cached workspace walks, so the next [`Secrets::to_hide`] walks again.
    pub fn refresh(&self) {
        self.inner.walks.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn homes(&self, extra: Option<&Path>) -> Vec<PathBuf> {
        let mut homes: Vec<PathBuf> = self.inner.home.iter().cloned().collect();
        if let Some(extra) = extra {
            let extra = extra.canonicalize().unwrap_or_else(|_| extra.to_owned());
            if !homes.contains(&extra) && extra != Path::new("/") {
                homes.push(extra);
            }
        }
        homes
    }
}

/// How many notes one observation carries before the rest are counted.
const MAX_NOTES: usize = 3;

/// Notes for the entries of `hidden` that any of `texts` (the command line, its output) names:
/// by the path as shown or by its file name, as a whole word (`.env` in `cat .env` or
/// `cat: .env: …`, not in `.envrc`).
pub(crate) fn touched(hidden: &[Hidden], texts: &[&str]) -> Vec<String> {
    let named = |needle: &str| texts.iter().any(|text| names(text, needle));
    let hits: Vec<&Hidden> = hidden
        .iter()
        .filter(|h| {
            let file = h.shown.rsplit('/').next().unwrap_or(&h.shown);
            named(&h.shown) || named(file)
        })
        .collect();
    let mut notes: Vec<String> = hits.iter().take(MAX_NOTES).map(|h| h.note()).collect();
    if hits.len() > MAX_NOTES {
        notes.push(format!("{} more hidden files match", hits.len() - MAX_NOTES));
    }
    notes
}

/// Whether `text` contains `needle` with no path-name character right before or after it.
fn names(text: &str, needle: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-');
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        // A trailing `.` ends a sentence (`cannot open .env.`), not a longer name.
        let after_ok = match after {
            None => true,
            Some('.') => text[at + needle.len() + 1..].chars().next().is_none_or(|c| !word(c)),
            Some(c) => !word(c),
        };
        before.is_none_or(|c| !word(c)) && after_ok
    })
}

/// A pattern as globs matching at any depth: `.env` → `**/.env` and `**/.env/**`.
fn anywhere(pattern: &str) -> Vec<String> {
    let trimmed = pattern.trim_matches('/');
    if trimmed.is_empty() {
        return Vec::new();
    }
    vec![format!("**/{trimmed}"), format!("**/{trimmed}/**")]
}

/// The user's home directory: `$HOME`, else the password database's entry, canonicalized.
fn user_home() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)?;
    let home = home.canonicalize().unwrap_or(home);
    (home != Path::new("/")).then_some(home)
}

fn slash(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(path: &str, expect: bool) {
        let secrets = Secrets::default();
        assert_eq!(secrets.is_secret(Path::new(path), Some(Path::new("/h"))), expect, "{path}");
    }

    #[test]
    fn the_builtin_list() {
        check("/ws/.env", true);
        check("/ws/sub/.env.local", true);
        check("/ws/certs/server.pem", true);
        check("/ws/.ssh/config", true);
        check("/h/.config/gh/hosts.yml", true);
        check("/h/.docker/config.json", true);
        check("/h/.config/agent/config.toml", true);
        check("/ws/.envrc", false);
        check("/ws/config/secrets.yml", true);
        check("/ws/src/secrets.rs", false);
        check("/ws/src/environment.rs", false);
        check("/h/.config/other/x", false);
    }

    #[test]
    fn rules_and_shown_paths() {
        let secrets = Secrets::default();
        let hidden = secrets.hidden(Path::new("/ws/config/.env"), Path::new("/ws")).unwrap();
        assert_eq!(
            (hidden.shown.as_str(), hidden.rule.as_str()),
            ("config/.env", "Read(./config/.env)")
        );
        assert_eq!(
            hidden.note(),
            "`config/.env` is hidden from commands; an allow rule `Read(./config/.env)` exposes it"
        );
        assert_eq!(secrets.hidden(Path::new("/ws/src/main.rs"), Path::new("/ws")), None);
    }

    #[test]
    fn workspace_walks_are_cached_until_refreshed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "x").unwrap();
        let secrets = Secrets::new(SecretFiles::default());
        let shown = |secrets: &Secrets| -> Vec<String> {
            let mut shown: Vec<String> = secrets
                .to_hide(Some(dir.path()), None)
                .into_iter()
                .filter(|h| !h.shown.starts_with('~'))
                .map(|h| h.shown)
                .collect();
            shown.sort();
            shown
        };
        assert_eq!(shown(&secrets), [".env"]);
        std::fs::write(dir.path().join("key.pem"), "x").unwrap();
        assert_eq!(shown(&secrets), [".env"], "the cached walk is reused");
        secrets.refresh();
        assert_eq!(shown(&secrets), [".env", "key.pem"]);
        // A secret's directory moved (or the file replaced) is found again at once.
        std::fs::create_dir(dir.path().join("config")).unwrap();
        std::fs::rename(dir.path().join("key.pem"), dir.path().join("config/key.pem")).unwrap();
        assert_eq!(shown(&secrets), [".env", "config/key.pem"]);
        std::fs::rename(dir.path().join("config"), dir.path().join("moved")).unwrap();
        std::fs::create_dir(dir.path().join("config")).unwrap();
        std::fs::write(dir.path().join("config/key.pem"), "decoy").unwrap();
        assert_eq!(shown(&secrets), [".env", "config/key.pem", "moved/key.pem"]);
    }

    #[track_caller]
    fn notes(text: &str, expect: &[&str]) {
        let hidden = [
            Hidden::new("/ws/.env".into(), ".env".into(), false),
            Hidden::new("/h/.ssh".into(), "~/.ssh".into(), true),
        ];
        let got = touched(&hidden, &[text]);
        let shown: Vec<&str> =
            got.iter().map(|note| note.split('`').nth(1).unwrap_or_default()).collect();
        assert_eq!(shown, expect, "{text}");
    }

    #[test]
    fn notes_name_what_a_command_touched() {
        notes("cat .env", &[".env"]);
        notes("cat: .env: Permission denied", &[".env"]);
        notes("python3 -c 'open(\".env\").read()'", &[".env"]);
        notes("tar c ~/.ssh | base64", &["~/.ssh"]);
        notes("ls /h/.ssh/", &["~/.ssh"]);
        notes("cannot open .env.", &[".env"]);
        notes("cat .envrc .env.example", &[]);
        notes("grep -r TOKEN .", &[]);
    }
}
