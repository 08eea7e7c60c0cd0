//! Tool-output images on Chat Completions. A `role: "tool"` message carries only text, so the
//! images of a run of tool messages follow it as one user message of `image_url` parts, each
//! call's images introduced by a text part naming the call. The first message that is not a tool
//! output (or the end of the transcript) closes the run, so every tool message still follows the
//! assistant message that holds its `tool_call_id`.

use agent_core::{CallOutput, Image};
use serde::Serialize;

use super::RequestMessage;

/// A message's content: a string, or a list of parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    Text { text: String },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Debug, Serialize)]
pub(super) struct ImageUrl<'a> {
    url: String,
    detail: &'a str,
}

/// The images of the tool messages since the last flush.
#[derive(Debug, Default)]
pub(super) struct PendingImages<'a> {
    calls: Vec<(&'a str, &'a [Image])>,
}

impl<'a> PendingImages<'a> {
    /// Notes the images of `output` that the request carries.
    pub(super) fn add(&mut self, output: &'a CallOutput, images: &'a [Image]) {
        if !images.is_empty() {
            self.calls.push((&output.call_id, images));
        }
    }

    /// The user message carrying the pending images, if there are any.
    pub(super) fn flush(&mut self) -> Option<RequestMessage<'a>> {
        if self.calls.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        for (call_id, images) in self.calls.drain(..) {
            let what = if images.len() == 1 {
                "The image".to_owned()
            } else {
                format!("The {} images", images.len())
            };
            parts.push(Part::Text { text: format!("{what} from tool call {call_id}:") });
            parts.extend(images.iter().map(|image| Part::ImageUrl {
                image_url: ImageUrl { url: image.data_url(), detail: "auto" },
            }));
        }
        let mut message = RequestMessage::new("user", "");
        message.content = Content::Parts(parts);
        Some(message)
    }
}
