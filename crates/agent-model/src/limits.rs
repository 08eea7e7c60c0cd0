//! The bounds on one model response: its deadlines (first byte, idle, total) and its sizes (body
//! bytes, stream bytes and events, one event's bytes), and the errors that name them.

use std::time::Duration;

use agent_core::{ModelError, ModelErrorKind};
use tokio::time::Instant;

/// Deadlines and size caps of one model response, streamed or whole.
///
/// Each error names the bound it hit by the agent CLI's `[limits]` key for it: `model_` and the
/// field's name, with `_secs` for the times (`model_total_timeout_secs`). `docs/limits.md` lists
/// every bound, its default and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseLimits {
    /// The longest wait from sending a request (each attempt) to the first byte of the response
    /// body. Headers alone do not count: many servers send them at once and then think.
    pub first_byte_timeout: Duration,
    /// The longest silence between two reads of the body once its first byte arrived.
    pub idle_timeout: Duration,
    /// The longest a whole response may take, from the first attempt (retries and their waits
    /// included) to its last byte.
    pub total_timeout: Duration,
    /// The largest whole (not streamed) response body, which is held in memory to be parsed.
    pub max_body_bytes: u64,
    /// The most bytes one streamed response may send. They are not kept, so this caps a runaway
    /// stream's time and traffic rather than memory.
    pub max_stream_bytes: u64,
    /// The most events one streamed response may send.
    pub max_stream_events: u64,
    /// The largest single event of a stream (the only part of a stream held whole in memory).
    pub max_event_bytes: usize,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        Self {
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(300),
            total_timeout: Duration::from_secs(1800),
            max_body_bytes: 16 * MIB,
            max_stream_bytes: 128 * MIB,
            max_stream_events: 1_000_000,
            max_event_bytes: 16 << 20,
        }
    }
}

const MIB: u64 = 1 << 20;

/// The deadlines of one response, fixed when its request starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    /// When the whole response must be over; `None` when the limit is too far away to compute.
    pub(crate) total: Option<Instant>,
    total_timeout: Duration,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
}

/// Which deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missed {
    FirstByte,
    Idle,
    Total,
}

impl Deadlines {
    /// The deadlines of a response whose request starts `now`. The sums are checked: a limit too
    /// large to add to the clock means no deadline of that kind, never a panic.
    pub(crate) fn start(now: Instant, limits: &ResponseLimits) -> Self {
        Self {
            total: now.checked_add(limits.total_timeout),
            total_timeout: limits.total_timeout,
            first_byte_timeout: limits.first_byte_timeout,
            idle_timeout: limits.idle_timeout,
        }
    }

    /// The instant the next read must finish by, and which deadline that is: the first byte's
    /// (counted from `attempt`, when the current attempt was sent) until it came, then the idle
    /// one, each no later than the total deadline.
    pub(crate) fn next_read(
        &self,
        attempt: Instant,
        now: Instant,
        got_first_byte: bool,
    ) -> Option<(Instant, Missed)> {
        let own = if got_first_byte {
            now.checked_add(self.idle_timeout).map(|at| (at, Missed::Idle))
        } else {
            attempt.checked_add(self.first_byte_timeout).map(|at| (at, Missed::FirstByte))
        };
        match (own, self.total) {
            (Some((at, missed)), Some(total)) if at < total => Some((at, missed)),
            (_, Some(total)) => Some((total, Missed::Total)),
            (own, None) => own,
        }
    }

    /// The error for a missed deadline.
    pub(crate) fn error(&self, missed: Missed) -> ModelError {
        let message = match missed {
            Missed::FirstByte => format!(
                "the server sent no response within {} (model_first_byte_timeout_secs)",
                seconds(self.first_byte_timeout)
            ),
            Missed::Idle => format!(
                "the response stalled: nothing arrived for {} (model_idle_timeout_secs)",
                seconds(self.idle_timeout)
            ),
            Missed::Total => format!(
                "the response was not complete within the total deadline of {} \
                 (model_total_timeout_secs)",
                seconds(self.total_timeout)
            ),
        };
        ModelError::new(ModelErrorKind::Network, message)
    }
}

/// A size cap of [`ResponseLimits`] that a response went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    BodyBytes(u64),
    StreamBytes(u64),
    StreamEvents(u64),
    EventBytes(usize),
}

impl Exceeded {
    pub(crate) fn error(self) -> ModelError {
        let message = match self {
            Self::BodyBytes(cap) => format!(
                "the response body is larger than {} (model_max_body_bytes); none of it was used",
                size(cap)
            ),
            Self::StreamBytes(cap) => {
                format!("the response stream sent more than {} (model_max_stream_bytes)", size(cap))
            }
            Self::StreamEvents(cap) => {
                format!("the response stream sent more than {cap} events (model_max_stream_events)")
            }
            Self::EventBytes(cap) => format!(
                "one event of the response stream is larger than {} (model_max_event_bytes)",
                size(cap as u64)
            ),
        };
        ModelError::new(ModelErrorKind::BadResponse, message)
    }
}

/// `16 MiB`, `1500 KiB` or `1000 bytes`: the unit that shows the number exactly.
fn size(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// `3 s`, or `1.5 s` for a fraction of a second.
fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(got_first_byte: bool, after_ms: u64, expect: Option<(u64, Missed)>) {
        let limits = ResponseLimits {
            first_byte_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(3),
            total_timeout: Duration::from_secs(20),
            ..ResponseLimits::default()
        };
        let start = Instant::now();
        let deadlines = Deadlines::start(start, &limits);
        let now = start + Duration::from_millis(after_ms);
        let next = deadlines.next_read(start, now, got_first_byte);
        let got = next.map(|(at, missed)| ((at - start).as_millis() as u64, missed));
        assert_eq!(got, expect);
    }

    #[test]
    fn the_first_byte_then_idle_deadline_applies_never_past_the_total() {
        check(false, 0, Some((10_000, Missed::FirstByte)));
        check(true, 5_000, Some((8_000, Missed::Idle)));
        check(true, 18_000, Some((20_000, Missed::Total)));
    }

    #[test]
    fn a_limit_too_large_for_the_clock_means_no_deadline_not_a_panic() {
        let limits = ResponseLimits {
            first_byte_timeout: Duration::MAX,
            idle_timeout: Duration::MAX,
            total_timeout: Duration::MAX,
            ..ResponseLimits::default()
        };
        let now = Instant::now();
        let deadlines = Deadlines::start(now, &limits);
        assert_eq!(deadlines.total, None);
        assert_eq!(deadlines.next_read(now, now, false), None);
        assert_eq!(deadlines.next_read(now, now, true), None);
    }

    #[test]
    fn errors_name_the_bound_and_its_key() {
        let deadlines = Deadlines::start(Instant::now(), &ResponseLimits::default());
        let messages = [
            deadlines.error(Missed::FirstByte).message,
            deadlines.error(Missed::Idle).message,
            deadlines.error(Missed::Total).message,
            Exceeded::BodyBytes(16 << 20).error().message,
            Exceeded::StreamBytes(1_000_000).error().message,
            Exceeded::StreamEvents(1_000_000).error().message,
            Exceeded::EventBytes(1536 << 10).error().message,
        ];
        insta::assert_snapshot!(messages.join("\n"), @r"
        the server sent no response within 300 s (model_first_byte_timeout_secs)
        the response stalled: nothing arrived for 300 s (model_idle_timeout_secs)
        the response was not complete within the total deadline of 1800 s (model_total_timeout_secs)
        the response body is larger than 16 MiB (model_max_body_bytes); none of it was used
        the response stream sent more than 1000000 bytes (model_max_stream_bytes)
        the response stream sent more than 1000000 events (model_max_stream_events)
        one event of the response stream is larger than 1536 KiB (model_max_event_bytes)
        ");
    }
}
