//! The status line as a command prints it: the JSON it reads (Claude Code's `statusLine` input,
//! with the fields this agent has), running it with a time limit, and making its first line safe
//! to draw: colours kept, every other control sequence dropped, cut to the terminal's width.

use std::{path::PathBuf, time::Duration};

use agent_exec::process::{self, ProcessSpec};
use serde_json::{Value, json};
use unicode_width::UnicodeWidthChar;

use super::Snapshot;

/// The most bytes of a command's output read; the line is its first.
const MAX_OUTPUT_BYTES: usize = 4096;

/// What the command reads on stdin: Claude Code's field names where it has one.
pub(super) fn input(snapshot: &Snapshot) -> Value {
    let tokens = &snapshot.tokens;
    let reported = |count: u64| if tokens.reported { json!(count) } else { Value::Null };
    let context = snapshot.context;
    json!({
        "hook_event_name": "Status",
        "session_id": snapshot.session,
        "transcript_path": snapshot.transcript,
        "cwd": snapshot.workspace,
        "model": {"id": snapshot.model, "display_name": snapshot.model},
        "workspace": {"current_dir": snapshot.workspace, "project_dir": snapshot.workspace},
        "version": env!("CARGO_PKG_VERSION"),
        "permission_mode": snapshot.mode,
        "cost": {"total_cost_usd": snapshot.cost},
        "context_window": {
            "total_input_tokens": reported(tokens.input),
            "total_output_tokens": reported(tokens.output),
            "cached_input_tokens": reported(tokens.cached),
            "context_window_size": context.map(|fill| fill.window),
            "used_tokens": context.map(|fill| fill.tokens),
            "used_percentage": context.map(|fill| fill.percent()),
            "remaining_percentage": context.map(|fill| 100u64.saturating_sub(fill.percent())),
        },
        "jobs": {"running": snapshot.jobs},
    })
}

/// Runs `command` (`bash -c`, in `cwd`, outside the sandbox as a hook runs: the user's own
/// program) with `input` on stdin; its first line, or nothing when it fails, prints nothing or
/// outlives `timeout` (then its process group is killed).
pub(super) fn run(command: &str, input: &str, timeout: Duration, cwd: &str) -> String {
    let mut spec = ProcessSpec::bash(command);
    spec.stdin = Some(input.as_bytes().to_vec());
    spec.separate_stderr = true;
    spec.max_output_bytes = MAX_OUTPUT_BYTES;
    let cancel = agent_core::CancellationToken::new();
    let run = process::run_unsandboxed(spec, PathBuf::from(cwd), cancel, Some(timeout));
    // A runtime of its own: the REPL calls this between turns, outside its runtime.
    let ran = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())
        .and_then(|runtime| runtime.block_on(run).map_err(|err| err.to_string()));
    match ran {
        Ok(output) if output.success() => output.output.lines().next().unwrap_or("").to_owned(),
        _ => String::new(),
    }
}

/// `line` made safe to draw in `width` columns: SGR sequences (colours, `ESC [ … m`) are kept
/// and reset at the end, every other escape sequence and control character is dropped, and the
/// text is cut at the width, so a line can neither move the cursor nor wrap onto the prompt.
pub(super) fn fit(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let mut coloured = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            let sequence = escape(&mut chars);
            if sequence.ends_with('m') && sequence.starts_with('[') {
                out.push('\x1b');
                out.push_str(&sequence);
                coloured = true;
            }
            continue;
        }
        if c.is_control() {
            continue;
        }
        let cells = c.width().unwrap_or(0);
        if used + cells > width {
            break;
        }
        used += cells;
        out.push(c);
    }
    if coloured {
        out.push_str("\x1b[0m");
    }
    out
}

/// The rest of an escape sequence after ESC: a CSI (`[` parameters, one final byte), an OSC (`]`
/// up to BEL or ST, a title or a link), or one character for anything else.
fn escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut sequence = String::new();
    match chars.next() {
        Some('[') => {
            sequence.push('[');
            for c in chars.by_ref() {
                sequence.push(c);
                if ('\x40'..='\x7e').contains(&c) {
                    break;
                }
            }
            // A colour has only digits and `;` between `[` and `m`.
            let body = sequence.get(1..sequence.len() - 1).unwrap_or("?");
            if !body.chars().all(|c| c.is_ascii_digit() || c == ';') {
                sequence.clear();
            }
        }
        Some(']') => {
            sequence.push(']');
            while let Some(c) = chars.next() {
                if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        Some(other) => sequence.push(other),
        None => {}
    }
    sequence
}
