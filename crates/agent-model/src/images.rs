//! Images in requests: which models take image input ([`sees_images`]), and which tool-output
//! images one request carries ([`ImagePlan`]): none for a model that cannot see, else the newest
//! up to [`MAX_REQUEST_IMAGE_BYTES`]. Both adapters send what the plan keeps.

use std::collections::HashSet;

use agent_core::{CallOutput, Image, Item};

/// The most image data one request carries, in bytes of base64 as sent. OpenAI takes 50 MB of
/// images a request; every later request of a session sends the transcript's images again, so
/// the newest are kept and older ones (which the model has seen) are left out, their text kept.
pub const MAX_REQUEST_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// Whether `model` takes image input, by its name (a prefix match on the name without any
/// `provider/` part, case-insensitive); `None` for a model the table does not know.
///
/// OpenAI's GPT-4o, GPT-4.1, GPT-5 and o-series models (except o1-mini and o3-mini) see; GPT-3.5,
/// the first GPT-4, gpt-oss and the usual text-only local models do not. Names that say `vision`,
/// `vl` or `llava` see. `docs/models.md` has the whole table and what an unknown model gets.
pub fn sees_images(model: &str) -> Option<bool> {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    if ["vision", "vl", "llava"].iter().any(|mark| name.contains(mark)) {
        return Some(true);
    }
    // Longest prefixes first within a family, since the first match wins.
    const KNOWN: &[(&str, bool)] = &[
        ("gpt-4o", true),
        ("chatgpt-4o", true),
        ("gpt-4.1", true),
        ("gpt-4.5", true),
        ("gpt-4-turbo", true),
        ("gpt-4", false),
        ("gpt-3.5", false),
        ("gpt-5", true),
        ("gpt-oss", false),
        ("o1-mini", false),
        ("o1-preview", false),
        ("o1", true),
        ("o3-mini", false),
        ("o3", true),
        ("o4-mini", true),
        ("codex-mini", true),
        ("computer-use", true),
        ("claude", true),
        ("gemini", true),
        ("deepseek", false),
        ("smollm", false),
        ("llama3", false),
        ("llama-3", false),
        ("qwen2.5-coder", false),
        ("qwen3-coder", false),
        ("qwen3", false),
        ("gemma3", true),
        ("gemma-3", true),
        ("gemma", false),
    ];
    KNOWN.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, sees)| *sees)
}

/// The tool outputs whose images a request carries, by `call_id`.
#[derive(Debug, Default)]
pub(crate) struct ImagePlan<'a> {
    sent: HashSet<&'a str>,
}

impl<'a> ImagePlan<'a> {
    /// The plan for `items`: nothing when the model takes no image input, else the images of the
    /// newest outputs while they fit [`MAX_REQUEST_IMAGE_BYTES`] together.
    pub(crate) fn new(items: &'a [Item], image_input: bool) -> Self {
        let mut sent = HashSet::new();
        if !image_input {
            return Self { sent };
        }
        let mut total = 0;
        let outputs = items.iter().rev().filter_map(|item| match item {
            Item::ToolOutput(output) if !output.images.is_empty() => Some(output),
            _ => None,
        });
        for output in outputs {
            let size: usize = output.images.iter().map(|image| image.data.len()).sum();
            if total + size > MAX_REQUEST_IMAGE_BYTES {
                break;
            }
            total += size;
            sent.insert(output.call_id.as_str());
        }
        Self { sent }
    }

    /// The images of `output` this request carries: all of them or none.
    pub(crate) fn images(&self, output: &'a CallOutput) -> &'a [Image] {
        if self.sent.contains(output.call_id.as_str()) { &output.images } else { &[] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(model: &str, expect: Option<bool>) {
        assert_eq!(sees_images(model), expect, "{model}");
    }

    #[test]
    fn model_families_that_see() {
        check("gpt-4o-mini", Some(true));
        check("gpt-4.1-nano", Some(true));
        check("gpt-5-codex", Some(true));
        check("openai/GPT-5.1", Some(true));
        check("o3", Some(true));
        check("o3-mini", Some(false));
        check("o1-preview", Some(false));
        check("o4-mini", Some(true));
        check("gpt-4", Some(false));
        check("gpt-4-turbo", Some(true));
        check("gpt-3.5-turbo", Some(false));
        check("gpt-oss-20b", Some(false));
        check("smollm2", Some(false));
        check("llama3.2-vision", Some(true));
        check("qwen2.5-vl-7b", Some(true));
        check("qwen3:8b", Some(false));
        check("qwen2.5vl:7b", Some(true));
        check("anthropic/claude-sonnet-4", Some(true));
        check("my-finetune", None);
    }

    fn output(call_id: &str, bytes: usize) -> Item {
        let image = Image { mime_type: "image/png".into(), data: "A".repeat(bytes) };
        Item::ToolOutput(CallOutput {
            call_id: call_id.into(),
            output: "an image".into(),
            ok: true,
            error: None,
            images: vec![image],
        })
    }

    #[test]
    fn the_newest_images_are_kept_within_the_budget() {
        let big = MAX_REQUEST_IMAGE_BYTES / 2 - 1;
        let items = [output("old", big), output("mid", big), output("new", big)];
        let plan = ImagePlan::new(&items, true);
        let kept: Vec<bool> = items
            .iter()
            .map(|item| match item {
                Item::ToolOutput(output) => !plan.images(output).is_empty(),
                _ => false,
            })
            .collect();
        assert_eq!(kept, [false, true, true]);
        let blind = ImagePlan::new(&items, false);
        assert!(items.iter().all(|item| match item {
            Item::ToolOutput(output) => blind.images(output).is_empty(),
            _ => true,
        }));
    }
}
