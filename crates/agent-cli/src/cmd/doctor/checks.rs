//! The checks `agent doctor` runs, each one area of what a session needs, in the order a session
//! meets them.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use agent_core::{Item, Message, ModelEvent, ModelRequest, ToolChoice};
use agent_mcp::ServerConfig;
use futures_util::StreamExt;
use serde::Serialize;

use super::Check;
use crate::{
    Options,
    config::{self, ConfigFile},
    hooks::Trust,
    mcp::list::State,
    session::SessionLog,
    settings::Settings,
};

/// Above this the session store earns a warning: it grows with every session and is never pruned.
const STORE_WARN_BYTES: u64 = 5 << 30;

/// The versions of what answers for the agent's behaviour.
#[derive(Debug, Serialize)]
pub(crate) struct Versions {
    pub(crate) agent: &'static str,
    pub(crate) os: &'static str,
    pub(crate) arch: &'static str,
    /// The kernel release, which decides the sandbox (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kernel: Option<String>,
}

pub(crate) fn versions() -> Versions {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    Versions {
        agent: env!("CARGO_PKG_VERSION"),
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
        kernel: kernel.map(|text| text.trim().to_owned()),
    }
}

/// Runs every check; returns them with the secrets the report must not show.
pub(crate) fn all(
    options: &Options,
    timeout: Duration,
) -> anyhow::Result<(Vec<Check>, Vec<String>)> {
    let mut checks = Vec::new();
    let (config_check, salvaged) = config_file(options);
    let broken = config_check.status == super::Status::Fail;
    checks.push(config_check);
    // A broken file still lets the rest be checked: with the defaults, flags and environment,
    // and the MCP servers the file defines when that table alone can be read.
    let mut settings = if broken {
        let mut fallback = options.overrides();
        fallback.config = Some(PathBuf::from("/dev/null"));
        let mut settings = Settings::load(&fallback)?;
        settings.file.mcp_servers = salvaged;
        settings
    } else {
        Settings::load(&options.overrides())?
    };
    settings.options.config.clone_from(&options.config);
    let mut secrets: Vec<String> =
        settings.model.api_key.iter().map(|key| key.expose().to_owned()).collect();
    for server in settings.file.mcp_servers.values() {
        secrets.extend(server.env.values().chain(server.http_headers.values()).cloned());
    }
    let runtime = crate::setup::tokio_runtime()?;
    checks.push(instructions(&settings)?);
    checks.push(model(&settings, &runtime, timeout));
    checks.push(sandbox(&settings));
    checks.extend(mcp(&settings, &runtime)?);
    checks.extend(lsp(&settings, &runtime)?);
    checks.extend(skills(&settings)?);
    checks.extend(agents(&settings)?);
    checks.extend(plugins(&settings));
    checks.push(sessions());
    Ok((checks, secrets))
}

/// The config file: found or not, and whether it loads; with the MCP servers of a broken file
/// whose `[mcp_servers]` table alone still reads.
fn config_file(options: &Options) -> (Check, BTreeMap<String, ServerConfig>) {
    let (path, named) = match (&options.config, ConfigFile::default_path()) {
        (Some(path), _) => (path.clone(), true),
        (None, Some(path)) => (path, false),
        (None, None) => {
            let check =
                Check::ok("config", "-", "no config directory here; defaults in use".into());
            return (check, BTreeMap::new());
        }
    };
    let shown = path.display().to_string();
    if !named && !path.exists() {
        let message = "not found; defaults in use".to_owned();
        return (Check::ok("config", shown, message), BTreeMap::new());
    }
    match ConfigFile::load(&path, named) {
        Ok(file) => {
            // The tables the CLI reads itself, which the config file only accepts.
            let notify = crate::notify::table(file.notify.as_ref()).err();
            let status_line = crate::status_line::table(file.status_line.as_ref()).err();
            let problem = notify
                .map(|err| ("[notify]", "Notifications", err))
                .or(status_line.map(|err| ("[status_line]", "Status line", err)));
            match problem {
                None => (Check::ok("config", shown, "loads".into()), BTreeMap::new()),
                Some((table, section, err)) => {
                    let check = Check::fail("config", shown, format!("{table}: {err:#}"))
                        .fix(format!("correct {table} as docs/cli.md ({section}) describes"));
                    (check, file.mcp_servers)
                }
            }
        }
        Err(err) => {
            let salvaged = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| text.parse::<toml::Table>().ok())
                .and_then(|mut table| table.remove("mcp_servers"))
                .and_then(|servers| servers.try_into().ok())
                .unwrap_or_default();
            let message = format!("{err:#}").replace('\n', " ");
            let fix = format!(
                "edit {shown} where the error points (docs/cli.md lists the keys and ranges); until \
                 then every command refuses to start"
            );
            (Check::fail("config", shown, message).fix(fix), salvaged)
        }
    }
}

/// The AGENTS.md files sent with the instructions, and whether the cap cut them.
fn instructions(settings: &Settings) -> anyhow::Result<Check> {
    let docs = settings.project_docs()?;
    let files: Vec<String> = docs.files.iter().map(|p| p.display().to_string()).collect();
    let found = if files.is_empty() { "none found".to_owned() } else { files.join(", ") };
    if docs.cut_bytes > 0 {
        let message = format!("{found}: {} bytes cut by the cap", docs.cut_bytes);
        return Ok(Check::warn("config", "AGENTS.md", message)
            .fix("shorten them; the model never sees what the cap leaves out"));
    }
    Ok(Check::ok("config", "AGENTS.md", found))
}

/// The profile in use, and whether its server answers a tiny request within `timeout`.
fn model(settings: &Settings, runtime: &tokio::runtime::Runtime, timeout: Duration) -> Check {
    let m = &settings.model;
    let profile = settings.profile_name.as_deref().unwrap_or("(no profile)");
    let subject = format!("{profile}: {} at {}", m.model, m.base_url);
    let elsewhere = "or choose another server with --profile or --base-url (docs/models.md)";
    if m.api_key.is_none() && config::is_openai(&m.base_url) {
        return Check::fail("model", subject, "no API key for OpenAI's API".into())
            .fix(format!("set OPENAI_API_KEY, {elsewhere}"));
    }
    // Built here rather than as a session builds it: one try, no retries, so a dead server is
    // reported at once.
    let mut config = agent_model::ClientConfig::new(m.base_url.clone(), m.model.clone());
    if let Some(key) = &m.api_key {
        config = config.with_api_key(key.clone());
    }
    config.stream = m.stream;
    config.limits = m.response.clone();
    config.retry.max_retries = 0;
    let client: Result<Box<dyn agent_core::ModelClient>, _> = match m.api {
        config::Api::Chat => agent_model::ChatClient::new(&config).map(|c| Box::new(c) as _),
        config::Api::Responses => {
            agent_model::ResponsesClient::new(&config).map(|c| Box::new(c) as _)
        }
    };
    let client = match client {
        Ok(client) => client,
        Err(err) => {
            return Check::fail("model", subject, err.to_string())
                .fix(format!("correct the profile's base_url, {elsewhere}"));
        }
    };
    let items = [Item::Message(Message::user("Reply with the one word: ok"))];
    let request = ModelRequest {
        instructions: "This is a health check; answer in one word.",
        items: &items,
        tools: &[],
        tool_choice: &ToolChoice::Auto,
        parallel_tool_calls: false,
        continuation: None,
        output_schema: None,
    };
    let started = Instant::now();
    let ask = async {
        let mut stream = client.stream(request).await?;
        while let Some(event) = stream.next().await {
            if let ModelEvent::Completed { .. } = event? {
                return Ok(true);
            }
        }
        Ok::<bool, agent_core::ModelError>(false)
    };
    // The timer is made inside the runtime, which it needs.
    let answered = runtime.block_on(async { tokio::time::timeout(timeout, ask).await });
    let ms = started.elapsed().as_millis();
    match answered {
        Ok(Ok(true)) => Check::ok("model", subject, format!("answered a tiny request in {ms} ms")),
        Ok(Ok(false)) => Check::fail("model", subject, "the response ended unfinished".into())
            .fix(format!("check the server's logs, {elsewhere}")),
        Ok(Err(err)) => Check::fail("model", subject, format!("{err}").replace('\n', " "))
            .fix(format!("start the server or check the key and model name, {elsewhere}")),
        Err(_) => Check::fail("model", subject, format!("no answer within {}s", timeout.as_secs()))
            .fix(format!("check the server is up (or give it longer with --timeout), {elsewhere}")),
    }
}

/// Whether the sandbox policy in force can be enforced on this kernel.
fn sandbox(settings: &Settings) -> Check {
    let policy = match settings.sandbox_policy() {
        Ok(policy) => policy,
        Err(err) => {
            return Check::fail("sandbox", "policy", format!("{err:#}"))
                .fix("name read-only, workspace-write or danger-full-access");
        }
    };
    let support = agent_exec::sandbox::probe().support(policy);
    let subject = policy.to_string();
    match (support.missing, support.gaps.is_empty()) {
        (Some(missing), _) => Check::fail("sandbox", subject, missing.to_string()).fix(
            "see `agent sandbox check`; `--sandbox danger-full-access` runs commands unconfined",
        ),
        (None, false) => {
            Check::warn("sandbox", subject, format!("enforced, but {}", support.gaps.join("; ")))
                .fix("a newer kernel closes these gaps; `agent sandbox check` lists them")
        }
        (None, true) => Check::ok("sandbox", subject, "enforced on this kernel".into()),
    }
}

/// Every configured and approved project MCP server started, as `agent mcp list` starts them.
fn mcp(settings: &Settings, runtime: &tokio::runtime::Runtime) -> anyhow::Result<Vec<Check>> {
    let workspace = settings.workspace()?;
    let entries = crate::mcp::entries(&settings.file.mcp_servers, &settings.plugins, &workspace)?;
    if entries.is_empty() {
        return Ok(vec![Check::ok("mcp", "-", "no MCP servers configured".into())]);
    }
    let counter = agent_model::counter_for(&settings.model.model);
    let reports = runtime.block_on(crate::mcp::list::gather(&entries, workspace, counter))?;
    let checks = reports.into_iter().map(|report| {
        let name = report.name;
        let error = report.error.unwrap_or_default().replace('\n', " ");
        match report.state {
            State::Connected => {
                let tools = report.tools.len();
                let tokens = report.schema_tokens;
                Check::ok("mcp", name, format!("connected: {tools} tools, {tokens} schema tokens"))
            }
            State::Failed => Check::fail("mcp", name.clone(), format!("did not start: {error}"))
                .fix(format!(
                    "fix its command or url (`agent mcp get {name}` shows its stderr), or set \
                     `enabled = false` under [mcp_servers.{name}]"
                )),
            State::Timeout => Check::fail("mcp", name.clone(), format!("timed out: {error}"))
                .fix(format!("raise startup_timeout_sec under [mcp_servers.{name}]")),
            State::Disabled => Check::ok("mcp", name, "disabled (enabled = false)".into()),
            State::Unapproved => {
                Check::warn("mcp", name.clone(), "in .mcp.json, not approved".into())
                    .fix(format!("read .mcp.json, then `agent mcp approve {name}`"))
            }
        }
    });
    Ok(checks.collect())
}

/// Every language server configured or found started once, as an edit would start it (in its
/// sandbox, through the `initialize` handshake), then stopped.
fn lsp(settings: &Settings, runtime: &tokio::runtime::Runtime) -> anyhow::Result<Vec<Check>> {
    let workspace = settings.workspace()?;
    let session = match settings.file.lsp.session(&workspace, None) {
        Ok(Some(session)) => session,
        Ok(None) => {
            let message = "no language servers configured or found (or [lsp] enabled = false)";
            return Ok(vec![Check::ok("lsp", "-", message.into())]);
        }
        Err(err) => {
            let check = Check::fail("lsp", "-", format!("{err:#}"))
                .fix("correct [lsp] as docs/lsp.md describes");
            return Ok(vec![check]);
        }
    };
    let results = runtime.block_on(session.try_servers());
    let checks = results.into_iter().map(|(server, started)| {
        let (language, program) = (server.language.clone(), server.program().to_owned());
        match started {
            Ok(()) => Check::ok("lsp", language, format!("{program} started and initialized")),
            Err(err) => {
                let error = err.to_string().replace('\n', " ");
                Check::fail("lsp", language.clone(), format!("{program} did not start: {error}"))
                    .fix(format!(
                        "install {program} or fix command under [lsp.{language}] (its log is \
                         server.log in the session's lsp directory), or set `enabled = false` \
                         under [lsp.{language}]"
                    ))
            }
        }
    });
    Ok(checks.collect())
}

/// The skills and custom commands found, and every folder or file refused with why.
fn skills(settings: &Settings) -> anyhow::Result<Vec<Check>> {
    let extras =
        crate::skills::for_settings(settings, Trust::OnlyTrusted, &crate::setup::Terminal)?;
    let fix =
        "fix the SKILL.md frontmatter as the problem says (docs/skills.md), or remove the folder";
    let mut checks: Vec<Check> = (extras.catalog.refused.iter())
        .map(|refused| {
            let problems: Vec<_> = refused.problems.iter().map(ToString::to_string).collect();
            let subject = refused.dir.display().to_string();
            Check::warn("skills", subject, format!("refused: {}", problems.join("; "))).fix(fix)
        })
        .collect();
    for (path, why) in &extras.commands.refused {
        checks.push(
            Check::warn("skills", path.display().to_string(), format!("command refused: {why}"))
                .fix("fix the command file as the problem says (docs/skills.md), or remove it"),
        );
    }
    let usable = extras.catalog.skills.len();
    let commands = extras.commands.list.len();
    checks.push(Check::ok("skills", "-", format!("{usable} skills, {commands} commands usable")));
    Ok(checks)
}

/// The agent definitions a `task` call may name, and every file refused with why.
fn agents(settings: &Settings) -> anyhow::Result<Vec<Check>> {
    let found = crate::agents::definitions(settings)?;
    let mut checks: Vec<Check> = (found.refused.iter())
        .map(|(path, why)| {
            Check::warn("agents", path.display().to_string(), format!("refused: {why}"))
                .fix("fix the definition's frontmatter (docs/agents.md), or remove the file")
        })
        .collect();
    checks.push(Check::ok(
        "agents",
        "-",
        format!("{} agent definitions usable", found.found.len()),
    ));
    Ok(checks)
}

/// The enabled plugins: each one refused, left without its hooks and servers, or stripped of a
/// field that would have granted something, with why; nothing when none is installed.
fn plugins(settings: &Settings) -> Vec<Check> {
    let loaded = &settings.plugins;
    let mut checks: Vec<Check> = (loaded.notes.iter())
        .map(|note| {
            Check::warn("plugins", "-", note.clone()).fix(
                "`agent plugin update NAME` reviews it again, `agent plugin remove NAME` drops it \
                 (docs/plugins.md)",
            )
        })
        .collect();
    if !loaded.active.is_empty() {
        let running = loaded.active.iter().filter(|a| a.runs).count();
        let text = format!(
            "{} plugins loaded, {running} with their hooks and servers",
            loaded.active.len()
        );
        checks.push(Check::ok("plugins", "-", text));
    }
    checks
}

/// The session store: where, how many sessions, how many bytes.
fn sessions() -> Check {
    let root = match SessionLog::root() {
        Ok(root) => root,
        Err(err) => {
            return Check::fail("sessions", "-", format!("{err:#}")).fix("set AGENT_DATA_DIR");
        }
    };
    let shown = root.display().to_string();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Check::ok("sessions", shown, "no sessions yet".into());
    };
    let count = entries.filter_map(Result::ok).filter(|e| e.path().is_dir()).count();
    let bytes = size(&root);
    let message = format!("{count} sessions, {:.1} MiB", bytes as f64 / f64::from(1 << 20));
    if bytes > STORE_WARN_BYTES {
        return Check::warn("sessions", shown.clone(), message)
            .fix(format!("remove old session folders under {shown} (nothing prunes them)"));
    }
    Check::ok("sessions", shown, message)
}

/// The bytes of the files under `dir`, links not followed.
fn size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => size(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |meta| meta.len()),
            _ => 0,
        })
        .sum()
}
