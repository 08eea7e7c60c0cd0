//! The telemetry group: `telemetry.overhead_per_call_us`, what an installed OpenTelemetry SDK adds
//! to one tool call on the loop (agent-exec's `telemetry_cost` example; docs/telemetry.md).

/// The example that measures it, run as an in-process group.
pub(crate) const EXAMPLE: &str = "telemetry_cost";

/// The figure's target: one span and two metric updates per call, a few microseconds against
/// tool calls that take milliseconds.
pub(crate) const TARGET_US: f64 = 20.0;
