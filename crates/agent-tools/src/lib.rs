//! The built-in tools, one module each.
//!
//! A tool here gets validated input and a [`agent_core::ToolContext`] and returns output or a typed
//! error. It must not contain dispatch logic (lookup, validation, permissions, timeouts, capping):
//! that is `agent-exec`'s job. Tools that start processes do so through `agent-sandbox`.
//!
//! [`builtin`] builds every tool with one shared [`FileTracker`], so read_file, write_file and
//! edit_file agree on what the model has seen in this session. [`BuiltinTools::builtin_tools`]
//! registers them on an agent with everything they need (their job table, their instructions):
//! the agent the `agent` binary runs. The semantics and model-visible texts are documented in
//! `docs/tools.md`.
//!
//! ```
//! use agent_core::{CancellationToken, ToolCall};
//! use agent_exec::{AgentBuilder, PermissionMode};
//! use agent_tools::{BuiltinConfig, BuiltinTools};
//!
//! let workspace = tempfile::tempdir()?;
//! std::fs::write(workspace.path().join("a.txt"), "one\ntwo\n")?;
//! let executor = AgentBuilder::new(workspace.path())
//!     .builtin_tools(&BuiltinConfig::default())?
//!     .permission_mode(PermissionMode::DontAsk)
//!     .build_executor()?;
//! let call = ToolCall {
//!     call_id: "c1".into(),
//!     name: "grep".into(),
//!     arguments: r#"{"pattern":"two","output_mode":"content"}"#.into(),
//!     item_id: None,
//!     shape: agent_core::CallShape::Function,
//! };
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let outcome = runtime.block_on(executor.execute(&call, &CancellationToken::new()));
//! assert!(outcome.ok && outcome.text.contains("a.txt:2:two"), "{}", outcome.text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

// The tools, one module each.
mod apply_patch;
mod ask_user;
mod bash;
mod edit_file;
#[cfg(feature = "execute-code")]
pub mod execute_code;
mod glob;
mod grep;
mod job;
mod list_dir;
mod plan;
mod read_file;
mod shell;
mod task;
mod uppercase;
mod view_image;
pub mod web_fetch;
mod web_search;
mod write_file;

// What the tools share, and the door that registers them.
mod blocking;
mod builtin_tools;
mod change;
mod closest;
mod file_io;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
mod ladder;
mod observe;
mod paths;
mod render;
mod text;
mod tracker;
mod walk;

use std::sync::Arc;

use agent_core::{Tool, Typed, schema::StrictError};

#[cfg(feature = "execute-code")]
pub use crate::execute_code::{CodeLanguage, CodeLimits, ExecuteCode, ExecuteCodeInput};
pub use crate::{
    apply_patch::{
        ApplyPatch, ApplyPatchInput, LARK_GRAMMAR as APPLY_PATCH_LARK_GRAMMAR, MAX_PATCH_BYTES,
        MAX_PATCH_FILES, PatchChange, access_for as apply_patch_access,
    },
    ask_user::{AskOption, AskUser, AskUserInput},
    bash::{Bash, BashConfig, BashInput},
    builtin_tools::{BuiltinTools, GUIDANCE},
    change::FileChange,
    edit_file::{EditFile, EditFileInput},
    glob::{Glob, GlobInput},
    grep::{Grep, GrepInput, OutputMode, grep_blocking},
    job::{Job, JobAction, JobInput},
    list_dir::{ListDir, ListDirInput},
    plan::{OpKind, PlanOpInput, PlanStep, StepStatus, UpdatePlan, UpdatePlanInput},
    read_file::{ReadFile, ReadFileInput, read_blocking},
    shell::{MAX_SHELL_COMMANDS, Shell, ShellInput},
    task::{Task, TaskInput},
    tracker::FileTracker,
    uppercase::{Uppercase, UppercaseInput},
    view_image::{
        MAX_FILE_BYTES as VIEW_IMAGE_MAX_FILE_BYTES, MAX_IMAGE_BYTES as VIEW_IMAGE_MAX_BYTES,
        MAX_PIXELS as VIEW_IMAGE_MAX_PIXELS, MAX_SIDE as VIEW_IMAGE_MAX_SIDE, ViewImage,
        ViewImageConfig, ViewImageInput,
    },
    web_fetch::{WebFetch, WebFetchConfig, WebFetchInput},
    web_search::{ApiKey, ProviderKind, WebSearch, WebSearchConfig, WebSearchInput},
    write_file::{WriteFile, WriteFileInput},
};

/// What the user configures for the built-in tools.
#[derive(Debug, Clone, Default)]
pub struct BuiltinConfig {
    /// The web search provider; `None` makes web_search answer `not_configured`.
    pub web_search: Option<WebSearchConfig>,
    /// How web_fetch resolves names (the user's pins) and its time limit.
    pub web_fetch: WebFetchConfig,
    /// Timeouts and the sandbox of the bash tool.
    pub bash: BashConfig,
    /// Deadline and memory of execute_code.
    #[cfg(feature = "execute-code")]
    pub code: CodeLimits,
    /// What view_image knows of the model: whether it takes image input.
    pub view_image: ViewImageConfig,
    /// The tracker read_file, write_file and edit_file share, when a front end shares it too (the
    /// binary's previews); `None` gives the tools a fresh one.
    pub tracker: Option<Arc<FileTracker>>,
    /// Which tool edits files: edit_file (the default) or apply_patch.
    pub edit_tool: EditTool,
    /// Told after write_file, edit_file or apply_patch changed files, and may add to their
    /// observation (the binary registers the language-server client of `agent-lsp`).
    pub edit_observer: Option<Arc<dyn agent_core::EditObserver>>,
}

/// The tool the model edits files with; write_file is offered beside either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EditTool {
    /// `edit_file`: exact-string replacement (the default).
    #[default]
    EditFile,
    /// `apply_patch`: Codex's patch format, the edit tool OpenAI's models are trained on.
    ApplyPatch,
}

/// Every built-in tool, sharing one fresh [`FileTracker`] (one per session).
pub fn builtin(config: &BuiltinConfig) -> Result<Vec<Arc<dyn Tool>>, StrictError> {
    builtin_with_tracker(config, FileTracker::new())
}

/// The edit tool not `offered` (apply_patch beside the default edit_file), for a caller
/// that runs any built-in by name (`agent tools call`, where a person typed the call) or lets a
/// profile offer the other one; it tells `observer` what it wrote, as the offered one does.
pub fn other_edit_tool(
    offered: EditTool,
    tracker: Arc<FileTracker>,
    observer: Option<Arc<dyn agent_core::EditObserver>>,
) -> Result<Arc<dyn Tool>, StrictError> {
    Ok(match offered {
        EditTool::EditFile => {
            Arc::new(Typed::new(ApplyPatch::new(tracker).with_observer(observer))?)
        }
        EditTool::ApplyPatch => {
            Arc::new(Typed::new(EditFile::new(tracker).with_observer(observer))?)
        }
    })
}

/// Every built-in tool, sharing `tracker`.
pub fn builtin_with_tracker(
    config: &BuiltinConfig,
    tracker: Arc<FileTracker>,
) -> Result<Vec<Arc<dyn Tool>>, StrictError> {
    // Without the feature `execute-code` nothing is pushed below.
    #[cfg_attr(not(feature = "execute-code"), allow(unused_mut))]
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Typed::new(Uppercase)?),
        Arc::new(Typed::new(Bash::new(config.bash.clone()))?),
        Arc::new(Typed::new(Job::new(config.bash.jobs.clone()))?),
        Arc::new(Typed::new(ReadFile::new(tracker.clone()))?),
        Arc::new(Typed::new(
            WriteFile::new(tracker.clone()).with_observer(config.edit_observer.clone()),
        )?),
        match config.edit_tool {
            EditTool::EditFile => Arc::new(Typed::new(
                EditFile::new(tracker).with_observer(config.edit_observer.clone()),
            )?),
            EditTool::ApplyPatch => Arc::new(Typed::new(
                ApplyPatch::new(tracker).with_observer(config.edit_observer.clone()),
            )?),
        },
        Arc::new(Typed::new(ListDir)?),
        Arc::new(Typed::new(Grep)?),
        Arc::new(Typed::new(Glob)?),
        Arc::new(Typed::new(ViewImage::new(config.view_image))?),
        Arc::new(Typed::new(WebSearch::new(config.web_search.clone()))?),
        Arc::new(Typed::new(WebFetch::new(config.web_fetch.clone()))?),
    ];
    #[cfg(feature = "execute-code")]
    tools.push(Arc::new(Typed::new(ExecuteCode::new(config.code))?));
    Ok(tools)
}
