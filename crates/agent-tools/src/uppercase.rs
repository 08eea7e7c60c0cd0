//! `uppercase`: Unicode uppercase of a text. Pure; the reference implementation of a typed tool.

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

/// The most characters one call accepts.
const MAX_CHARS: usize = 100_000;

/// Input of the `uppercase` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct UppercaseInput {
    // The text to convert (at most 100000 characters).
    pub text: String,
}

/// Converts text to Unicode uppercase (`straße` → `STRASSE`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Uppercase;

impl TypedTool for Uppercase {
    type Input = UppercaseInput;
    const NAME: &'static str = "uppercase";

    fn description(&self) -> String {
        "Returns the text in Unicode uppercase.".to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    async fn run(&self, input: UppercaseInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let chars = input.text.chars().count();
        if chars > MAX_CHARS {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                format!(
                    "text has {chars} characters; the limit is {MAX_CHARS}. Split it into parts"
                ),
            ));
        }
        Ok(ToolOutput::text(input.text.to_uppercase()))
    }
}
