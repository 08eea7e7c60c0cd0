//! The request and answer bodies of `agent serve`'s API. The OpenAPI document is generated from
//! these types (`openapi.rs`), so what the document says is what the server reads and writes.

use serde::{Deserialize, Serialize};

use crate::options::Mode;

/// A session to open.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSession {
    /// The workspace: an absolute path to an existing directory.
    pub(crate) workspace: String,
    /// A profile of the configuration file (as `--profile`).
    #[serde(default)]
    pub(crate) profile: Option<String>,
    /// The permission mode (as `--permission-mode`); default: the profile's, else `default`,
    /// which asks over this API.
    #[serde(default)]
    pub(crate) permission_mode: Option<PermissionMode>,
    /// Continue this stored session instead of starting a new one.
    #[serde(default)]
    pub(crate) resume: Option<String>,
}

/// A permission mode, spelled as `--permission-mode` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PermissionMode {
    /// Reads run; edits and commands ask.
    Default,
    /// Edits in the workspace run; commands ask.
    AcceptEdits,
    /// Nothing that changes anything runs.
    Plan,
    /// What would ask is denied.
    DontAsk,
    /// Everything runs (protected paths still ask).
    Bypass,
}

impl From<PermissionMode> for Mode {
    fn from(mode: PermissionMode) -> Self {
        match mode {
            PermissionMode::Default => Mode::Default,
            PermissionMode::AcceptEdits => Mode::AcceptEdits,
            PermissionMode::Plan => Mode::Plan,
            PermissionMode::DontAsk => Mode::DontAsk,
            PermissionMode::Bypass => Mode::Bypass,
        }
    }
}

/// An open session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct SessionInfo {
    /// The session id (`agent exec --resume` and `agent undo --session` take it).
    pub(crate) id: String,
    /// The workspace.
    pub(crate) workspace: String,
    /// The model name as configured.
    pub(crate) model: String,
    /// The permission mode in force.
    pub(crate) permission_mode: String,
    /// Whether a prompt is running.
    pub(crate) busy: bool,
    /// The id of the session's newest event (0 before the first).
    pub(crate) last_event_id: u64,
}

/// A prompt to run.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct PromptRequest {
    /// The prompt's text.
    pub(crate) text: String,
}

/// A prompt taken: its events follow `after` on the session's event stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct PromptAccepted {
    /// The id of the last event before the prompt's `run.started`.
    pub(crate) after: u64,
}

/// What went wrong, in words.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct Problem {
    /// The reason, for people.
    pub(crate) error: String,
}

/// A call waiting for an answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct PendingApproval {
    /// The approval's id in the session (answer it at `.../approvals/{id}`).
    pub(crate) id: u64,
    /// The model's id for the call.
    pub(crate) call_id: String,
    /// The tool.
    pub(crate) tool: String,
    /// The call's raw argument text.
    pub(crate) arguments: String,
    /// Why the policy asks.
    pub(crate) reason: String,
    /// The rules "allow always" records (empty: this exact call, this session).
    pub(crate) suggested_rules: Vec<String>,
}

/// The answer to a pending approval.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalAnswer {
    /// What to do with the call.
    pub(crate) decision: Decision,
    /// For a denial: what the model reads.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// An approval's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum Decision {
    /// Run this call.
    AllowOnce,
    /// Run it and allow calls like it for the rest of the session.
    AllowAlways,
    /// Do not run it.
    Deny,
}

/// A question of the model's waiting for an answer (`ask_user`, docs/ask-user.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct PendingQuestion {
    /// The question's id in the session (answer it at `.../questions/{id}`).
    pub(crate) id: u64,
    /// The model's id for the call that asks.
    pub(crate) call_id: String,
    /// The question.
    pub(crate) question: String,
    /// The choices, 2 to 6, in the model's order.
    pub(crate) choices: Vec<QuestionChoice>,
    /// Whether several choices may be picked.
    pub(crate) multiple: bool,
    /// Whether an answer in words of one's own is taken.
    pub(crate) free_text: bool,
}

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct QuestionChoice {
    /// The label, which an answer names.
    pub(crate) label: String,
    /// What picking it means.
    pub(crate) description: String,
}

/// The answer to a pending question: exactly one of `choices`, `text` or `decline`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct QuestionAnswer {
    /// The labels picked (one unless the question takes several).
    #[serde(default)]
    pub(crate) choices: Option<Vec<String>>,
    /// An answer in words of one's own (only when the question allows it).
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// Decline to answer.
    #[serde(default)]
    pub(crate) decline: bool,
}

/// The session's conversation as its transcript holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct TranscriptBody {
    /// The items (`message`, `tool_call`, `tool_output`, `reasoning`), as `item.added` carries
    /// them.
    pub(crate) items: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// One checkpoint of the session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct Checkpoint {
    /// Sequential within the session, from 1.
    pub(crate) id: u32,
    /// The prompt it belongs to, from 1.
    pub(crate) turn: u32,
    /// The prompt's text, for a turn's writes; absent for an undo.
    pub(crate) prompt: Option<String>,
    /// For an undo: the checkpoint it undid.
    pub(crate) undo_of: Option<u32>,
    /// The paths changed.
    pub(crate) paths: Vec<String>,
    /// How many changed paths it could not cover.
    pub(crate) not_covered: usize,
    /// The checkpoint that undid this one, while it stands.
    pub(crate) undone_by: Option<u32>,
}

/// What to undo.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, default)]
pub(crate) struct UndoRequest {
    /// Undo this turn (default: the last one not undone yet).
    pub(crate) turn: Option<u32>,
    /// Undo the last undo instead.
    pub(crate) redo: bool,
    /// Restore paths changed since the turn too.
    pub(crate) force: bool,
    /// Say what would be done; change nothing.
    pub(crate) dry_run: bool,
}

/// What an undo did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
pub(crate) struct UndoResult {
    /// The report `agent undo` prints.
    pub(crate) report: String,
    /// Paths given back their earlier content.
    pub(crate) restored: Vec<String>,
    /// Paths the turn created, removed again.
    pub(crate) removed: Vec<String>,
    /// Paths changed since the turn and left alone (`force` restores them).
    pub(crate) conflicts: Vec<String>,
}

/// Where to fork.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(test, derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ForkRequest {
    /// Keep the history up to the end of this turn (default: all of it).
    pub(crate) turn: Option<u32>,
}
