//! A `tools/call` result as the text the model reads.
//!
//! Text stays text; `structuredContent` is compact JSON when no text block carries it; an embedded text resource is its text under its URI; images, audio and binary
//! resources are saved in the session folder and named, with their type and size, since the
//! observation is text; images of the kinds OpenAI's models take also travel beside the text as
//! [`Image`]s, which the Responses adapter sends as image input. `isError: true` becomes a
//! `tool_error` with the server's text.

use std::path::Path;

use agent_core::{Image, ToolError, ToolErrorKind, ToolOutput};
use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Converts `result`; binary parts go to `files_dir` as `<call_id>-<n>.<ext>`.
pub(crate) async fn to_output(
    result: &CallToolResult,
    files_dir: Option<&Path>,
    call_id: &str,
) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    // Servers are told to repeat structured content in a text block, and some put a friendlier
    // text there instead (the Python SDK sends `yo` beside `{"result":"yo"}`): so the JSON is
    // shown only when no text block says it already.
    let has_text = result.content.iter().any(|block| matches!(block, ContentBlock::Text(_)));
    if let Some(json) = result.structured_content.as_ref().filter(|_| !has_text) {
        parts.push(json.to_string());
    }
    for (index, block) in result.content.iter().enumerate() {
        let part = match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => {
                if let Some(image) = seen(&image.mime_type, &image.data) {
                    images.push(image);
                }
                save(files_dir, call_id, index, "image", &image.mime_type, &image.data).await
            }
            ContentBlock::Audio(audio) => {
                save(files_dir, call_id, index, "audio", &audio.mime_type, &audio.data).await
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                    let saved = save(files_dir, call_id, index, "resource", mime, blob).await;
                    format!("{saved} (from {uri})")
                }
                _ => "[a resource of a kind this client does not know]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => {
                format!("[resource link: {} ({})]", link.uri, link.name)
            }
            _ => "[content of a kind this client does not know]".to_owned(),
        };
        parts.push(part);
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        let message = if text.is_empty() { "the tool reported an error".to_owned() } else { text };
        return Err(ToolError::new(ToolErrorKind::ToolError, message));
    }
    Ok(ToolOutput::text(text).with_images(images))
}

/// The image types OpenAI's models take as input; others are only saved and named.
const SEEN: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image sent as input (OpenAI refuses images over 20 MB; one tool result should not
/// come near that). A larger one is only saved and named.
const MAX_SEEN_BYTES: usize = 10 * 1024 * 1024;

/// The image for the model to see, when it is of a type the model takes, valid base64 (an invalid
/// one would make the provider refuse the whole request), and not too large.
fn seen(mime: &str, data: &str) -> Option<Image> {
    let data = data.trim();
    if !SEEN.contains(&mime) || data.len() / 4 * 3 > MAX_SEEN_BYTES {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(data).ok()?;
    Some(Image { mime_type: mime.to_owned(), data: data.to_owned() })
}

/// Saves base64 `data` and says where; a part that cannot be saved is described instead.
async fn save(
    dir: Option<&Path>,
    call_id: &str,
    index: usize,
    kind: &str,
    mime: &str,
    data: &str,
) -> String {
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(bytes) => bytes,
        Err(err) => {
            return format!("[{kind} ({mime}) not shown: its data is not valid base64: {err}]");
        }
    };
    let Some(dir) = dir else {
        return format!(
            "[{kind} ({mime}, {} bytes) not saved: this session has no folder]",
            bytes.len()
        );
    };
    let id: String = call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let path = dir.join(format!("{id}-{index}.{}", extension(mime)));
    let written = async {
        tokio::fs::create_dir_all(dir).await?;
        tokio::fs::write(&path, &bytes).await
    };
    match written.await {
        Ok(()) => format!("[{kind} saved: {} ({mime}, {} bytes)]", path.display(), bytes.len()),
        Err(err) => format!("[{kind} ({mime}, {} bytes) could not be saved: {err}]", bytes.len()),
    }
}

fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        "application/json" => "json",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(mime: &str, data: &str, sent: bool) {
        assert_eq!(seen(mime, data).is_some(), sent, "{mime} {data}");
    }

    #[test]
    fn only_valid_images_of_known_types_are_sent_to_the_model() {
        check("image/png", "iVBORw0KGgo=", true);
        check("image/jpeg", "/9j/4AAQ\n", true);
        // Invalid base64 would make the provider refuse the whole request.
        check("image/png", "not base64!", false);
        // A type the models do not take is only saved and named.
        check("image/svg+xml", "PHN2Zy8+", false);
        check("image/tiff", "SUkqAA==", false);
        let huge = "A".repeat(MAX_SEEN_BYTES / 3 * 4 + 8);
        check("image/png", &huge, false);
    }
}
