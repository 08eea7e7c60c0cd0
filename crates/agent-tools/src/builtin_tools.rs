//! The one door to the built-in tools: [`BuiltinTools::builtin_tools`] gives a library user the
//! agent the `agent` binary runs — the tools, their job table registered as the session's
//! [`Background`](agent_exec::Background), and the instructions about each tool that is offered.
//!
//! The binary builds its agent through this same call, so there is nothing left for a library
//! user to wire by hand. The secret list needs no wiring at all: `bash` takes it from the call's
//! workspace boundary, the policy `read_file` sees too.

use std::sync::Arc;

use agent_core::schema::StrictError;
use agent_exec::AgentBuilder;

use crate::{BuiltinConfig, builtin_with_tracker};

/// What each built-in tool is for, one line of the instructions each, keyed by the tool's name:
/// a line goes to the model only when its tool is offered (after `only_tools`, `--tools`).
pub const GUIDANCE: &[(&str, &str)] = &[
    ("read_file", "Read files with read_file."),
    ("grep", "Search with grep and glob."),
    ("edit_file", "Change files with edit_file."),
    ("apply_patch", "Change files with apply_patch."),
    ("bash", "Build, test and run with bash."),
];

/// Registers the built-in tools on an [`AgentBuilder`].
pub trait BuiltinTools: Sized {
    /// Adds every built-in tool configured by `config`, the bash tool's job table as the
    /// session's background work (so the model is told when a job finishes, and a compaction
    /// lists the jobs still running), and a line of guidance per tool. The tools share
    /// `config.tracker`, or a fresh [`FileTracker`](crate::FileTracker).
    fn builtin_tools(self, config: &BuiltinConfig) -> Result<Self, StrictError>;
}

impl BuiltinTools for AgentBuilder {
    fn builtin_tools(self, config: &BuiltinConfig) -> Result<Self, StrictError> {
        let tracker = config.tracker.clone().unwrap_or_default();
        let tools = builtin_with_tracker(config, tracker)?;
        let jobs = Arc::new(config.bash.jobs.clone());
        // `job` is offered from the first request after a job exists: until then it could only
        // answer that there is none, and every request would pay for its schema. It is appended
        // at the end of the list when it opens, so the earlier tools stay a cached prefix.
        let table = config.bash.jobs.clone();
        let builder = self
            .tools(tools)
            .background(jobs)
            .offer_when("job", Arc::new(move || !table.list().is_empty()));
        Ok(GUIDANCE.iter().fold(builder, |builder, (tool, line)| builder.tool_guidance(tool, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guidance_names_only_built_in_tools() {
        let mut tools = crate::builtin(&BuiltinConfig::default()).unwrap();
        let tracker = crate::FileTracker::new();
        tools.push(crate::other_edit_tool(crate::EditTool::default(), tracker, None).unwrap());
        for (name, _) in GUIDANCE {
            assert!(tools.iter().any(|tool| tool.spec().name == *name), "{name}");
        }
    }
}
