//! `task`: hands one task to a child agent in a fresh context ([`agent_exec::child`]) and returns
//! only its final answer and one line of usage.

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use agent_exec::child::{ChildEnd, Children, TaskRequest};
use schemars::JsonSchema;
use serde::Deserialize;

/// Input of the `task` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct TaskInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told").
    // A few words for the user.
    pub description: String,
    // The whole task: the agent sees nothing else.
    pub prompt: String,
    // The agent to use (null: `general`).
    pub agent: Option<String>,
}

/// Runs a child agent.
#[derive(Debug, Clone)]
pub struct Task {
    children: Children,
    description: String,
}

impl Task {
    /// The tool starting `children`; its description lists their definitions.
    pub fn new(children: Children) -> Self {
        let mut description = String::from(
            "Hands a task to a sub-agent that sees only `prompt`; returns its answer. `agent` \
             (default general):",
        );
        for definition in children.definitions() {
            description.push_str(&format!(" {} ({});", definition.name, definition.description));
        }
        description.pop();
        description.push('.');
        Self { children, description }
    }
}

impl TypedTool for Task {
    type Input = TaskInput;
    const NAME: &'static str = "task";

    fn description(&self) -> String {
        self.description.clone()
    }

    fn effects(&self) -> Effects {
        // Read-only for the batch: children whose tools are all read-only overlap, and the child
        // runner itself makes a write-capable child run alone. Each child call is judged by the
        // policy on its own, so nothing runs unjudged.
        Effects::READ_ONLY
    }

    fn rule_name(&self) -> String {
        "Task".to_owned()
    }

    async fn run(&self, input: TaskInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let request = TaskRequest {
            description: input.description,
            prompt: input.prompt,
            agent: input.agent,
            caller: ctx.session_id.to_string(),
            call_id: ctx.call_id.to_string(),
        };
        let report = self.children.run(request, &ctx.cancel).await;
        let text = report.observation();
        match &report.end {
            ChildEnd::Answered => Ok(ToolOutput::text(text)),
            ChildEnd::Limit { .. } => {
                Err(ToolError::new(ToolErrorKind::other("child_limit"), text))
            }
            ChildEnd::Cancelled => Err(ToolError::new(ToolErrorKind::Cancelled, text)),
            ChildEnd::Failed { .. } => {
                Err(ToolError::new(ToolErrorKind::other("child_refused"), text))
            }
        }
    }
}
