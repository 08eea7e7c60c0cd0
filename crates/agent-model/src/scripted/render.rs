//! Rendering a turn as realistic OpenAI payloads: Chat completions and chunks, Responses objects
//! and SSE events.

use serde_json::{Map, Value, json};

use super::script::{CallKind, Quirks, Turn};

/// What identifies one answer: the request number makes every id unique and deterministic.
pub(crate) struct Ids {
    pub(crate) n: usize,
    pub(crate) model: String,
}

impl Ids {
    fn created(&self) -> u64 {
        1_700_000_000 + self.n as u64
    }
}

fn fragments(text: &str, quirks: &Quirks) -> Vec<String> {
    let size = if quirks.fragment_chars == 0 { 8 } else { quirks.fragment_chars };
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|chunk| chunk.iter().collect()).collect()
}

/// Puts `id`, `object` and `created` in front of `fields`, unless the quirk omits them.
fn envelope(
    id: String,
    object: &str,
    created_key: &str,
    ids: &Ids,
    quirks: &Quirks,
    fields: Value,
) -> Value {
    let mut map = Map::new();
    if !quirks.omit_ids {
        map.insert("id".into(), json!(id));
        map.insert("object".into(), json!(object));
        map.insert(created_key.into(), json!(ids.created()));
    }
    map.insert("model".into(), json!(ids.model));
    if let Value::Object(fields) = fields {
        map.extend(fields);
    }
    Value::Object(map)
}

fn arguments_value(turn: &Turn, text: String) -> Value {
    if turn.quirks.arguments_as_object {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    } else {
        Value::String(text)
    }
}

fn usage_tokens(turn: &Turn) -> (usize, usize) {
    let output = turn.text.as_deref().map_or(0, str::len)
        + turn.reasoning.as_deref().map_or(0, str::len)
        + turn.tool_calls.iter().map(|call| call.argument_text().len()).sum::<usize>();
    (42, output / 4 + 1)
}

fn chat_finish_reason(turn: &Turn) -> String {
    match (&turn.quirks.finish_reason, turn.tool_calls.is_empty()) {
        (Some(reason), _) => reason.clone(),
        (None, true) => "stop".to_owned(),
        (None, false) => "tool_calls".to_owned(),
    }
}

fn chat_usage(turn: &Turn) -> Value {
    let (input, output) = usage_tokens(turn);
    json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": turn.reasoning.as_deref().map_or(0, |r| r.len() / 4)}
    })
}

fn chat_tool_call(
    turn: &Turn,
    index: usize,
    call: &super::script::ScriptedCall,
    arguments: Value,
    first: bool,
) -> Value {
    let custom = call.kind == CallKind::Custom;
    let mut wire = Map::new();
    if !turn.quirks.omit_tool_index {
        wire.insert("index".into(), json!(index));
    }
    if first && !turn.quirks.omit_ids {
        wire.insert("id".into(), json!(call.call_id));
        wire.insert("type".into(), json!(if custom { "custom" } else { "function" }));
    }
    let mut function = Map::new();
    if first {
        function.insert("name".into(), json!(call.name));
    }
    function.insert((if custom { "input" } else { "arguments" }).into(), arguments);
    wire.insert((if custom { "custom" } else { "function" }).into(), Value::Object(function));
    Value::Object(wire)
}

/// A whole `chat.completion` object.
pub(crate) fn chat_whole(turn: &Turn, ids: &Ids) -> Value {
    let mut message = json!({"role": "assistant", "content": turn.text});
    if let Some(reasoning) = &turn.reasoning {
        let field = if turn.quirks.reasoning_field { "reasoning" } else { "reasoning_content" };
        message[field] = json!(reasoning);
    }
    if !turn.tool_calls.is_empty() {
        let calls: Vec<Value> = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let arguments = arguments_value(turn, call.argument_text());
                let mut wire = chat_tool_call(turn, index, call, arguments, true);
                if let Some(map) = wire.as_object_mut() {
                    map.remove("index");
                }
                wire
            })
            .collect();
        message["tool_calls"] = json!(calls);
    }
    let mut choice = json!({"index": 0, "message": message, "logprobs": null, "finish_reason": chat_finish_reason(turn)});
    if turn.quirks.unknown_item {
        choice["stop_reason"] = json!(151_645);
        choice["matched_stop"] = json!({"token": 7});
    }
    envelope(
        format!("chatcmpl-scripted-{}", ids.n),
        "chat.completion",
        "created",
        ids,
        &turn.quirks,
        json!({"choices": [choice], "usage": chat_usage(turn), "system_fingerprint": "fp_scripted"}),
    )
}

/// The `data:` payloads of a streamed chat completion, `[DONE]` included.
pub(crate) fn chat_stream(turn: &Turn, ids: &Ids) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let choice = json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish});
        let body = envelope(
            format!("chatcmpl-scripted-{}", ids.n),
            "chat.completion.chunk",
            "created",
            ids,
            &turn.quirks,
            json!({"system_fingerprint": "fp_scripted", "choices": [choice]}),
        );
        sse(None, &body)
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    if let Some(reasoning) = &turn.reasoning {
        let field = if turn.quirks.reasoning_field { "reasoning" } else { "reasoning_content" };
        for piece in fragments(reasoning, &turn.quirks) {
            events.push(chunk(json!({ field: piece }), Value::Null));
        }
    }
    if let Some(text) = &turn.text {
        for piece in fragments(text, &turn.quirks) {
            events.push(chunk(json!({ "content": piece }), Value::Null));
        }
    }
    // Each call's fragments: the header fragment with id and name, then the argument pieces.
    let per_call: Vec<Vec<Value>> = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            if turn.quirks.arguments_as_object {
                let arguments = arguments_value(turn, call.argument_text());
                return vec![chat_tool_call(turn, index, call, arguments, true)];
            }
            let mut parts = vec![chat_tool_call(turn, index, call, json!(""), true)];
            for piece in fragments(&call.argument_text(), &turn.quirks) {
                parts.push(chat_tool_call(turn, index, call, json!(piece), false));
            }
            parts
        })
        .collect();
    for fragment in order(per_call, turn.quirks.interleave_arguments) {
        events.push(chunk(json!({ "tool_calls": [fragment] }), Value::Null));
    }
    events.push(chunk(json!({}), json!(chat_finish_reason(turn))));
    let usage = envelope(
        format!("chatcmpl-scripted-{}", ids.n),
        "chat.completion.chunk",
        "created",
        ids,
        &turn.quirks,
        json!({"choices": [], "usage": chat_usage(turn)}),
    );
    events.push(sse(None, &usage));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// Sequential, or round-robin when interleaving (the header fragments still come first).
fn order(per_call: Vec<Vec<Value>>, interleave: bool) -> Vec<Value> {
    if !interleave {
        return per_call.into_iter().flatten().collect();
    }
    let longest = per_call.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for step in 0..longest {
        for parts in &per_call {
            if let Some(part) = parts.get(step) {
                out.push(part.clone());
            }
        }
    }
    out
}

/// The output items of a Responses answer, finished.
fn responses_items(turn: &Turn, ids: &Ids) -> Vec<Value> {
    let mut items = Vec::new();
    if turn.quirks.unknown_item {
        items.push(json!({"type": "web_search_call", "id": format!("ws_scripted_{}", ids.n), "status": "completed", "action": {"type": "search", "query": "weather"}}));
    }
    if let Some(reasoning) = &turn.reasoning {
        items.push(json!({
            "type": "reasoning",
            "id": format!("rs_scripted_{}", ids.n),
            "summary": [{"type": "summary_text", "text": reasoning}],
            "encrypted_content": format!("enc_scripted_{}", ids.n),
        }));
    }
    if let Some(text) = &turn.text {
        items.push(json!({
            "type": "message",
            "id": format!("msg_scripted_{}", ids.n),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }));
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let mut item = match call.kind {
            CallKind::Function => json!({
                "type": "function_call",
                "id": format!("fc_scripted_{}_{index}", ids.n),
                "status": "completed",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": arguments_value(turn, call.argument_text()),
            }),
            CallKind::Custom => json!({
                "type": "custom_tool_call",
                "id": format!("ctc_scripted_{}_{index}", ids.n),
                "status": "completed",
                "call_id": call.call_id,
                "name": call.name,
                "input": call.argument_text(),
            }),
            CallKind::ApplyPatch => json!({
                "type": "apply_patch_call",
                "id": format!("apc_scripted_{}_{index}", ids.n),
                "status": "completed",
                "call_id": call.call_id,
                "operation": call.arguments,
            }),
            CallKind::Shell => json!({
                "type": "shell_call",
                "id": format!("sh_scripted_{}_{index}", ids.n),
                "status": "completed",
                "call_id": call.call_id,
                "action": call.arguments,
            }),
        };
        if turn.quirks.omit_ids
            && let Some(map) = item.as_object_mut()
        {
            map.remove("id");
        }
        items.push(item);
    }
    items
}

fn responses_usage(turn: &Turn) -> Value {
    let (input, output) = usage_tokens(turn);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": turn.reasoning.as_deref().map_or(0, |r| r.len() / 4)},
        "total_tokens": input + output
    })
}

fn response_object(turn: &Turn, ids: &Ids, status: &str, output: Vec<Value>) -> Value {
    let usage = if status == "completed" { responses_usage(turn) } else { Value::Null };
    envelope(
        format!("resp_scripted_{}", ids.n),
        "response",
        "created_at",
        ids,
        &turn.quirks,
        json!({"status": status, "output": output, "parallel_tool_calls": false, "usage": usage}),
    )
}

/// A whole `response` object.
pub(crate) fn responses_whole(turn: &Turn, ids: &Ids) -> Value {
    response_object(turn, ids, "completed", responses_items(turn, ids))
}

/// The SSE events of a streamed response (`event:` line and `data:`).
pub(crate) fn responses_stream(turn: &Turn, ids: &Ids) -> Vec<String> {
    let mut bodies: Vec<Value> = Vec::new();
    bodies.push(json!({"type": "response.created", "response": response_object(turn, ids, "in_progress", Vec::new())}));
    bodies.push(json!({"type": "response.in_progress", "response": response_object(turn, ids, "in_progress", Vec::new())}));
    let items = responses_items(turn, ids);
    let mut calls = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let id = item["id"].clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                bodies.push(json!({"type": "response.output_item.added", "output_index": index, "item": {"type": "reasoning", "id": id, "summary": []}}));
                let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                for piece in fragments(text, &turn.quirks) {
                    bodies.push(json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": index, "summary_index": 0, "delta": piece}));
                }
                bodies.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
            Some("message") => {
                bodies.push(json!({"type": "response.output_item.added", "output_index": index, "item": {"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []}}));
                bodies.push(json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}));
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                for piece in fragments(text, &turn.quirks) {
                    bodies.push(json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": piece}));
                }
                bodies.push(json!({"type": "response.output_text.done", "item_id": id, "output_index": index, "content_index": 0, "text": text}));
                bodies.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
            Some("function_call" | "custom_tool_call" | "apply_patch_call" | "shell_call") => {
                calls.push((index, item.clone()));
            }
            _ => {
                bodies.push(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
                bodies.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
            }
        }
    }
    let mut per_call = Vec::new();
    for (index, item) in &calls {
        if item["type"] == "apply_patch_call" || item["type"] == "shell_call" {
            // The built-ins' items arrive whole, in their place among the calls.
            let mut added = item.clone();
            added["status"] = json!("in_progress");
            per_call.push(vec![
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
                json!({"type": "response.output_item.done", "output_index": index, "item": item}),
            ]);
            continue;
        }
        // A custom call streams its input as a function call streams its arguments.
        let (field, event) = if item["type"] == "custom_tool_call" {
            ("input", "response.custom_tool_call_input")
        } else {
            ("arguments", "response.function_call_arguments")
        };
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        added[field] = json!("");
        let mut parts = vec![
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        ];
        let text = match &item[field] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        for piece in fragments(&text, &turn.quirks) {
            parts.push(json!({"type": format!("{event}.delta"), "item_id": item["id"], "output_index": index, "delta": piece}));
        }
        parts.push(json!({"type": format!("{event}.done"), "item_id": item["id"], "output_index": index, field: text}));
        parts.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
        per_call.push(parts);
    }
    bodies.extend(order(per_call, turn.quirks.interleave_arguments));
    bodies.push(json!({"type": "response.completed", "response": response_object(turn, ids, "completed", items)}));
    bodies
        .into_iter()
        .enumerate()
        .map(|(sequence, mut body)| {
            body["sequence_number"] = json!(sequence);
            let kind = body["type"].as_str().unwrap_or_default().to_owned();
            sse(Some(&kind), &body)
        })
        .collect()
}

/// One SSE event.
pub(crate) fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(event) => format!("event: {event}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}
