//! The read-only `diagnostics` tool: every error and warning of one file, or of every file the
//! running servers have reported on, for a model that wants the whole list.

use std::fmt::Write as _;

use agent_core::{Access, Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{LspError, LspSession, diff::Severity, report::plural};

/// The most diagnostics listed in one answer.
const MAX_LISTED: usize = 100;

/// Input of the `diagnostics` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct DiagnosticsInput {
    // A file, relative to the workspace root; null for every file the language servers have
    // checked in this session (the tool's description says so, and a `///` comment would be
    // sent with every request).
    pub path: Option<String>,
}

/// Lists language-server diagnostics.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    session: LspSession,
}

impl Diagnostics {
    /// The tool over `session`'s servers.
    pub fn new(session: LspSession) -> Self {
        Self { session }
    }
}

impl TypedTool for Diagnostics {
    type Input = DiagnosticsInput;
    const NAME: &'static str = "diagnostics";

    fn description(&self) -> String {
        "Lists a language server's errors and warnings for `path`, or for every file checked \
         (null)."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    fn rule_name(&self) -> String {
        "Read".to_owned()
    }

    fn access(&self, input: &DiagnosticsInput) -> Vec<Access> {
        input.path.iter().map(|path| Access::Read(path.clone())).collect()
    }

    async fn run(
        &self,
        input: DiagnosticsInput,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let path = match &input.path {
            Some(path) => Some(ctx.workspace.resolve(path)?),
            None => None,
        };
        if let Some(path) = &path
            && !self.session.covers(path)
        {
            {
                return Err(ToolError::new(
                    ToolErrorKind::InvalidArguments,
                    format!(
                        "no language server is configured for {}",
                        input.path.as_deref().unwrap_or("")
                    ),
                ));
            }
        }
        let files = match self.session.diagnostics(path.as_deref()).await {
            Ok(files) => files,
            Err(LspError::Pending) => {
                return Ok(ToolOutput::text(
                    "The language server has not finished checking the file yet; ask again shortly.",
                ));
            }
            Err(err) => {
                return Err(ToolError::new(
                    ToolErrorKind::ToolError,
                    format!("no diagnostics: {err}"),
                ));
            }
        };
        Ok(ToolOutput::text(list(&files)))
    }
}

fn list(files: &[(String, Vec<crate::Diag>)]) -> String {
    let total: usize = files.iter().map(|(_, d)| d.len()).sum();
    let errors: usize =
        files.iter().flat_map(|(_, d)| d).filter(|d| d.severity == Severity::Error).count();
    if total == 0 {
        return match files.len() {
            0 => "No file has been checked in this session yet; give a path.".to_owned(),
            n => format!("No errors or warnings in {}.", plural(n, "file", "files")),
        };
    }
    let mut out = format!(
        "{} ({}) in {}:",
        plural(total, "diagnostic", "diagnostics"),
        plural(errors, "error", "errors"),
        plural(files.iter().filter(|(_, d)| !d.is_empty()).count(), "file", "files")
    );
    let mut listed = 0;
    for (shown, diags) in files {
        let mut diags: Vec<_> = diags.iter().filter(|d| d.severity <= Severity::Warning).collect();
        diags.sort_by_key(|d| (d.severity, d.line, d.character));
        for diag in diags {
            if listed == MAX_LISTED {
                let _ = write!(out, "\n… and {} more", total - listed);
                return out;
            }
            let code = diag.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
            let message = diag.message.lines().next().unwrap_or("");
            let _ = write!(
                out,
                "\n{shown}:{}:{}: {}: {message}{code}",
                diag.line + 1,
                diag.character + 1,
                diag.severity.as_str()
            );
            listed += 1;
        }
    }
    out
}
