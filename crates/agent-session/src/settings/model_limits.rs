//! The limits of each model response (deadlines and size caps), resolved from the flags over the
//! `[limits]` keys over the library's defaults, each checked against its range (docs/limits.md).

use std::time::Duration;

use crate::{config::Limits, overrides::Overrides};

/// The default of `model_waiting_notice_secs`: after 10 s of silence a user wonders whether the
/// agent hangs, and a line every 10 s after that says it does not without filling the screen.
pub(crate) const DEFAULT_WAITING_NOTICE_SECS: u64 = 10;

/// The longest model deadline accepted, a day, as for every time limit (docs/limits.md).
const MAX_MODEL_SECS: u64 = 86_400;

/// The deadlines and size caps of each model response: the flags over the `[limits]` keys over
/// the library's defaults, each checked against its range (docs/limits.md).
pub(crate) fn response_limits(
    limits: &Limits,
    options: &Overrides,
) -> crate::Result<agent_model::ResponseLimits> {
    let mut out = agent_model::ResponseLimits::default();
    let secs =
        |key: &str, flag: Option<u64>, value: Option<u64>| -> crate::Result<Option<Duration>> {
            let (secs, name) = match (flag, value) {
                (Some(secs), _) => {
                    (secs, format!("--{}", key.trim_end_matches("_secs").replace('_', "-")))
                }
                (None, Some(secs)) => (secs, format!("[limits] {key}")),
                (None, None) => return Ok(None),
            };
            in_range(&name, secs, 1, MAX_MODEL_SECS, "seconds")?;
            Ok(Some(Duration::from_secs(secs)))
        };
    if let Some(at) = secs(
        "model_first_byte_timeout_secs",
        options.model_first_byte_timeout,
        limits.model_first_byte_timeout_secs,
    )? {
        out.first_byte_timeout = at;
    }
    if let Some(at) =
        secs("model_idle_timeout_secs", options.model_idle_timeout, limits.model_idle_timeout_secs)?
    {
        out.idle_timeout = at;
    }
    if let Some(at) = secs(
        "model_total_timeout_secs",
        options.model_total_timeout,
        limits.model_total_timeout_secs,
    )? {
        out.total_timeout = at;
    }
    // A cap under a kibibyte would refuse every real answer; above 64 GiB it bounds nothing.
    let (low, high) = (1024, 64 << 30);
    if let Some(bytes) = limits.model_max_body_bytes {
        out.max_body_bytes = in_range("[limits] model_max_body_bytes", bytes, low, high, "bytes")?;
    }
    if let Some(bytes) = limits.model_max_stream_bytes {
        out.max_stream_bytes =
            in_range("[limits] model_max_stream_bytes", bytes, low, high, "bytes")?;
    }
    if let Some(events) = limits.model_max_stream_events {
        out.max_stream_events =
            in_range("[limits] model_max_stream_events", events, 1, 1_000_000_000_000, "events")?;
    }
    if let Some(bytes) = limits.model_max_event_bytes {
        let bytes = in_range("[limits] model_max_event_bytes", bytes, low, 4 << 30, "bytes")?;
        out.max_event_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    if let Some(secs) = limits.model_waiting_notice_secs {
        in_range("[limits] model_waiting_notice_secs", secs, 0, 3600, "seconds")?;
    }
    Ok(out)
}

/// `value`, or an error naming the setting (a flag or a `[limits]` key) and its range, in the
/// words of the other limits' range checks.
fn in_range(name: &str, value: u64, low: u64, high: u64, unit: &str) -> crate::Result<u64> {
    if (low..=high).contains(&value) {
        return Ok(value);
    }
    crate::error::bail!("{name} = {value} is out of range: it takes {low} to {high} {unit}")
}
