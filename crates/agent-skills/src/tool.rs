//! The `skills` call: lists the skills the instructions do not describe, with each one's
//! description and the path of its `SKILL.md`, a page at a time.
//!
//! It is offered only when the skills list is over its budget ([`crate::SkillList::needs_call`]),
//! so a session whose skills all fit pays nothing for it; when it is offered, the list's closing
//! line tells the model to call it, and every installed skill is one call away.

use std::sync::Arc;

use agent_core::{Effects, Tool, ToolOutput};
use serde_json::{Value, json};

use agent_exec::SchemaTool;

use crate::{Catalog, SKILLS_TOOL};

/// The most skills one call lists (a few KiB, well inside the output cap).
pub const SKILLS_PAGE: usize = 50;

/// The `skills` tool over `catalog`, whose first `described` skills the instructions describe.
pub fn skills_tool(catalog: Arc<Catalog>, described: usize) -> agent_exec::Result<Arc<dyn Tool>> {
    let schema = json!({
        "type": "object",
        "properties": {
            "offset": {"type": "integer", "minimum": 0, "description": "Skip this many (for the next page)."}
        },
        "additionalProperties": false
    });
    let tool = SchemaTool::new(
        SKILLS_TOOL,
        "Lists the installed skills the instructions do not describe: name, description and \
         SKILL.md path of each. Read a skill's SKILL.md to use it.",
        schema,
        Effects::READ_ONLY,
        move |args: Value, _ctx| {
            let catalog = Arc::clone(&catalog);
            async move {
                let offset =
                    args["offset"].as_u64().map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
                Ok(ToolOutput::text(catalog.undescribed(described, offset, SKILLS_PAGE)))
            }
        },
    )?;
    Ok(Arc::new(tool))
}
