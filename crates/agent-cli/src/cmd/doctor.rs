//! `agent doctor [--json]`: checks what a session needs (the config files, the model server, the
//! sandbox, the MCP servers, skills and agent definitions, the session store) and says for each
//! whether it is ok, worth a look (warn) or broken (fail), with a one-line fix.
//!
//! Nothing secret is printed: the model's key and every MCP `env`/`http_headers` value are
//! masked wherever a message repeats them (docs/doctor.md).

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use crate::Options;

mod checks;

/// The version of the `--json` report's shape; a change that removes or renames a field bumps it.
const SCHEMA_VERSION: u32 = 1;

/// `agent doctor`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print one JSON object (docs/doctor.md) instead of lines.
    #[arg(long)]
    json: bool,
    /// How long the model server may take to answer the tiny request, in seconds.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    timeout: u64,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check's result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// What was checked: `config`, `model`, `sandbox`, `mcp`, `lsp`, `skills`, `agents`, `sessions`,
    /// `versions`.
    pub(crate) area: &'static str,
    /// The thing checked within the area (a file, a server's name, a skill's folder).
    pub(crate) subject: String,
    pub(crate) status: Status,
    /// What was found, on one line.
    pub(crate) message: String,
    /// What to do about it, on one line; absent when the check is ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(area: &'static str, subject: impl Into<String>, message: String) -> Self {
        Self { area, subject: subject.into(), status: Status::Ok, message, fix: None }
    }

    pub(crate) fn warn(area: &'static str, subject: impl Into<String>, message: String) -> Self {
        Self { status: Status::Warn, ..Self::ok(area, subject, message) }
    }

    pub(crate) fn fail(area: &'static str, subject: impl Into<String>, message: String) -> Self {
        Self { status: Status::Fail, ..Self::ok(area, subject, message) }
    }

    pub(crate) fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// The whole report, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Report {
    schema_version: u32,
    /// The worst status of all checks.
    status: Status,
    versions: checks::Versions,
    checks: Vec<Check>,
}

/// Runs every check and prints the report: exit 0 when nothing failed, 1 when something did.
pub(crate) fn run(options: &Options, args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let timeout = std::time::Duration::from_secs(args.timeout.clamp(1, 600));
    let (checks, secrets) = checks::all(options, timeout)?;
    let status = checks.iter().map(|check| check.status).max().unwrap_or(Status::Ok);
    let report =
        Report { schema_version: SCHEMA_VERSION, status, versions: checks::versions(), checks };
    let text =
        if args.json { serde_json::to_string_pretty(&report)? + "\n" } else { table(&report) };
    print!("{}", mask(&text, &secrets));
    Ok(if status == Status::Fail { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The report as lines: `ok|warn|fail  area  subject: message`, the fix indented below.
fn table(report: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let v = &report.versions;
    let _ = writeln!(out, "agent {} ({}/{})", v.agent, v.os, v.arch);
    for check in &report.checks {
        let word = match check.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        let line = format!("{word}  {:<8}  {}: {}", check.area, check.subject, check.message);
        let _ = writeln!(out, "{}", crate::terminal::visible_line(&line));
        if let Some(fix) = &check.fix {
            let _ = writeln!(out, "      fix: {}", crate::terminal::visible_line(fix));
        }
    }
    let count = |status| report.checks.iter().filter(|c| c.status == status).count();
    let _ = writeln!(
        out,
        "{} ok, {} warn, {} fail",
        count(Status::Ok),
        count(Status::Warn),
        count(Status::Fail)
    );
    out
}

/// Replaces every secret (of at least four bytes, so a short one cannot blank common words)
/// with `*****`, as `agent mcp list` does.
fn mask(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|secret| secret.len() >= 4)
        .fold(text.to_owned(), |text, secret| text.replace(secret.as_str(), crate::mcp::list::MASK))
}
