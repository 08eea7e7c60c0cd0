//! `session/load`: a stored conversation told again as the updates it was made of.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCallContent, ToolCallStatus,
    ToolCallUpdateFields,
};
use agent_core::{Item, Role};

use crate::updates;

/// The updates that replay `items`: the user's and the model's messages, the reasoning the model
/// showed, and each tool call with its outcome. Instructions are not part of the history.
pub(crate) fn updates(workspace: &Path, items: &[Item]) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for item in items {
        match item {
            Item::Message(message) => {
                let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(
                    message.content.clone(),
                )));
                match message.role {
                    Role::User => out.push(SessionUpdate::UserMessageChunk(chunk)),
                    Role::Assistant => out.push(SessionUpdate::AgentMessageChunk(chunk)),
                    Role::System | Role::Developer => {}
                }
            }
            Item::Reasoning(reasoning) => {
                let text = reasoning.text.clone().unwrap_or_else(|| reasoning.summary.join("\n"));
                if !text.is_empty() {
                    out.push(updates::chunk(&text, true));
                }
            }
            Item::ToolCall(call) => out.push(SessionUpdate::ToolCall(updates::tool_call(
                workspace,
                &call.call_id,
                &call.name,
                &call.arguments,
            ))),
            Item::ToolOutput(output) => {
                let status =
                    if output.ok { ToolCallStatus::Completed } else { ToolCallStatus::Failed };
                let text = ContentBlock::Text(TextContent::new(output.output.clone()));
                let fields = ToolCallUpdateFields::new()
                    .status(status)
                    .content(vec![ToolCallContent::from(text)]);
                out.push(updates::update(&output.call_id, fields));
            }
        }
    }
    out
}
