//! `ToolContext`: what a running tool knows about the call and the session around it, including
//! the workspace boundary every path must pass.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use tokio_util::sync::CancellationToken;

use crate::ToolError;

/// The workspace boundary of a session: the canonical root, plus the paths outside it that the
/// user's allow rules open.
///
/// The permission policy builds one per session and the executor hands the same object to every
/// call, so a tool resolves paths exactly as the policy judged them. `agent_exec::Workspace` is the
/// implementation; the trait lives here so that tools and the executor need not share a concrete
/// type and this crate stays free of IO.
pub trait Boundary: fmt::Debug + Send + Sync {
    /// The canonical, absolute root. Relative paths resolve against it.
    fn root(&self) -> &Path;

    /// Resolves a path the model gave (absolute, or relative to the root) for reading: the
    /// canonical path, or an `outside_workspace` error when neither the root nor a read allow rule
    /// covers it. The path need not exist.
    fn resolve(&self, path: &str) -> Result<PathBuf, ToolError>;

    /// Resolves a path the model gave for creating or changing it; only write allow rules open
    /// paths outside the root.
    fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ToolError>;

    /// For a canonical path: `Some(rule)` when it is a secret file that tools must not reveal
    /// without approval, where `rule` is the allow rule that would reveal it (`Read(./.env)`);
    /// `None` when its contents may be shown.
    fn secret(&self, path: &Path) -> Option<String> {
        let _ = path;
        None
    }

    /// For a canonical path: `Some(rule)` when a deny rule forbids reading it (`Read(src/**)`), so
    /// a tool that walks a directory must leave it out; `None` otherwise. The permission policy
    /// judges only the path a tool names, so walks below it need this check.
    fn read_denied(&self, path: &Path) -> Option<String> {
        let _ = path;
        None
    }

    /// Everything a process a tool starts in the workspace must not see: the session's secret
    /// files in the workspace and the credential locations under the user's home and `home` (the
    /// home the process is given), minus what allow rules expose, each with the rule that would
    /// expose it. `None` when this boundary keeps no secret list, and the tool hides what its own
    /// configuration says. Tools that start processes take it at call time, so a command and a
    /// file tool can never disagree about a secret.
    fn hidden_paths(&self, home: Option<&Path>) -> Option<Vec<HiddenPath>> {
        let _ = home;
        None
    }

    /// What the session's rules say about `domain` for the network tool with `rule_name`
    /// (`WebFetch`): the first deny rule naming it, else the first allow rule. A tool that
    /// reaches addresses the user must open deliberately (a server on loopback) asks this, and a
    /// tool that follows a redirect to another host asks it for the new host.
    fn domain_rule(&self, rule_name: &str, domain: &str) -> DomainRule {
        let _ = (rule_name, domain);
        DomainRule::Unlisted
    }
}

/// The verdict of the session's `Tool(domain:…)` rules on one domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainRule {
    /// An allow rule names the domain (its text, such as `WebFetch(domain:localhost)`).
    Allowed(String),
    /// A deny rule names it.
    Denied(String),
    /// No rule names it.
    Unlisted,
}

/// A path the session keeps from what tools show, and the allow rule that would expose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenPath {
    /// The absolute path.
    pub path: PathBuf,
    /// How the path is shown: relative to the workspace (`config/.env`) or the home (`~/.ssh`).
    pub shown: String,
    /// The allow rule that would expose it, such as `Read(./.env)`.
    pub rule: String,
}

/// The context of one tool call. Cheap to clone: shared parts are reference-counted.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace boundary: tools resolve every path argument through it.
    pub workspace: Arc<dyn Boundary>,
    /// Cancelled when the user interrupts, the batch is cancelled, or the call times out.
    pub cancel: CancellationToken,
    /// The `call_id` this call answers.
    pub call_id: Arc<str>,
    /// The session the call belongs to.
    pub session_id: Arc<str>,
    /// The tenant, for multi-tenant hosts.
    pub tenant_id: Option<Arc<str>>,
    /// The end user, for multi-user hosts.
    pub user_id: Option<Arc<str>>,
    /// When the permission policy allowed the call only because it judged every program of a
    /// command read-only: those programs, as the command names them. A tool that starts processes
    /// must let them execute nothing but these and its own shell (the bash tool does it with the
    /// sandbox's execute allow-list), so a program they start unasked cannot run. `None` when a
    /// person, a rule or the mode allowed the call.
    pub exec_allowlist: Option<Arc<[String]>>,
    /// Where the file tools read and write text instead of the disk (an editor's buffers);
    /// `None`, the default, is the disk.
    pub files: Option<Arc<dyn crate::FileSystem>>,
    /// The cap, in characters, the executor applies to this call's output: text beyond it is
    /// cut to its head and tail before the model reads it. A tool that returns a part of
    /// something larger and says where to continue (web_fetch's pages) keeps each part within
    /// it, so the part reaches the model whole. `None` when nothing caps the output.
    pub output_cap: Option<usize>,
}

impl ToolContext {
    /// A context for `call_id` inside `workspace`, with a fresh token and no tenant or user.
    pub fn new(
        workspace: Arc<dyn Boundary>,
        session_id: Arc<str>,
        call_id: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            workspace,
            cancel: CancellationToken::new(),
            call_id: call_id.into(),
            session_id,
            tenant_id: None,
            user_id: None,
            exec_allowlist: None,
            files: None,
            output_cap: None,
        }
    }
}
