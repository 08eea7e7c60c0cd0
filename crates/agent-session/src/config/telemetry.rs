//! The `[telemetry]` table: where spans and metrics go (OTLP over HTTP/protobuf) and which content
//! they may carry. The standard `OTEL_*` variables win over it (docs/telemetry.md).

use std::collections::BTreeMap;

use serde::Deserialize;

/// `[telemetry]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryTable {
    /// `false` turns export off even when an endpoint is set (as `OTEL_SDK_DISABLED=true` does).
    pub enabled: Option<bool>,
    /// The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); `/v1/traces` and `/v1/metrics`
    /// are appended.
    pub endpoint: Option<String>,
    /// `http/protobuf`, the only protocol built in (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// Headers sent with every export, such as an ingest key (`OTEL_EXPORTER_OTLP_HEADERS`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `service.name` (`OTEL_SERVICE_NAME`); default `agent`.
    pub service_name: Option<String>,
    /// The time limit of one export request, which also bounds the flush at exit
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`); default 2000.
    pub export_timeout_ms: Option<u64>,
    /// Export the user's prompts.
    #[serde(default)]
    pub capture_prompts: bool,
    /// Export the model's final answers.
    #[serde(default)]
    pub capture_answers: bool,
    /// Export tool calls' arguments.
    #[serde(default)]
    pub capture_tool_arguments: bool,
    /// Export tool calls' outputs.
    #[serde(default)]
    pub capture_tool_outputs: bool,
}

impl TelemetryTable {
    /// Refuses a value out of range.
    pub fn check(&self) -> crate::Result<()> {
        super::check_range(
            "[telemetry] export_timeout_ms",
            "telemetry.export_timeout_ms",
            self.export_timeout_ms,
        )
    }
}
