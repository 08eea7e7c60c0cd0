//! One compaction: shrink old tool outputs, and if that is not enough, replace the older turns by
//! a summary the model writes plus the harness's ledger, keeping the first user message, the
//! latest user message and the latest turns verbatim, and every call with its output.

use std::{ops::Range, path::Path};

use agent_core::{
    CancellationToken, Item, Message, ModelClient, ModelError, ModelErrorKind, ModelEvent,
    ModelRequest, Role, ToolChoice,
};
use futures_util::StreamExt;

use super::{CompactionInfo, CompactionReason, ContextConfig, count};
use crate::{Executor, conversation::Conversation, output::spill_path};

/// The words every summary request starts with; a scripted server can answer summary requests
/// by them without consuming its script.
pub const SUMMARY_MARKER: &str = "You are compacting a conversation";

/// The instructions of a summary request.
pub const SUMMARY_PROMPT: &str = "You are compacting a conversation between a user and a coding \
agent, so that the agent can go on with less context. Write a concise summary of the transcript \
the user sends: the user's goal and constraints in their own words, what has been done and found, \
decisions taken, what remains to do, and the exact file paths, names and error messages the agent \
will need. A ledger of files and commands is added by the harness, so do not list every command. \
Do not call tools; answer with the summary only.";

/// The header of the message that replaces compacted turns.
const SUMMARY_HEADER: &str = "[harness] Earlier turns of this conversation were compacted to \
save context. The full outputs are saved at the paths the ledger lists; read them again if you \
need them.";
/// The note a shrunk output ends with; also how an already shrunk output is recognised.
const SHRUNK: &str = "output shrunk by compaction";
/// The note that replaces the arguments of a failed call; also how they are recognised.
const SHRUNK_ARGUMENTS: &str = "arguments shrunk by compaction";
/// The most characters of one item the summary request shows.
const RENDER_ITEM_CHARS: usize = 600;

/// Compacts `conversation` in place and says what it did. The transcript stays valid: every
/// call keeps its output, or both go. The compaction is one `compact` span (docs/telemetry.md).
pub(crate) async fn compact(
    model: &dyn ModelClient,
    ctx: &ContextConfig,
    executor: &Executor,
    conversation: &mut Conversation,
    fixed: usize,
    reason: CompactionReason,
    cancel: &CancellationToken,
) -> CompactionInfo {
    use opentelemetry::context::FutureExt;
    let span = executor.otel().compaction();
    let info = compact_in_span(model, ctx, executor, conversation, fixed, reason, cancel)
        .with_context(span.clone())
        .await;
    crate::telemetry::finish_compaction(&span, &info);
    info
}

/// [`compact`], inside its span.
async fn compact_in_span(
    model: &dyn ModelClient,
    ctx: &ContextConfig,
    executor: &Executor,
    conversation: &mut Conversation,
    fixed: usize,
    reason: CompactionReason,
    cancel: &CancellationToken,
) -> CompactionInfo {
    let counter = &*ctx.counter;
    let tokens =
        |items: &[Item]| fixed + items.iter().map(|item| count::item(counter, item)).sum::<usize>();
    let items = &mut conversation.items;
    let mut info = CompactionInfo {
        reason,
        tokens_before: tokens(items),
        tokens_after: 0,
        items_before: items.len(),
        items_after: 0,
        outputs_shrunk: 0,
        arguments_shrunk: 0,
        turns_dropped: 0,
        summarized: false,
        summary_error: None,
    };
    // The user's PreCompact hooks may veto a compaction they asked for or the threshold
    // triggered; after an overflow the request cannot be sent as it is, so it compacts anyway.
    let trigger = if reason == CompactionReason::Manual { "manual" } else { "auto" };
    let hook = executor.hooks().pre_compact(trigger, None, cancel).await;
    if let Some(why) = hook.block
        && reason != CompactionReason::Overflow
    {
        tracing::info!(reason = %why, "a PreCompact hook blocked the compaction");
        info.tokens_after = info.tokens_before;
        info.items_after = items.len();
        return info;
    }
    let session_dir = executor.config().session_dir.as_deref();
    let groups = groups(items);

    // First the cheap step: old outputs shrink to their head and a pointer to the full text.
    let old_end = groups
        .len()
        .checked_sub(ctx.shrink_after_turns)
        .and_then(|index| groups.get(index))
        .map_or(0, |group| group.start);
    for index in 0..old_end {
        if shrink_output(conversation, index, ctx, session_dir) {
            info.outputs_shrunk += 1;
        }
    }
    // The arguments of a call that failed are of no more use once its output says why: a
    // refused 80 MB `write_file` would otherwise be resent with every request.
    info.arguments_shrunk =
        shrink_failed_arguments(&mut conversation.items, ctx.shrink_head_chars * 2);
    let shrunk_tokens = tokens(&conversation.items);
    if reason == CompactionReason::Threshold && shrunk_tokens <= ctx.target_tokens() {
        info.tokens_after = shrunk_tokens;
        info.items_after = conversation.items.len();
        return info;
    }
    summarize_turns(model, ctx, executor, conversation, &mut info, cancel).await;
    // Last, while the request is still over what it must come under, the outputs of the kept
    // turns shrink too, the current turn's included, oldest first, so the newest stays whole
    // where it fits: after an overflow the same request must not be sent again.
    let goal = match reason {
        CompactionReason::Threshold => Some(ctx.threshold_tokens()),
        CompactionReason::Overflow => Some(ctx.target_tokens().min(info.tokens_before / 4)),
        CompactionReason::Manual => None,
    };
    if let Some(goal) = goal {
        let mut total = tokens(&conversation.items);
        for index in 0..conversation.items.len() {
            if total <= goal {
                break;
            }
            if !matches!(conversation.items[index], Item::ToolOutput(_)) {
                continue;
            }
            let before = count::item(counter, &conversation.items[index]);
            if shrink_output(conversation, index, ctx, session_dir) {
                let after = count::item(counter, &conversation.items[index]);
                total = (total + after).saturating_sub(before);
                info.outputs_shrunk += 1;
            }
        }
    }
    info.tokens_after = tokens(&conversation.items);
    info.items_after = conversation.items.len();
    info
}

/// Shrinks the item at `index` to its head and a pointer to its saved full text, when it is a
/// tool output long enough to be worth it and not shrunk already; says whether it did.
fn shrink_output(
    conversation: &mut Conversation,
    index: usize,
    ctx: &ContextConfig,
    session_dir: Option<&Path>,
) -> bool {
    let items = &mut conversation.items;
    let Item::ToolOutput(output) = &items[index] else { return false };
    if output.output.chars().count() <= ctx.shrink_head_chars * 2 || output.output.contains(SHRUNK)
    {
        return false;
    }
    let tool = tool_name(items, &output.call_id);
    let saved = save_full(session_dir, &output.call_id, &output.output);
    let shrunk = shrink(&output.output, ctx.shrink_head_chars, saved.as_deref());
    conversation.ledger.dropped(&output.call_id, &tool, saved);
    if let Item::ToolOutput(output) = &mut items[index] {
        output.output = shrunk;
    }
    true
}

/// Replaces the summarised turns by the summary and the ledger (see `docs/context.md`); leaves
/// the items alone when no turn can go.
async fn summarize_turns(
    model: &dyn ModelClient,
    ctx: &ContextConfig,
    executor: &Executor,
    conversation: &mut Conversation,
    info: &mut CompactionInfo,
    cancel: &CancellationToken,
) {
    let counter = &*ctx.counter;
    let session_dir = executor.config().session_dir.as_deref();
    let items = &mut conversation.items;
    let groups = groups(items);

    // Then the summary: which turns stay, which go.
    // A summary of an earlier compaction is the harness's message, not the user's: it is
    // summarised again with the turns it replaced rather than kept.
    let is_user = |item: &Item| matches!(item, Item::Message(m) if m.role == Role::User && !m.content.starts_with(SUMMARY_HEADER));
    let first_user = items.iter().position(is_user).unwrap_or(0);
    let last_user = items.iter().rposition(is_user).unwrap_or(0);
    let head_end = groups.iter().position(|group| group.contains(&first_user)).map_or(0, |g| g + 1);
    let mut tail_start = groups.len().saturating_sub(1).max(head_end);
    // On an overflow the count was evidently too low for this model, and a manual compaction
    // should visibly compact: both keep at most a quarter of what there was.
    let keep = match info.reason {
        CompactionReason::Threshold => ctx.keep_recent(),
        CompactionReason::Overflow | CompactionReason::Manual => {
            ctx.keep_recent().min(info.tokens_before / 4)
        }
    };
    let mut kept = 0;
    while tail_start > head_end {
        let group = &groups[tail_start - 1];
        let size: usize = items[group.clone()].iter().map(|item| count::item(counter, item)).sum();
        if kept + size > keep {
            break;
        }
        kept += size;
        tail_start -= 1;
    }
    let dropped_groups: Vec<usize> =
        (head_end..tail_start).filter(|&index| !groups[index].contains(&last_user)).collect();
    if dropped_groups.is_empty() {
        return;
    }
    let dropped: Vec<Item> =
        dropped_groups.iter().flat_map(|&index| items[groups[index].clone()].to_vec()).collect();
    conversation.ledger.record(&dropped, executor.registry());
    for item in &dropped {
        if let Item::ToolOutput(output) = item {
            let saved = save_full(session_dir, &output.call_id, &output.output);
            conversation.ledger.dropped(
                &output.call_id,
                &tool_name(&dropped, &output.call_id),
                saved,
            );
        }
    }
    conversation.ledger.compactions += 1;
    let summary = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ModelError::new(ModelErrorKind::Cancelled, "cancelled by the user")),
        summary = summarize(model, ctx, &dropped) => summary,
    };
    // The background work still running, with the file that holds each job's whole output.
    let open_jobs = executor.background().map(|work| work.running()).unwrap_or_default();
    let body = match &summary {
        Ok(text) => format!("Summary written by the model:\n{}", text.trim()),
        Err(err) => {
            info.summary_error = Some(err.to_string());
            format!(
                "No summary: the summary request failed ({err}), so the turns were dropped; \
                 the ledger below says what they did."
            )
        }
    };
    info.summarized = summary.is_ok();
    info.turns_dropped = dropped_groups.len();
    let text = format!(
        "{SUMMARY_HEADER} (compaction {}, {} turns)\n\n{body}\n\n{}",
        conversation.ledger.compactions,
        dropped_groups.len(),
        conversation.ledger.render(&open_jobs)
    );
    // Pinned state (the plan) is copied whole from the session's own copy, never from a summary.
    let text = match executor.pinned().and_then(|pinned| pinned.pinned()) {
        Some(block) => format!("{text}\n{block}"),
        None => text,
    };
    let mut rebuilt = Vec::with_capacity(items.len());
    for (index, group) in groups.iter().enumerate() {
        if index == head_end {
            rebuilt.push(Item::Message(Message::user(text.clone())));
        }
        if !dropped_groups.contains(&index) {
            rebuilt.extend_from_slice(&items[group.clone()]);
        }
    }
    *items = rebuilt;
}

/// Replaces the arguments of every failed call that are longer than `max` characters by a short
/// note (still a JSON object, as every API expects); returns how many. The call's output stays,
/// so the model still reads why it failed.
fn shrink_failed_arguments(items: &mut [Item], max: usize) -> usize {
    let failed: Vec<(String, String)> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolOutput(output) if !output.ok => Some((
                output.call_id.clone(),
                output.error.as_ref().map_or_else(|| "error".to_owned(), ToString::to_string),
            )),
            _ => None,
        })
        .collect();
    let mut shrunk = 0;
    for item in items.iter_mut() {
        let Item::ToolCall(call) = item else { continue };
        let Some((_, code)) = failed.iter().find(|(id, _)| *id == call.call_id) else { continue };
        let length = call.arguments.chars().count();
        if length <= max || call.arguments.contains(SHRUNK_ARGUMENTS) {
            continue;
        }
        let note = format!(
            "{SHRUNK_ARGUMENTS}: {length} characters left out; the call failed ({code}), see \
             its output"
        );
        call.arguments = serde_json::json!({ "harness": note }).to_string();
        shrunk += 1;
    }
    shrunk
}

/// The transcript cut into turns: a user message alone, or one model response with the outputs
/// of its calls. A turn is the unit a compaction keeps or drops, so a call never loses its output.
fn groups(items: &[Item]) -> Vec<Range<usize>> {
    let is_user = |item: &Item| matches!(item, Item::Message(m) if m.role != Role::Assistant);
    let mut groups: Vec<Range<usize>> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let starts = index == 0
            || is_user(item)
            || is_user(&items[index - 1])
            || (!matches!(item, Item::ToolOutput(_))
                && matches!(items[index - 1], Item::ToolOutput(_)));
        match groups.last_mut() {
            Some(group) if !starts => group.end = index + 1,
            _ => groups.push(index..index + 1),
        }
    }
    groups
}

fn tool_name(items: &[Item], call_id: &str) -> String {
    items
        .iter()
        .find_map(|item| match item {
            Item::ToolCall(call) if call.call_id == call_id => Some(call.name.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "tool".to_owned())
}

/// The full text of an output on disk: the executor's spill file when the output was capped
/// (it holds more than the model saw), else this text, written now. Compaction is rare and the
/// files are small (capped outputs), so the write is done in place rather than on the blocking
/// pool.
fn save_full(session_dir: Option<&Path>, call_id: &str, text: &str) -> Option<String> {
    let path = spill_path(session_dir?, call_id);
    // A file there is whole: `save` renames it into place only once it is written.
    if !path.exists() {
        crate::output::save(&path, text).ok()?;
    }
    Some(path.display().to_string())
}

/// The head of an output, cut on a character boundary, and the pointer to the rest.
fn shrink(output: &str, head_chars: usize, saved: Option<&str>) -> String {
    let total = output.chars().count();
    let head: String = output.chars().take(head_chars).collect();
    let where_ = match saved {
        Some(path) => format!("full text: {path}"),
        None => "the full text was not saved (no session directory)".to_owned(),
    };
    format!("{head}\n[harness: {SHRUNK}; showing {head_chars} of {total} characters; {where_}]")
}

/// Asks the model for a summary of `dropped`, rendered as text within half the window.
async fn summarize(
    model: &dyn ModelClient,
    ctx: &ContextConfig,
    dropped: &[Item],
) -> Result<String, ModelError> {
    let mut text = render(dropped);
    let budget = usize::try_from(ctx.current_window() / 2).unwrap_or(usize::MAX);
    while ctx.counter.count(&text) > budget && text.len() > 1000 {
        // Keep the beginning (the task) and the end (the latest state), drop the middle.
        let chars: Vec<char> = text.chars().collect();
        let keep = chars.len() / 4;
        let head: String = chars[..keep].iter().collect();
        let tail: String = chars[chars.len() - keep..].iter().collect();
        text = format!("{head}\n[… middle of the transcript left out …]\n{tail}");
    }
    let items = [Item::Message(Message::user(text))];
    let request = ModelRequest {
        instructions: SUMMARY_PROMPT,
        items: &items,
        tools: &[],
        tool_choice: &ToolChoice::None,
        parallel_tool_calls: false,
        continuation: None,
        output_schema: None,
    };
    let mut stream = model.stream(request).await?;
    let mut summary = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            ModelEvent::Message(message) => summary.push_str(&message.content),
            ModelEvent::Completed { .. } => break,
            _ => {}
        }
    }
    if summary.trim().is_empty() {
        return Err(ModelError::new(ModelErrorKind::BadResponse, "the summary came back empty"));
    }
    Ok(summary)
}

/// The dropped turns as plain text for the summary request, each item cut to a few hundred
/// characters.
fn render(items: &[Item]) -> String {
    let cut = |text: &str| {
        let mut out: String = text.chars().take(RENDER_ITEM_CHARS).collect();
        if text.chars().count() > RENDER_ITEM_CHARS {
            out.push_str(" […]");
        }
        out
    };
    let mut text = String::from("The transcript to summarise:\n");
    for item in items {
        let line = match item {
            Item::Message(message) => {
                format!("{}: {}", message.role.as_str(), cut(&message.content))
            }
            Item::ToolCall(call) => {
                format!("call {} {}({})", call.call_id, call.name, cut(&call.arguments))
            }
            Item::ToolOutput(output) => {
                format!("output of {}: {}", output.call_id, cut(&output.output))
            }
            Item::Reasoning(reasoning) => match &reasoning.text {
                Some(text) => format!("reasoning: {}", cut(text)),
                None => continue,
            },
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use agent_core::{CallOutput, ToolCall};

    use super::*;

    fn call(id: &str) -> Item {
        Item::ToolCall(ToolCall {
            call_id: id.to_owned(),
            name: "t".to_owned(),
            arguments: "{}".to_owned(),
            item_id: None,
            shape: agent_core::CallShape::Function,
        })
    }

    fn output(id: &str) -> Item {
        Item::ToolOutput(CallOutput {
            call_id: id.to_owned(),
            output: "x".to_owned(),
            ok: true,
            error: None,
            images: Vec::new(),
        })
    }

    #[test]
    fn turns_keep_calls_with_their_outputs() {
        let items = [
            Item::Message(Message::user("goal")),
            call("a"),
            call("b"),
            output("a"),
            output("b"),
            Item::Message(Message::assistant("thinking")),
            call("c"),
            output("c"),
            Item::Message(Message::assistant("done")),
            Item::Message(Message::user("next")),
        ];
        assert_eq!(groups(&items), vec![0..1, 1..5, 5..8, 8..9, 9..10]);
    }

    #[test]
    fn a_shrunk_output_keeps_its_head_and_points_to_the_rest() {
        let text = shrink(&"é".repeat(50), 10, Some("/s/outputs/c.txt"));
        assert_eq!(
            text,
            format!(
                "{}\n[harness: {SHRUNK}; showing 10 of 50 characters; full text: /s/outputs/c.txt]",
                "é".repeat(10)
            )
        );
    }
}
