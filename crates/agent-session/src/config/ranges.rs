//! The range of every bounded key of the config file, checked when the file is read.

use crate::error::bail;

/// The values a numeric setting accepts. Every bounded key is checked when the file is read, so
/// a value that would break every call (a zero time limit, a deadline past the end of time) is
/// refused at once, naming the key and the range, instead of failing later in a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
    /// What the value counts, for messages (`seconds`, `bytes`).
    pub unit: &'static str,
}

/// A time limit in seconds: at least one, at most a day (a longer one is a mistake, and a
/// deadline that far out must still be representable).
pub(super) const SECONDS: Range = Range { min: 1, max: 86_400, unit: "seconds" };

/// Every bounded key of the config file with its range, as `docs/limits.md` lists them (a test
/// keeps the two in step).
pub(super) const RANGES: &[(&str, Range)] = &[
    ("tool_timeout_secs", SECONDS),
    ("output_cap", Range { min: 100, max: 10_000_000, unit: "characters" }),
    ("bash_timeout_secs", SECONDS),
    ("bash_max_timeout_secs", SECONDS),
    ("web_search.timeout_secs", Range { min: 1, max: 600, unit: "seconds" }),
    ("hooks.timeout_sec", SECONDS),
    ("max_turns", Range { min: 1, max: 10_000, unit: "turns" }),
    ("context_window", Range { min: 1_024, max: 100_000_000, unit: "tokens" }),
    ("mcp_tool_budget_tokens", Range { min: 0, max: 10_000_000, unit: "tokens" }),
    ("model_first_byte_timeout_secs", SECONDS),
    ("model_idle_timeout_secs", SECONDS),
    ("model_total_timeout_secs", SECONDS),
    // A cap under a kibibyte would refuse every real answer; above 64 GiB it bounds nothing.
    ("model_max_body_bytes", Range { min: 1_024, max: 64 << 30, unit: "bytes" }),
    ("model_max_stream_bytes", Range { min: 1_024, max: 64 << 30, unit: "bytes" }),
    ("model_max_stream_events", Range { min: 1, max: 1_000_000_000_000, unit: "events" }),
    ("model_max_event_bytes", Range { min: 1_024, max: 4 << 30, unit: "bytes" }),
    ("model_waiting_notice_secs", Range { min: 0, max: 3_600, unit: "seconds" }),
    ("lsp.edit_wait_ms", Range { min: 50, max: 60_000, unit: "milliseconds" }),
    ("lsp.max_shown", Range { min: 1, max: 100, unit: "errors" }),
    ("lsp.max_processes", Range { min: 2, max: 4_096, unit: "processes" }),
    ("lsp.max_memory_mb", Range { min: 256, max: 1 << 20, unit: "MiB" }),
    ("skills.budget_percent", Range { min: 0, max: 50, unit: "percent" }),
    ("skills.budget_tokens", Range { min: 0, max: 1_000_000, unit: "tokens" }),
    ("telemetry.export_timeout_ms", Range { min: 10, max: 60_000, unit: "milliseconds" }),
    ("checkpoints.max_file_bytes", Range { min: 1, max: 1_000_000_000_000, unit: "bytes" }),
    ("checkpoints.store_cap_bytes", Range { min: 1_024, max: 10_000_000_000_000, unit: "bytes" }),
    ("checkpoints.gc_days", Range { min: 1, max: 36_500, unit: "days" }),
];

/// The range of `key` in [`RANGES`].
fn range_of(key: &str) -> Range {
    RANGES.iter().find(|(name, _)| *name == key).map_or(SECONDS, |(_, range)| *range)
}

/// Refuses `value` of `key` (shown as `place`, e.g. `[limits] output_cap`) outside its range.
pub fn check_range(place: &str, key: &str, value: Option<u64>) -> crate::Result<()> {
    let Some(value) = value else { return Ok(()) };
    let Range { min, max, unit } = range_of(key);
    if !(min..=max).contains(&value) {
        bail!("{place} = {value} is out of range: it takes {min} to {max} {unit}");
    }
    Ok(())
}
