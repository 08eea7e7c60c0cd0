//! Plugins: bundles of skills, commands, agent definitions, hooks, MCP servers and language
//! servers in Claude Code's, Codex's or Agent Plugins v1's format (docs/plugins.md).
//!
//! An installed plugin is a plain copy in a store (the user's under the config directory, a
//! project's under its `.agent/`), with a record per scope saying which are enabled and, for a
//! git install, the commit it was pinned to. What an enabled plugin brings joins the session
//! through the doors that exist: its skill folders join the skill roots, its commands become
//! `/plugin:command`, its agents `plugin:agent`, and its hooks, MCP servers and language servers
//! join the config file's tables — but only while the user's trust, given at install for exactly
//! what the plugin runs, still matches. Nothing in a plugin grants a permission (manifest.rs).

pub mod manifest;
pub mod store;
mod tree;
mod trust;

use std::path::{Path, PathBuf};

use agent_exec::child::{AgentDefinition, DefinitionSource};
use serde::{Deserialize, Serialize};

pub use self::{
    manifest::{Format, Manifest},
    trust::{fingerprint, is_trusted, remember, runs},
};
use crate::{config::HookEntry, error::Context};

/// Where a plugin is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The user's: every workspace.
    User,
    /// One project's (its `.agent/plugins/`).
    Project,
}

impl Scope {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
        }
    }
}

/// `[plugins]` in the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsTable {
    /// `false` loads no plugin (default `true`).
    pub enabled: Option<bool>,
    /// Run the hooks and servers of plugins whose trust no longer matches (default `false`).
    pub run_untrusted: Option<bool>,
    /// Plugin MCP servers (`plugin-server`) the session waits for before its first request, as
    /// `required = true` does for the config file's; a plugin's own files cannot ask for it.
    #[serde(default)]
    pub required_servers: Vec<String>,
}

/// One installed plugin, as its scope's `plugins.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The plugin's name (its folder in the store).
    pub name: String,
    /// The format its manifest is in.
    pub format: Format,
    /// Where it was installed from (a path or a git URL, with `@REF` when one was given).
    pub source: String,
    /// The plugin's name in the source's marketplace, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marketplace_entry: Option<String>,
    /// The commit a git install resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Its version, when the manifest gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether sessions load it.
    pub enabled: bool,
}

/// The store of one scope: its folder and its records.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The scope.
    pub scope: Scope,
    /// The folder holding `plugins.json` and `plugins/NAME/`.
    pub dir: PathBuf,
    /// The records, in install order.
    pub records: Vec<Record>,
}

impl Installed {
    /// The records of `scope` under `dir` (none when the file is missing).
    pub fn open(scope: Scope, dir: &Path) -> crate::Result<Self> {
        let file = dir.join("plugins.json");
        let records = match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("parsing {}", file.display()))?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(err).with_context(|| format!("reading {}", file.display())),
        };
        Ok(Self { scope, dir: dir.to_path_buf(), records })
    }

    /// Writes the records back.
    pub fn save(&self) -> crate::Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let file = self.dir.join("plugins.json");
        std::fs::write(&file, serde_json::to_string_pretty(&self.records)?)
            .with_context(|| format!("writing {}", file.display()))
    }

    /// The folder of the plugin called `name`.
    pub fn folder(&self, name: &str) -> PathBuf {
        self.dir.join("plugins").join(name)
    }
}

/// The two scopes' folders for a workspace: the user's beside the config file, the project's
/// `.agent/`.
pub fn scope_dirs(config: Option<&Path>, workspace: Option<&Path>) -> Vec<(Scope, PathBuf)> {
    let mut dirs = Vec::new();
    let config = config.map(Path::to_path_buf).or_else(crate::config::ConfigFile::default_path);
    if let Some(dir) = config.as_deref().and_then(Path::parent) {
        dirs.push((Scope::User, dir.to_path_buf()));
    }
    if let Some(workspace) = workspace {
        dirs.push((Scope::Project, workspace.join(".agent")));
    }
    dirs
}

/// One enabled plugin, read for a session.
#[derive(Debug, Clone)]
pub struct Active {
    /// Its record's scope.
    pub scope: Scope,
    /// Its folder in the store.
    pub folder: PathBuf,
    /// What it brings.
    pub manifest: Manifest,
    /// Whether its hooks and servers may run (trusted, or `[plugins] run_untrusted`).
    pub runs: bool,
}

/// The session's plugins: the enabled ones read, and what was refused with why.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The enabled plugins that could be read.
    pub active: Vec<Active>,
    /// What the user should be told (a plugin refused, a field neutralized, trust missing).
    pub notes: Vec<String>,
}

impl Loaded {
    /// Reads every enabled plugin of both scopes.
    pub fn load(table: &PluginsTable, config: Option<&Path>, workspace: Option<&Path>) -> Self {
        let mut loaded = Self::default();
        if table.enabled == Some(false) {
            return loaded;
        }
        for (scope, dir) in scope_dirs(config, workspace) {
            let installed = match Installed::open(scope, &dir) {
                Ok(installed) => installed,
                Err(err) => {
                    loaded
                        .notes
                        .push(format!("plugins of the {} scope not read: {err}", scope.as_str()));
                    continue;
                }
            };
            for record in installed.records.iter().filter(|r| r.enabled) {
                let folder = installed.folder(&record.name);
                match read_active(scope, &folder, &record.name, table) {
                    Ok(active) => {
                        for what in &active.manifest.neutralized {
                            loaded.notes.push(format!("plugin `{}`: ignored {what}", record.name));
                        }
                        if !active.runs {
                            loaded.notes.push(format!(
                                "plugin `{}` is not trusted with what it runs now, so its hooks \
                                 and servers are left out; `agent plugin update {}` reviews it",
                                record.name, record.name
                            ));
                        }
                        loaded.active.push(active);
                    }
                    Err(err) => {
                        loaded.notes.push(format!("plugin `{}` refused: {err}", record.name))
                    }
                }
            }
        }
        loaded
    }

    /// The plugin owning `path` (a skill, command or agent file), by name.
    pub fn owner(&self, path: &Path) -> Option<&str> {
        self.active.iter().find(|a| path.starts_with(&a.folder)).map(|a| a.manifest.name.as_str())
    }

    /// The plugin that brought the MCP server called `server` in the session.
    pub fn mcp_owner(&self, server: &str) -> Option<&str> {
        self.active
            .iter()
            .filter(|a| a.runs)
            .find(|a| a.manifest.mcp.keys().any(|s| mcp_name(&a.manifest.name, s) == server))
            .map(|a| a.manifest.name.as_str())
    }

    /// The skill folders of the enabled plugins.
    pub fn skill_roots(&self) -> Vec<agent_skills::SkillRoot> {
        self.active
            .iter()
            .flat_map(|a| a.manifest.skills.iter().map(|dir| a.folder.join(dir)))
            .map(|dir| agent_skills::SkillRoot { dir, source: agent_skills::SkillSource::Plugin })
            .collect()
    }

    /// The commands of the enabled plugins, named `plugin:command`.
    pub fn commands(&self) -> crate::commands::Commands {
        let mut all = crate::commands::Commands::default();
        for active in &self.active {
            let roots: Vec<_> = active
                .manifest
                .commands
                .iter()
                .map(|dir| (active.folder.join(dir), false))
                .collect();
            let found = crate::commands::Commands::discover(&roots);
            for mut command in found.list {
                command.name = format!("{}:{}", active.manifest.name, command.name);
                all.list.push(command);
            }
            all.refused.extend(found.refused);
        }
        all
    }

    /// The agent definitions of the enabled plugins, named `plugin:agent`; a mode a definition
    /// asks for is dropped, since a plugin grants nothing.
    pub fn agents(&self) -> (Vec<AgentDefinition>, Vec<(PathBuf, String)>) {
        let mut found = Vec::new();
        let mut refused = Vec::new();
        for active in &self.active {
            for entry in &active.manifest.agents {
                let path = active.folder.join(entry);
                let files = if path.is_dir() {
                    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|ext| ext == "md"))
                        .collect();
                    files.sort();
                    files
                } else {
                    vec![path]
                };
                for file in files {
                    let text =
                        tree::read_capped(&file, agent_skills::definition::MAX_DEFINITION_BYTES);
                    let parsed = text.map_err(|e| e.to_string()).and_then(|text| {
                        agent_skills::definition::parse(&text, DefinitionSource::User, Some(&file))
                            .map_err(|e| e.to_string())
                    });
                    match parsed {
                        Ok(mut definition) => {
                            definition.name =
                                format!("{}:{}", active.manifest.name, definition.name);
                            if definition.permission_mode.take().is_some() {
                                definition
                                    .ignored
                                    .push("permissionMode (a plugin grants nothing)".to_owned());
                            }
                            found.push(definition);
                        }
                        Err(why) => refused.push((file, why)),
                    }
                }
            }
        }
        (found, refused)
    }

    /// Adds the hooks, MCP servers and language servers of the plugins that may run to the
    /// config file's tables; the user's own entries of the same name win.
    pub fn merge_into(&mut self, file: &mut crate::config::ConfigFile) {
        let required = file.plugins.required_servers.clone();
        for active in self.active.iter().filter(|a| a.runs) {
            let name = &active.manifest.name;
            for hook in &active.manifest.hooks {
                if let Some(matcher) = &hook.matcher
                    && let Err(err) =
                        agent_exec::Hook::new(agent_exec::HookEvent::PreToolUse, String::new())
                            .matcher(matcher)
                {
                    self.notes
                        .push(format!("plugin `{name}`: a {} hook left out: {err}", hook.event));
                    continue;
                }
                file.hooks.entry(hook.event.clone()).or_default().push(HookEntry {
                    matcher: hook.matcher.clone(),
                    command: hook.command.clone(),
                    timeout_sec: hook.timeout_sec,
                    fail_closed: false,
                });
            }
            for (server, definition) in &active.manifest.mcp {
                let full = mcp_name(name, server);
                if file.mcp_servers.contains_key(&full) {
                    continue;
                }
                match crate::mcp::server_config(&full, definition, &|var| std::env::var(var).ok()) {
                    Ok(mut config) => {
                        config.required = required.contains(&full);
                        // A Python or Node server may take long to start on a loaded machine.
                        if config.required {
                            config.startup_timeout_sec = config.startup_timeout_sec.max(120.0);
                        }
                        file.mcp_servers.insert(full, config);
                    }
                    Err(err) => self
                        .notes
                        .push(format!("plugin `{name}`: MCP server `{server}` left out: {err}")),
                }
            }
            for server in &active.manifest.lsp {
                if file.lsp.languages.contains_key(&server.name) {
                    continue;
                }
                let table =
                    serde_json::json!({"command": server.command, "file_types": server.file_types});
                match serde_json::from_value::<agent_lsp::ServerConfig>(table) {
                    Ok(mut config) => {
                        config.language.clone_from(&server.name);
                        file.lsp.languages.insert(server.name.clone(), config);
                    }
                    Err(err) => self.notes.push(format!(
                        "plugin `{name}`: LSP server `{}` left out: {err}",
                        server.name
                    )),
                }
            }
        }
    }
}

/// An MCP server's name in the session: `plugin-server`, kept to the characters a tool name
/// may hold.
pub fn mcp_name(plugin: &str, server: &str) -> String {
    let clean: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' })
        .collect();
    format!("{plugin}-{clean}")
}

fn read_active(
    scope: Scope,
    folder: &Path,
    name: &str,
    table: &PluginsTable,
) -> crate::Result<Active> {
    tree::files(folder)?;
    let manifest = manifest::read(folder, name)?;
    let lines = runs(&manifest, folder)?;
    let recorded = is_trusted(folder, &fingerprint(&lines, folder)?)?;
    let allowed = table.run_untrusted == Some(true);
    // A project's store can come with a cloned repository: unless this user installed the
    // plugin there (which records it with the user's data), none of it loads, its text
    // included, as a project's own skills wait for the user's yes.
    if scope == Scope::Project && !recorded && !allowed {
        crate::error::bail!(
            "this project's copy is not trusted on this machine (`agent plugin install --scope \
             project` installs it for you)"
        );
    }
    let runs = lines.is_empty() || recorded || allowed;
    Ok(Active { scope, folder: folder.to_path_buf(), manifest, runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugins_commands_are_namespaced_and_named_in_help() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("kit");
        std::fs::create_dir_all(folder.join("commands/git")).unwrap();
        std::fs::write(folder.join("commands/review.md"), "---\ndescription: Review\n---\nGo")
            .unwrap();
        std::fs::write(folder.join("commands/git/commit.md"), "Commit").unwrap();
        let manifest = manifest::read(&folder, "kit").unwrap();
        let active = Active { scope: Scope::User, folder: folder.clone(), manifest, runs: true };
        let loaded = Loaded { active: vec![active], notes: Vec::new() };
        let help = loaded.commands().help();
        assert_eq!(help, "  /kit:git:commit  (no description)\n  /kit:review  Review\n");
        assert_eq!(loaded.owner(&folder.join("commands/review.md")), Some("kit"));
        assert_eq!(loaded.owner(dir.path()), None);
    }
}
