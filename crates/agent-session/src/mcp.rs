//! A project's `.mcp.json` (Claude Code's format), whose servers start only once the user has
//! approved them for that project.
//!
//! A server in `.mcp.json` is a command that a repository asks to run on the user's machine,
//! outside the sandbox, as soon as a session starts: a cloned repository must not be able to run
//! anything by being opened. So each server runs only after the user said yes to exactly its
//! definition in exactly this project: the REPL asks once and remembers, `exec` and `tools` never
//! ask and leave unapproved servers out (saying so on stderr), and `agent mcp approve` approves
//! without a session. A definition that changed since it was approved is asked about again. The
//! approvals live in `approved-mcp.json` next to the `sessions` directory, as the trusted project
//! hooks do (`hooks.rs`).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use crate::error::{Context, bail, invalid};
use agent_mcp::ServerConfig;
use serde_json::{Map, Value};

use crate::{Frontend, hooks::Trust, log::SessionLog};

/// How variables are looked up (the process environment, or a test's).
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where a project keeps its MCP servers, relative to the workspace.
pub const PROJECT_MCP: &str = ".mcp.json";

/// One server of the project file.
#[derive(Debug)]
pub struct ProjectServer {
    /// The server's name in the project file.
    pub name: String,
    /// The definition as the file has it: what an approval is given for.
    pub definition: String,
    /// The server as the client starts it, or why it cannot be started.
    pub config: crate::Result<ServerConfig>,
    /// Whether the user approved this exact definition for this project.
    pub approved: bool,
}

/// The project's servers, except those a `[mcp_servers]` table of the same name replaces;
/// empty when the workspace has no `.mcp.json`.
pub fn load(
    workspace: &Path,
    configured: &BTreeMap<String, ServerConfig>,
) -> crate::Result<Vec<ProjectServer>> {
    load_with(workspace, configured, &Approvals::load()?)
}

fn load_with(
    workspace: &Path,
    configured: &BTreeMap<String, ServerConfig>,
    approvals: &Approvals,
) -> crate::Result<Vec<ProjectServer>> {
    let path = workspace.join(PROJECT_MCP);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let file: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let servers = match file.get("mcpServers") {
        None => return Ok(Vec::new()),
        Some(Value::Object(servers)) => servers.clone(),
        Some(_) => crate::error::bail!("{}: `mcpServers` is not an object", path.display()),
    };
    let approved = approvals.project(workspace);
    Ok(servers
        .into_iter()
        .filter(|(name, _)| !configured.contains_key(name))
        .map(|(name, definition)| {
            let config = server_config(&name, &definition, &|var| std::env::var(var).ok());
            let definition = definition.to_string();
            let approved = approved.get(&name) == Some(&definition);
            ProjectServer { name, definition, config, approved }
        })
        .collect())
}

/// A `.mcp.json` entry as a server table: `{command, args, env}` for stdio (`type` absent or
/// `"stdio"`), `{type: "http", url, headers}` for streamable HTTP. Claude Code's `${VAR}` and
/// `${VAR:-default}` are expanded in those values from our environment.
pub(crate) fn server_config(
    name: &str,
    definition: &Value,
    env: Env<'_>,
) -> crate::Result<ServerConfig> {
    let text = |key: &str| -> crate::Result<Option<String>> {
        match definition.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(expand(text, env))),
            Some(_) => bail!("`{key}` is not a string"),
        }
    };
    let pairs = |key: &str| -> crate::Result<BTreeMap<String, String>> {
        match definition.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(v) => Ok((k.clone(), expand(v, env))),
                    _ => Err(invalid!("`{key}.{k}` is not a string")),
                })
                .collect(),
            Some(_) => bail!("`{key}` is not an object"),
        }
    };
    let kind = text("type")?;
    let config = match kind.as_deref() {
        None | Some("stdio") => {
            let command = text("command")?.context("it has neither `command` nor `url`")?;
            let args = match definition.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(args)) => args
                    .iter()
                    .map(|arg| {
                        arg.as_str()
                            .map(|arg| expand(arg, env))
                            .context("`args` holds a non-string")
                    })
                    .collect::<crate::Result<_>>()?,
                Some(_) => bail!("`args` is not an array"),
            };
            ServerConfig { env: pairs("env")?, ..ServerConfig::stdio(command, args) }
        }
        Some("http") => {
            let url = text("url")?.context("an http server needs `url`")?;
            ServerConfig { http_headers: pairs("headers")?, ..ServerConfig::http(url) }
        }
        Some("sse") => bail!("`sse` servers are not supported: only stdio and streamable http"),
        Some(other) => bail!("unknown `type` `{other}`"),
    };
    config.check(name)?;
    Ok(config)
}

/// Expands `${VAR}` and `${VAR:-default}` from our environment; an unset variable without a
/// default becomes empty, as in Claude Code. A variable that looks like a secret
/// (`sandbox::is_secret`: `*_TOKEN`, `OPENAI_API_KEY`, …) is never expanded, as if unset: a
/// repository's file must not be able to send the user's keys to a server of its choosing. A
/// server that needs a secret is configured in the user's own config file instead.
fn expand(text: &str, env: Env<'_>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &rest[start + 2..start + end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        let secret = agent_exec::sandbox::is_secret(std::ffi::OsStr::new(var));
        match env(var) {
            Some(value) if !value.is_empty() && !secret => out.push_str(&value),
            _ => out.push_str(default.unwrap_or_default()),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// The approvals file: workspace path → server name → the definition approved.
#[derive(Debug)]
pub struct Approvals {
    file: PathBuf,
    known: BTreeMap<String, BTreeMap<String, String>>,
}

impl Approvals {
    /// Reads the user's approvals, `approved-mcp.json` beside the `sessions` directory.
    pub fn load() -> crate::Result<Self> {
        let root = SessionLog::root()?;
        Ok(Self::at(root.parent().unwrap_or(&root).join("approved-mcp.json")))
    }

    /// Reads the approvals in `file`; a missing or unreadable file approves nothing.
    fn at(file: PathBuf) -> Self {
        let known = match std::fs::read_to_string(&file) {
            Ok(json) => serde_json::from_str(&json).unwrap_or_default(),
            Err(_) => BTreeMap::new(),
        };
        Self { file, known }
    }

    fn key(workspace: &Path) -> String {
        workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf()).display().to_string()
    }

    fn project(&self, workspace: &Path) -> BTreeMap<String, String> {
        self.known.get(&Self::key(workspace)).cloned().unwrap_or_default()
    }

    /// Approves `server`'s present definition for `workspace`, and saves.
    pub fn approve(&mut self, workspace: &Path, servers: &[&ProjectServer]) -> crate::Result<()> {
        let project = self.known.entry(Self::key(workspace)).or_default();
        for server in servers {
            project.insert(server.name.clone(), server.definition.clone());
        }
        let file = &self.file;
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(&self.known)?;
        std::fs::write(file, json).with_context(|| format!("writing {}", file.display()))
    }
}

/// How a server is started, for the user to judge: its command line or URL, and the names (not
/// the values) of what it sets.
pub fn describe(server: &ProjectServer) -> String {
    let definition: Map<String, Value> =
        serde_json::from_str(&server.definition).unwrap_or_default();
    let mut parts = Vec::new();
    if let Some(url) = definition.get("url").and_then(Value::as_str) {
        parts.push(format!(
            "{} {url}",
            definition.get("type").and_then(Value::as_str).unwrap_or("http")
        ));
    } else {
        let mut line =
            vec![definition.get("command").and_then(Value::as_str).unwrap_or("?").to_owned()];
        if let Some(args) = definition.get("args").and_then(Value::as_array) {
            line.extend(
                args.iter().map(|arg| arg.as_str().map_or_else(|| arg.to_string(), str::to_owned)),
            );
        }
        parts.push(line.join(" "));
    }
    for key in ["env", "headers"] {
        if let Some(map) = definition.get(key).and_then(Value::as_object)
            && !map.is_empty()
        {
            let names: Vec<&str> = map.keys().map(String::as_str).collect();
            parts.push(format!("{key}: {}", names.join(", ")));
        }
    }
    // The project's file is not the user's own writing: what it says is shown, never obeyed.
    crate::visible::visible_line(&parts.join("; ")).into_owned()
}

/// The project servers that may start in this session: the approved ones, plus, in the REPL,
/// those the user approves now. Unapproved ones are left out and named on stderr; broken ones
/// are reported and left out.
pub fn startable(
    workspace: &Path,
    configured: &BTreeMap<String, ServerConfig>,
    trust: Trust,
    frontend: &dyn Frontend,
) -> crate::Result<BTreeMap<String, ServerConfig>> {
    let mut ask = |waiting: &[&ProjectServer]| -> crate::Result<bool> {
        let mut lines = vec![format!(
            "{PROJECT_MCP} asks to start these MCP servers on your machine, outside the sandbox:"
        )];
        for server in waiting {
            let name = crate::visible::visible_line(&server.name);
            lines.push(format!("  {name}: {}", describe(server)));
        }
        Ok(frontend.confirm(&lines, "approve them for this project?"))
    };
    let can_ask = trust == Trust::Ask && frontend.can_ask();
    let ask: Option<&mut Asker<'_>> = if can_ask { Some(&mut ask) } else { None };
    select(workspace, configured, &mut Approvals::load()?, ask, frontend)
}

/// Puts unapproved servers to the user; `true` approves them all.
type Asker<'a> = dyn FnMut(&[&ProjectServer]) -> crate::Result<bool> + 'a;

/// [`startable`] with the approvals and the question given.
fn select(
    workspace: &Path,
    configured: &BTreeMap<String, ServerConfig>,
    approvals: &mut Approvals,
    ask: Option<&mut Asker<'_>>,
    frontend: &dyn Frontend,
) -> crate::Result<BTreeMap<String, ServerConfig>> {
    // A broken project file must not stop the user's own session: it is reported and skipped.
    let servers = load_with(workspace, configured, approvals).unwrap_or_else(|err| {
        frontend.say(&format!("warning: {err}; the project's MCP servers are left out"));
        Vec::new()
    });
    let mut startable = BTreeMap::new();
    let mut waiting = Vec::new();
    for server in &servers {
        match &server.config {
            Err(why) => {
                let name = crate::visible::visible_line(&server.name);
                let why = crate::visible::visible(&why.to_string()).into_owned();
                frontend.say(&format!("{PROJECT_MCP}: server `{name}` is left out: {why}"));
            }
            Ok(config) if server.approved => {
                startable.insert(server.name.clone(), config.clone());
            }
            Ok(_) => waiting.push(server),
        }
    }
    if waiting.is_empty() {
        return Ok(startable);
    }
    let names: Vec<String> = waiting.iter().map(|server| format!("`{}`", server.name)).collect();
    let Some(ask) = ask else {
        frontend.say(&format!(
            "{PROJECT_MCP} defines MCP server(s) {} not approved for this project, so they do not \
             start; review them with `agent mcp list` and approve them with `agent mcp approve` \
             (or start `agent` in this workspace)",
            names.join(", ")
        ));
        return Ok(startable);
    };
    if !ask(&waiting)? {
        frontend.say("the project's MCP servers will not start");
        return Ok(startable);
    }
    approvals.approve(workspace, &waiting)?;
    for server in waiting {
        if let Ok(config) = &server.config {
            startable.insert(server.name.clone(), config.clone());
        }
    }
    Ok(startable)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(definition: Value, expect: Result<ServerConfig, &str>) {
        let got = server_config("s", &definition, &|_| None);
        match (got, expect) {
            (Ok(got), Ok(expect)) => assert_eq!(got, expect),
            (Err(got), Err(expect)) => assert!(got.to_string().contains(expect), "{got}"),
            (got, expect) => panic!("got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn claude_code_definitions_become_server_tables() {
        let stdio = ServerConfig {
            env: [("K".to_owned(), "v".to_owned())].into(),
            ..ServerConfig::stdio("npx", vec!["-y".into(), "pkg".into()])
        };
        check(
            json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}),
            Ok(stdio.clone()),
        );
        check(
            json!({"type": "stdio", "command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}),
            Ok(stdio),
        );
        let http = ServerConfig {
            http_headers: [("X-A".to_owned(), "b".to_owned())].into(),
            ..ServerConfig::http("http://127.0.0.1:1/mcp")
        };
        check(
            json!({"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-A": "b"}}),
            Ok(http),
        );
        check(
            json!({"type": "sse", "url": "http://h/sse"}),
            Err("`sse` servers are not supported"),
        );
        check(json!({"args": []}), Err("neither `command` nor `url`"));
        check(json!({"command": "x", "args": "a b"}), Err("`args` is not an array"));
        check(json!({"command": 5}), Err("`command` is not a string"));
        check(json!({"type": "ws", "url": "x"}), Err("unknown `type` `ws`"));
    }

    #[test]
    fn variables_expand_with_defaults_and_never_to_secrets() {
        let env = |var: &str| match var {
            "HOST" => Some("127.0.0.1".to_owned()),
            "GITHUB_TOKEN" | "OPENAI_API_KEY" => Some("sk-never".to_owned()),
            _ => None,
        };
        let check = |text: &str, expect: &str| assert_eq!(expand(text, &env), expect, "{text}");
        check("http://${HOST}:1/mcp", "http://127.0.0.1:1/mcp");
        check("${UNSET:-fallback}", "fallback");
        check("x${UNSET}y", "xy");
        check("no ${ end", "no ${ end");
        // A secret-looking name is never read, though set.
        check("Bearer ${GITHUB_TOKEN}", "Bearer ");
        check("${OPENAI_API_KEY:-none}", "none");
    }

    #[test]
    fn the_repl_asks_once_per_definition_and_remembers_only_a_yes() {
        let workspace = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let write = |marker: &str| {
            let file = json!({"mcpServers": {"s": {"command": "touch", "args": [marker]}}});
            std::fs::write(workspace.path().join(PROJECT_MCP), file.to_string()).unwrap();
        };
        let asked = std::cell::Cell::new(0);
        // Each run reads the approvals afresh, as a new session does.
        let run = |answer: bool| -> Vec<String> {
            let mut approvals = Approvals::at(store.path().join("approved-mcp.json"));
            let mut ask = |_: &[&ProjectServer]| {
                asked.set(asked.get() + 1);
                Ok(answer)
            };
            let chosen = select(
                workspace.path(),
                &BTreeMap::new(),
                &mut approvals,
                Some(&mut ask),
                &crate::Silent,
            );
            chosen.unwrap().into_keys().collect()
        };
        write("a");
        assert_eq!((run(false), asked.get()), (vec![], 1));
        // A no is not remembered: the next session asks again.
        assert_eq!((run(true), asked.get()), (vec!["s".to_owned()], 2));
        // A yes is: no question for the same definition.
        assert_eq!((run(false), asked.get()), (vec!["s".to_owned()], 2));
        // A changed definition asks again.
        write("b");
        assert_eq!((run(false), asked.get()), (vec![], 3));
        // Never asked (exec): only approved definitions start.
        let mut approvals = Approvals::at(store.path().join("approved-mcp.json"));
        let chosen =
            select(workspace.path(), &BTreeMap::new(), &mut approvals, None, &crate::Silent)
                .unwrap();
        assert!(chosen.is_empty());
    }
}
