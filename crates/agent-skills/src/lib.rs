//! The Markdown files with a YAML frontmatter that a session reads from a repository and the
//! user's folders: Agent Skills (`SKILL.md`, agentskills.io), agent definitions for child agents,
//! and the frontmatter of custom commands, all through one bounded YAML reader ([`bounded_yaml`]).
//!
//! Only a skill's metadata costs context until it is used: [`Catalog::listing`] renders the list
//! for the instructions inside a token budget, and the model reads a skill's `SKILL.md` (whose
//! path the list gives) with the file-reading tool when it picks one, so the body takes the
//! normal path of a read, under the permission policy and the workspace boundary.
//! A skill never grants anything: its `allowed-tools` only narrows ([`tool_limit`]) the tools the
//! model may use in the turn the skill is invoked in, and no permission is derived from it.
//!
//! The runtime (agent-exec) takes the results as its own typed values: an
//! [`agent_exec::ToolLimit`] for a turn, [`agent_exec::child::AgentDefinition`]s for its
//! children, and the `skills` call as an ordinary tool. It never sees YAML.

#![deny(missing_docs)]

pub mod bounded_yaml;
mod catalog;
pub mod definition;
pub mod frontmatter;
mod limit;
mod listing;
mod tool;

pub use crate::{
    catalog::{
        Catalog, MAX_SKILL_FILE_BYTES, MAX_SKILLS_PER_ROOT, Refused, SKILLS_TOOL, Skill, SkillRoot,
        SkillSource,
    },
    frontmatter::SkillProblem,
    limit::tool_limit,
    listing::{SkillList, mentioned},
    tool::{SKILLS_PAGE, skills_tool},
};
