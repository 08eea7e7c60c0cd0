//! `agent mcp list` and `agent mcp get`: every server started at once (each within its own
//! startup timeout), and what became of it — its state, its tools and what their schemas cost
//! in every request, and the last error with the tail of its stderr.
//!
//! Nothing secret is printed: `env` and `http_headers` values show as `*****`, and any of those
//! values that a server's error or stderr repeats is masked the same way.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use agent_core::TokenCounter;
use agent_mcp::{McpSession, ServerConfig, ServerEnv, Started, TransportKind};
use serde::Serialize;
use serde_json::{Value, json};

use crate::terminal::{visible, visible_line};

/// What hides a secret value.
pub(crate) const MASK: &str = "*****";

/// Where a server's definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Origin {
    /// `[mcp_servers.NAME]` in the config file.
    Config,
    /// The project's `.mcp.json`, approved for this project.
    Project,
    /// The project's `.mcp.json`, not (or no longer) approved: never started.
    Unapproved,
    /// An enabled plugin (its name leads the server's: `plugin-server`).
    Plugin,
}

/// One server to show.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) config: ServerConfig,
    pub(crate) origin: Origin,
    /// Why the definition cannot be used (a broken `.mcp.json` entry).
    pub(crate) problem: Option<String>,
}

/// What became of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum State {
    Connected,
    Failed,
    /// Did not answer within its `startup_timeout_sec`.
    Timeout,
    Disabled,
    /// A project server the user has not approved (`agent mcp approve`).
    Unapproved,
}

/// One server's report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub(crate) name: String,
    pub(crate) source: Origin,
    pub(crate) transport: &'static str,
    pub(crate) state: State,
    /// The MCP revision it speaks (`2026-07-28`, `2025-11-25`, …), once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) protocol: Option<String>,
    /// Its tools as the model sees them, with the tokens each schema costs.
    pub(crate) tools: Vec<ToolReport>,
    pub(crate) schema_tokens: usize,
    /// Why it did not start, or tools that were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// The last lines of its stderr, when it failed and wrote any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stderr_tail: Option<String>,
    /// The definition, secrets masked (shown by `get`).
    #[serde(skip)]
    pub(crate) config: Value,
}

/// One tool of a server.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ToolReport {
    pub(crate) name: String,
    pub(crate) tokens: usize,
    /// The first line of its description, as the server wrote it.
    pub(crate) description: String,
}

/// Starts every startable server of `entries` at once and reports on all of them, in order.
pub(crate) async fn gather(
    entries: &[Entry],
    workspace: PathBuf,
    counter: Arc<dyn TokenCounter>,
) -> anyhow::Result<Vec<Report>> {
    // Logs of the servers' stderr go here, for the tails; nothing is kept afterwards.
    let scratch = tempfile::tempdir()?;
    let mut startable = BTreeMap::new();
    for entry in entries {
        if entry.origin != Origin::Unapproved
            && entry.problem.is_none()
            && entry.config.enabled
            && entry.config.check(&entry.name).is_ok()
        {
            startable.insert(entry.name.clone(), entry.config.clone());
        }
    }
    let env = ServerEnv { workspace, session_dir: Some(scratch.path().to_path_buf()) };
    let session = McpSession::new(&startable, env)?;
    let mut started: BTreeMap<String, Started> = session
        .start_all()
        .await
        .into_iter()
        .map(|started| (started.server.name().to_owned(), started))
        .collect();
    let reports = entries
        .iter()
        .map(|entry| report(entry, started.remove(&entry.name), counter.as_ref()))
        .collect();
    // The servers stop here, inside the runtime, before their logs go.
    drop(started);
    drop(session);
    Ok(reports)
}

fn report(entry: &Entry, started: Option<Started>, counter: &dyn TokenCounter) -> Report {
    let secrets: Vec<&str> = entry
        .config
        .env
        .values()
        .chain(entry.config.http_headers.values())
        .map(String::as_str)
        .filter(|value| value.len() >= 4)
        .collect();
    let mask = |text: &str| {
        secrets.iter().fold(text.to_owned(), |text, secret| text.replace(secret, MASK))
    };
    let mut report = Report {
        name: entry.name.clone(),
        source: entry.origin,
        transport: match entry.config.check(&entry.name) {
            Ok(TransportKind::Http) => "http",
            _ if entry.config.url.is_some() => "http",
            _ => "stdio",
        },
        state: State::Failed,
        protocol: None,
        tools: Vec::new(),
        schema_tokens: 0,
        error: None,
        stderr_tail: None,
        config: masked(&entry.config),
    };
    if let Some(problem) = &entry.problem {
        report.error = Some(problem.clone());
        return report;
    }
    if let Err(err) = entry.config.check(&entry.name) {
        report.error = Some(err.to_string());
        return report;
    }
    if entry.origin == Origin::Unapproved {
        report.state = State::Unapproved;
        return report;
    }
    if !entry.config.enabled {
        report.state = State::Disabled;
        return report;
    }
    let Some(started) = started else {
        report.error = Some("it was not started".to_owned());
        return report;
    };
    report.protocol = started.server.revision();
    match started.tools {
        Ok(tools) => {
            report.state = State::Connected;
            for tool in &tools {
                let spec = agent_core::Tool::spec(tool);
                let schema = agent_model::chat_tools_json(std::slice::from_ref(spec)).to_string();
                report.tools.push(ToolReport {
                    name: spec.name.clone(),
                    tokens: counter.count(&schema),
                    description: spec.description.lines().next().unwrap_or_default().to_owned(),
                });
            }
            report.schema_tokens = report.tools.iter().map(|tool| tool.tokens).sum();
            if !started.skipped.is_empty() {
                let skipped: Vec<String> =
                    started.skipped.iter().map(ToString::to_string).collect();
                report.error = Some(mask(&skipped.join("\n")));
            }
        }
        Err(err) => {
            report.state = if err.timed_out { State::Timeout } else { State::Failed };
            report.error = Some(mask(&err.reason));
            report.stderr_tail = err.tail.as_deref().map(mask);
        }
    }
    report
}

/// The definition as JSON with `env` and `http_headers` values masked.
pub(crate) fn masked(config: &ServerConfig) -> Value {
    let mut value = serde_json::to_value(config).unwrap_or_else(|_| json!({}));
    for key in ["env", "http_headers"] {
        if let Some(map) = value.get_mut(key).and_then(Value::as_object_mut) {
            for text in map.values_mut() {
                *text = json!(MASK);
            }
        }
    }
    value
}

/// The table `agent mcp list` prints.
pub(crate) fn table(reports: &[Report]) -> String {
    let mut rows = vec![
        ["NAME", "SOURCE", "TRANSPORT", "STATE", "PROTOCOL", "TOOLS", "SCHEMA TOKENS"]
            .map(String::from),
    ];
    for report in reports {
        let counted = report.state == State::Connected;
        rows.push([
            visible_line(&report.name).into_owned(),
            word(&report.source),
            report.transport.to_owned(),
            word(&report.state),
            report.protocol.clone().unwrap_or_else(|| "-".to_owned()),
            if counted { report.tools.len().to_string() } else { "-".to_owned() },
            if counted { report.schema_tokens.to_string() } else { "-".to_owned() },
        ]);
    }
    let widths: Vec<usize> =
        (0..7).map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> =
            row.iter().zip(&widths).map(|(cell, width)| format!("{cell:width$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for report in reports {
        // Errors and stderr are the server's own words.
        let name = visible_line(&report.name);
        if let Some(error) = &report.error {
            out.push_str(&format!("\n{name}: {}\n", visible(error)));
            if let Some(tail) = &report.stderr_tail {
                out.push_str("  its stderr ended with:\n");
                for line in tail.lines() {
                    out.push_str(&format!("  | {}\n", visible_line(line)));
                }
            }
        }
        if report.state == State::Unapproved {
            out.push_str(&format!(
                "\n{name}: defined in the project's .mcp.json and not approved; review it with \
                 `agent mcp get {name}` and approve it with `agent mcp approve {name}`\n"
            ));
        }
    }
    out
}

/// What `agent mcp get` prints.
pub(crate) fn details(report: &Report) -> String {
    let mut out = format!("{}\n", visible_line(&report.name));
    out.push_str(&format!("  source: {}\n", word(&report.source)));
    out.push_str(&format!("  state: {}\n", word(&report.state)));
    if let Some(protocol) = &report.protocol {
        out.push_str(&format!("  protocol: {}\n", visible_line(protocol)));
    }
    if let Some(map) = report.config.as_object() {
        for (key, text) in map {
            let shown = match text {
                Value::String(text) => text.clone(),
                Value::Object(pairs) => pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            out.push_str(&format!("  {}: {}\n", visible_line(key), visible_line(&shown)));
        }
    }
    if let Some(error) = &report.error {
        out.push_str(&format!("  error: {}\n", visible(error)));
    }
    if let Some(tail) = &report.stderr_tail {
        out.push_str("  its stderr ended with:\n");
        for line in tail.lines() {
            out.push_str(&format!("  | {}\n", visible_line(line)));
        }
    }
    if report.state == State::Connected {
        out.push_str(&format!(
            "  tools: {} ({} schema tokens)\n",
            report.tools.len(),
            report.schema_tokens
        ));
        for tool in &report.tools {
            let name = visible_line(&tool.name);
            match tool.description.as_str() {
                "" => out.push_str(&format!("    {name} ({} tokens)\n", tool.tokens)),
                description => out.push_str(&format!(
                    "    {name} ({} tokens): {}\n",
                    tool.tokens,
                    visible_line(description)
                )),
            }
        }
    }
    out
}

/// A state or source as its JSON word.
fn word(value: &impl Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// `get --json`: the report with the masked definition.
pub(crate) fn details_json(report: &Report) -> Value {
    let mut value = serde_json::to_value(report).unwrap_or_else(|_| json!({}));
    value["config"] = report.config.clone();
    value
}
