//! The three plugin formats read into one model: Claude Code's `.claude-plugin/plugin.json`,
//! Codex's `.codex-plugin/plugin.json` and Agent Plugins v1's root `plugin.json`, each with the
//! default folders its format names (docs/plugins.md has the mapping table).
//!
//! A manifest is input from whoever published the plugin: every file is read with a size cap,
//! every path it names must stay inside the plugin's folder (no absolute path, no `..`, no
//! symlink leading out), a field we do not know is kept and reported, and a field that would
//! grant a permission is dropped and reported.

use std::{
    collections::BTreeMap,
    path::{Component, Path, PathBuf},
};

use serde_json::{Map, Value};

use super::tree;
use crate::error::{Context, bail};

/// The largest manifest, hooks, MCP or LSP file read, in bytes.
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024;

/// Which format a plugin's manifest is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `.claude-plugin/plugin.json` (or Claude Code's default folders without one).
    ClaudeCode,
    /// `.codex-plugin/plugin.json`.
    Codex,
    /// Agent Plugins v1: a root `plugin.json`.
    AgentPlugins,
}

impl Format {
    /// The format's name in `agent plugin list`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::AgentPlugins => "agent-plugins-v1",
        }
    }
}

/// One hook a plugin brings, as our `[[hooks.EVENT]]` table would hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginHook {
    /// The event (`PreToolUse`, …).
    pub event: String,
    /// The matcher over tool names, when one is given.
    pub matcher: Option<String>,
    /// The command, `${CLAUDE_PLUGIN_ROOT}` already replaced by the plugin's folder.
    pub command: String,
    /// Its time limit in seconds.
    pub timeout_sec: Option<u64>,
}

/// One language server a plugin brings (`.lsp.json`'s shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginLsp {
    /// The entry's key, used as the language's name.
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// File extensions without the dot.
    pub file_types: Vec<String>,
}

/// A plugin read from its folder: what it is and what it brings.
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    /// Its name (kebab-case), the namespace of its commands.
    pub name: String,
    /// Its version, when the manifest gives one.
    pub version: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// The format it was read as.
    pub format: Option<Format>,
    /// Folders whose sub-folders are skills.
    pub skills: Vec<PathBuf>,
    /// Folders of Markdown commands.
    pub commands: Vec<PathBuf>,
    /// Folders or files of agent definitions.
    pub agents: Vec<PathBuf>,
    /// The hooks, in file order.
    pub hooks: Vec<PluginHook>,
    /// MCP servers by name, as `.mcp.json` entries.
    pub mcp: BTreeMap<String, Value>,
    /// Language servers.
    pub lsp: Vec<PluginLsp>,
    /// Fields and entries we do not use, said by `install` and `list`.
    pub unknown: Vec<String>,
    /// What was dropped because a plugin may not grant it (an allow rule, a mode).
    pub neutralized: Vec<String>,
}

/// The manifest keys each format defines; anything else is reported as unknown.
const KNOWN: &[&str] = &[
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "commands",
    "agents",
    "skills",
    "hooks",
    "mcpServers",
    "lspServers",
    "outputStyles",
    "interface",
    "apps",
    "displayName",
    "category",
    "tags",
];

/// Keys that would give the plugin power over the user's policy: never honoured.
const GRANTS: &[&str] = &[
    "permissions",
    "permissionMode",
    "permission_mode",
    "defaultMode",
    "allow",
    "allowedTools",
    "allowed-tools",
    "sandbox",
    "dangerouslySkipPermissions",
];

/// Reads the plugin in `root` (which must already be checked by `tree::files`).
pub fn read(root: &Path, fallback_name: &str) -> crate::Result<Manifest> {
    let (format, file) = [
        (Format::ClaudeCode, ".claude-plugin/plugin.json"),
        (Format::Codex, ".codex-plugin/plugin.json"),
        (Format::AgentPlugins, "plugin.json"),
    ]
    .into_iter()
    .find(|(_, file)| root.join(file).is_file())
    .map_or((Format::ClaudeCode, None), |(format, file)| (format, Some(file)));
    let mut manifest = Manifest { format: Some(format), ..Manifest::default() };
    let object = match file {
        Some(file) => match read_json(root, file)? {
            Value::Object(object) => object,
            _ => bail!("{file} is not a JSON object"),
        },
        None => Map::new(),
    };
    manifest.name = match object.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(_) => bail!("the manifest's `name` is not a string"),
        None => fallback_name.to_owned(),
    };
    check_name(&manifest.name)?;
    manifest.version = object.get("version").and_then(Value::as_str).map(str::to_owned);
    manifest.description = object.get("description").and_then(Value::as_str).map(str::to_owned);
    for key in object.keys() {
        if GRANTS.contains(&key.as_str()) {
            manifest.neutralized.push(format!("manifest field `{key}` (a plugin grants nothing)"));
        } else if !KNOWN.contains(&key.as_str()) {
            manifest.unknown.push(format!("manifest field `{key}`"));
        }
    }
    let ctx = Reader { root, manifest: &mut manifest };
    ctx.components(format, &object)?;
    neutralize_settings(root, &mut manifest)?;
    Ok(manifest)
}

/// A plugin name: what Claude Code's validator accepts (lowercase letters, digits, hyphens).
fn check_name(name: &str) -> crate::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.contains("--");
    if !ok {
        bail!(
            "plugin name `{}` may use only lowercase letters, digits and single hyphens",
            crate::visible::visible_line(name)
        );
    }
    Ok(())
}

struct Reader<'a> {
    root: &'a Path,
    manifest: &'a mut Manifest,
}

impl Reader<'_> {
    fn components(self, format: Format, object: &Map<String, Value>) -> crate::Result<()> {
        let root = self.root;
        let manifest = self.manifest;
        // Each format's default folders; a manifest's paths add to them (Claude Code's rule).
        let defaults: &[(&str, &str)] = match format {
            Format::ClaudeCode => &[
                ("skills", "skills"),
                ("commands", "commands"),
                ("agents", "agents"),
                ("hooks", "hooks/hooks.json"),
                ("mcp", ".mcp.json"),
                ("lsp", ".lsp.json"),
            ],
            Format::Codex => {
                &[("skills", "skills"), ("mcp", ".mcp.json"), ("hooks", "hooks/hooks.json")]
            }
            Format::AgentPlugins => &[("skills", "skills"), ("mcp", "mcp.json")],
        };
        let mut skills = Vec::new();
        let mut commands = Vec::new();
        let mut agents = Vec::new();
        let mut hook_files = Vec::new();
        let mut mcp_files = Vec::new();
        let mut lsp_files = Vec::new();
        for (kind, path) in defaults {
            let path = PathBuf::from(path);
            if !root.join(&path).exists() {
                continue;
            }
            match *kind {
                "skills" => skills.push(path),
                "commands" => commands.push(path),
                "agents" => agents.push(path),
                "hooks" => hook_files.push(path),
                "mcp" => mcp_files.push(path),
                _ => lsp_files.push(path),
            }
        }
        for (key, list) in
            [("skills", &mut skills), ("commands", &mut commands), ("agents", &mut agents)]
        {
            for path in paths(object.get(key), key)? {
                let path = inside(root, &path)?;
                if !list.contains(&path) {
                    list.push(path);
                }
            }
        }
        let mut inline_hooks = Vec::new();
        match object.get("hooks") {
            Some(Value::Object(hooks)) => inline_hooks.push(Value::Object(hooks.clone())),
            other => {
                for path in paths(other, "hooks")? {
                    let path = inside(root, &path)?;
                    if !hook_files.contains(&path) {
                        hook_files.push(path);
                    }
                }
            }
        }
        let mut inline_mcp = Vec::new();
        let mut inline_lsp = Vec::new();
        for (key, files, inline) in [
            ("mcpServers", &mut mcp_files, &mut inline_mcp),
            ("lspServers", &mut lsp_files, &mut inline_lsp),
        ] {
            match object.get(key) {
                Some(Value::Object(map)) => inline.push(Value::Object(map.clone())),
                other => {
                    for path in paths(other, key)? {
                        let path = inside(root, &path)?;
                        if !files.contains(&path) {
                            files.push(path);
                        }
                    }
                }
            }
        }
        manifest.skills = skills;
        manifest.commands = commands;
        manifest.agents = agents;
        let root_text = root.display().to_string();
        for file in &hook_files {
            inline_hooks.push(read_json(root, file)?);
        }
        for value in inline_hooks {
            hooks(&value, &root_text, manifest)?;
        }
        for file in &mcp_files {
            inline_mcp.push(read_json(root, file)?);
        }
        for value in inline_mcp {
            // `.mcp.json` wraps its servers in `mcpServers`; an inline table may not.
            let servers = value.get("mcpServers").cloned().unwrap_or(value);
            let Value::Object(servers) = servers else {
                bail!("an MCP servers table is not an object")
            };
            for (name, definition) in servers {
                manifest.mcp.insert(name, substitute_value(definition, &root_text));
            }
        }
        for file in &lsp_files {
            inline_lsp.push(read_json(root, file)?);
        }
        for value in inline_lsp {
            lsp(&value, &root_text, manifest)?;
        }
        Ok(())
    }
}

/// A component field: one path or a list of them.
fn paths(value: Option<&Value>, key: &str) -> crate::Result<Vec<String>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(path)) => Ok(vec![path.clone()]),
        Some(Value::Array(list)) => list
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).context(format!("`{key}` holds a non-string"))
            })
            .collect(),
        Some(_) => bail!("`{key}` is neither a path nor a list of paths"),
    }
}

/// `path` as written in a manifest, relative to the plugin's folder: refused when absolute or
/// when a `..` or a symlink would lead it out of the folder.
pub fn inside(root: &Path, path: &str) -> crate::Result<PathBuf> {
    let relative = Path::new(path);
    let mut clean = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => clean.push(part),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => bail!(
                "the path `{}` leads out of the plugin's folder",
                crate::visible::visible_line(path)
            ),
        }
    }
    tree::contained(root, &root.join(&clean))?;
    Ok(clean)
}

/// Reads a JSON file of the plugin, at most [`MAX_MANIFEST_BYTES`].
fn read_json(root: &Path, relative: impl AsRef<Path>) -> crate::Result<Value> {
    let path = root.join(relative.as_ref());
    tree::contained(root, &path)?;
    let text = tree::read_capped(&path, MAX_MANIFEST_BYTES)?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Replaces `${CLAUDE_PLUGIN_ROOT}` (and the portable `${PLUGIN_ROOT}`) with the folder.
pub fn substitute(text: &str, root: &str) -> String {
    text.replace("${CLAUDE_PLUGIN_ROOT}", root).replace("${PLUGIN_ROOT}", root)
}

fn substitute_value(value: Value, root: &str) -> Value {
    match value {
        Value::String(text) => Value::String(substitute(&text, root)),
        Value::Array(list) => {
            Value::Array(list.into_iter().map(|v| substitute_value(v, root)).collect())
        }
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, substitute_value(v, root))).collect())
        }
        other => other,
    }
}

/// Claude Code's hooks file: `{"hooks": {EVENT: [{matcher, hooks: [{type, command, timeout}]}]}}`.
fn hooks(value: &Value, root: &str, manifest: &mut Manifest) -> crate::Result<()> {
    let events = value.get("hooks").unwrap_or(value);
    let Value::Object(events) = events else { bail!("a hooks table is not an object") };
    for (event, groups) in events {
        if event.parse::<agent_exec::HookEvent>().is_err() {
            manifest.unknown.push(format!("hook event `{event}` (not one of ours)"));
            continue;
        }
        let Value::Array(groups) = groups else { bail!("hooks.{event} is not a list") };
        for group in groups {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let matcher = matcher.filter(|m| !m.is_empty() && *m != "*").map(str::to_owned);
            let entries = group.get("hooks").and_then(Value::as_array).cloned().unwrap_or_default();
            for entry in entries {
                let kind = entry.get("type").and_then(Value::as_str).unwrap_or("command");
                let Some(command) =
                    entry.get("command").and_then(Value::as_str).filter(|_| kind == "command")
                else {
                    manifest
                        .unknown
                        .push(format!("{event} hook of type `{kind}` (only commands run)"));
                    continue;
                };
                manifest.hooks.push(PluginHook {
                    event: event.clone(),
                    matcher: matcher.clone(),
                    command: substitute(command, root),
                    timeout_sec: entry.get("timeout").and_then(Value::as_u64),
                });
            }
        }
    }
    Ok(())
}

/// `.lsp.json`: `{NAME: {command, args, extensionToLanguage}}`.
fn lsp(value: &Value, root: &str, manifest: &mut Manifest) -> crate::Result<()> {
    let Value::Object(servers) = value else { bail!("an LSP servers table is not an object") };
    for (name, server) in servers {
        let Some(program) = server.get("command").and_then(Value::as_str) else {
            manifest.unknown.push(format!("LSP server `{name}` without a command"));
            continue;
        };
        let mut command = vec![substitute(program, root)];
        for arg in server.get("args").and_then(Value::as_array).into_iter().flatten() {
            command.extend(arg.as_str().map(|arg| substitute(arg, root)));
        }
        let file_types: Vec<String> = server
            .get("extensionToLanguage")
            .and_then(Value::as_object)
            .map(|map| map.keys().map(|ext| ext.trim_start_matches('.').to_owned()).collect())
            .unwrap_or_default();
        if file_types.is_empty() {
            manifest.unknown.push(format!("LSP server `{name}` without extensionToLanguage"));
            continue;
        }
        manifest.lsp.push(PluginLsp { name: name.clone(), command, file_types });
    }
    Ok(())
}

/// Claude Code lets a plugin ship a root `settings.json`; nothing in it is honoured here, and
/// what would grant a permission is said.
fn neutralize_settings(root: &Path, manifest: &mut Manifest) -> crate::Result<()> {
    for file in ["settings.json", ".claude/settings.json", ".claude-plugin/settings.json"] {
        if !root.join(file).is_file() {
            continue;
        }
        let value = read_json(root, file)?;
        let keys: Vec<String> =
            value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        for key in keys {
            manifest.neutralized.push(format!("{file} `{key}` (a plugin's settings are not read)"));
        }
    }
    Ok(())
}
