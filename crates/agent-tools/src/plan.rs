//! `update_plan`: the model keeps its plan in the session's [`PlanBook`], by a whole-list replace
//! (Codex's `plan: [{step, status}]`) or by small operations (`add`, `set_status`, `remove`).

use std::sync::Arc;

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use agent_exec::plan::{PlanBook, PlanOp, PlanStatus, PlanUpdate, ReplaceItem};
use schemars::JsonSchema;
use serde::Deserialize;

// An item's status. Short `$defs` names: each is sent with every request.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(rename = "Status")]
#[serde(rename_all = "snake_case")]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub enum StepStatus {
    // Not started; being worked on (at most one); done; given up. Plain comments keep the
    // schema a bare `enum`.
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl From<StepStatus> for PlanStatus {
    fn from(status: StepStatus) -> Self {
        match status {
            StepStatus::Pending => PlanStatus::Pending,
            StepStatus::InProgress => PlanStatus::InProgress,
            StepStatus::Completed => PlanStatus::Completed,
            StepStatus::Cancelled => PlanStatus::Cancelled,
        }
    }
}

// One step of the whole list.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Step")]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct PlanStep {
    // The step's id, to keep an existing step (null: matched by its text, or a new step).
    pub id: Option<String>,
    // The step, in a line.
    pub step: String,
    // Its status.
    pub status: StepStatus,
}

// What an operation does.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(rename = "Kind")]
#[serde(rename_all = "snake_case")]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub enum OpKind {
    // Add a step (`text`, optional `status`); change a step's status (`id`, `status`); cancel
    // an unfinished step (`id`), which stays listed.
    Add,
    SetStatus,
    Remove,
}

// A small change.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Op")]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct PlanOpInput {
    // The operation.
    pub op: OpKind,
    // The step's id (set_status, remove; optional for add).
    pub id: Option<String>,
    // The new step's text (add).
    pub text: Option<String>,
    // The status (set_status; optional for add).
    pub status: Option<StepStatus>,
}

/// Input of the `update_plan` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct UpdatePlanInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told").
    // Why the plan changes (optional).
    pub explanation: Option<String>,
    // The whole new list (null to use `ops`).
    pub plan: Option<Vec<PlanStep>>,
    // Small changes applied in order (null to use `plan`).
    pub ops: Option<Vec<PlanOpInput>>,
}

/// Keeps the session's plan.
#[derive(Debug, Clone)]
pub struct UpdatePlan {
    book: Arc<PlanBook>,
}

impl UpdatePlan {
    /// The tool editing `book`.
    pub fn new(book: Arc<PlanBook>) -> Self {
        Self { book }
    }
}

fn refused(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::InvalidArguments, message)
}

fn update(input: UpdatePlanInput) -> Result<PlanUpdate, ToolError> {
    let replace = input.plan.map(|steps| {
        let item = |step: PlanStep| ReplaceItem {
            id: step.id,
            text: step.step,
            status: step.status.into(),
        };
        steps.into_iter().map(item).collect()
    });
    let mut ops = Vec::new();
    for op in input.ops.unwrap_or_default() {
        let id = |what: &str| {
            op.id.clone().ok_or_else(|| refused(format!("`{what}` needs the step's `id`")))
        };
        ops.push(match op.op {
            OpKind::Add => PlanOp::Add {
                id: op.id.clone(),
                text: op.text.clone().ok_or_else(|| refused("`add` needs a `text`".into()))?,
                status: op.status.map(Into::into),
            },
            OpKind::SetStatus => PlanOp::SetStatus {
                id: id("set_status")?,
                status: op
                    .status
                    .ok_or_else(|| refused("`set_status` needs a `status`".into()))?
                    .into(),
            },
            OpKind::Remove => PlanOp::Remove { id: id("remove")? },
        });
    }
    Ok(PlanUpdate { explanation: input.explanation, replace, ops })
}

impl TypedTool for UpdatePlan {
    type Input = UpdatePlanInput;
    const NAME: &'static str = "update_plan";

    fn description(&self) -> String {
        "Keeps your plan for work of several steps: the whole list as `plan`, or `ops`. One step \
         at most is in_progress."
            .to_owned()
    }

    fn effects(&self) -> Effects {
        // It changes session state only: no file, process or network, so plan mode allows it.
        Effects::default()
    }

    fn rule_name(&self) -> String {
        "UpdatePlan".to_owned()
    }

    async fn run(
        &self,
        input: UpdatePlanInput,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let update = update(input)?;
        let event = self.book.update(update).map_err(|err| refused(err.to_string()))?;
        let (done, total) = event.plan.progress();
        Ok(ToolOutput::text(format!(
            "Plan updated ({done} of {total} done):\n{}",
            event.plan.checklist()
        )))
    }
}
