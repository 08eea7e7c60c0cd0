//! OpenTelemetry export: installs the OTLP (HTTP/protobuf) exporters when an endpoint is
//! configured, and flushes them, within a bound, before the process exits.
//!
//! The library crates emit spans and metrics through the OpenTelemetry API; this module installs
//! the SDK behind it. Export is batched on the SDK's own threads, and every request goes through
//! the workspace's reqwest client on a small current-thread tokio runtime of its own thread, so a
//! slow collector never holds up the agent's loop. A collector that is down costs one warning and,
//! at exit, at most [`Exporter::timeout`] (docs/telemetry.md, docs/limits.md).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use agent_exec::telemetry::Capture;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    Resource, metrics::SdkMeterProvider, trace::BatchConfigBuilder, trace::BatchSpanProcessor,
    trace::SdkTracerProvider,
};

use crate::{Frontend, config::telemetry::TelemetryTable};

/// The default time limit of one export request, and so of the flush at exit.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// Spans held for export at most; more are dropped (the SDK's default).
pub const QUEUE_SPANS: usize = 2048;
/// Spans sent in one request at most.
pub const BATCH_SPANS: usize = 512;
/// How often queued spans are sent.
const SPAN_DELAY: Duration = Duration::from_secs(1);
/// How often metrics are sent during a long session (and once more at exit).
const METRIC_INTERVAL: Duration = Duration::from_secs(30);
/// The most bytes of a collector's answer that are read.
const ANSWER_CAP: usize = 64 * 1024;

/// What to export where, from the `OTEL_*` variables over `[telemetry]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exporter {
    /// The collector's base URL.
    pub endpoint: String,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: BTreeMap<String, String>,
    /// The `service.name` of the spans (`OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
    /// The time limit of one request, and of the flush at exit.
    pub timeout: Duration,
    /// What content the spans may carry (prompts, outputs).
    pub capture: Capture,
}

/// What was installed, for the flush at exit.
struct Installed {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    timeout: Duration,
    endpoint: String,
}

/// Whether the one warning about the collector was printed.
static WARNED: AtomicBool = AtomicBool::new(false);

/// Where the export's problems are told: the front end of the session that installed it.
static REPORT: std::sync::OnceLock<Arc<dyn Frontend>> = std::sync::OnceLock::new();

/// Says once per process that the collector at `endpoint` did not take an export.
fn warn(endpoint: &str, problem: &str) {
    if !WARNED.swap(true, Ordering::Relaxed)
        && let Some(frontend) = REPORT.get()
    {
        frontend.say(&format!(
            "warning: telemetry: the collector at {endpoint} did not take the export ({problem}); \
             spans and metrics are dropped"
        ));
    }
}

static INSTALLED: Mutex<Option<Installed>> = Mutex::new(None);

impl Exporter {
    /// The configuration in force, or `None` when export is off (no endpoint, `enabled = false`,
    /// `OTEL_SDK_DISABLED=true`); a protocol that is not built in is a warning and no export.
    pub fn from_env(
        table: &TelemetryTable,
        env: &dyn Fn(&str) -> Option<String>,
        frontend: &dyn Frontend,
    ) -> Option<Self> {
        let disabled =
            env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if disabled || table.enabled == Some(false) {
            return None;
        }
        let endpoint = env("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| table.endpoint.clone())?;
        let protocol = env("OTEL_EXPORTER_OTLP_PROTOCOL").or_else(|| table.protocol.clone());
        if let Some(protocol) = protocol.filter(|p| p != "http/protobuf") {
            frontend.say(&format!(
                "warning: telemetry: the OTLP protocol {protocol:?} is not built in; use \
                 http/protobuf (nothing is exported)"
            ));
            return None;
        }
        let mut headers = table.headers.clone();
        if let Some(list) = env("OTEL_EXPORTER_OTLP_HEADERS") {
            headers.extend(parse_headers(&list));
        }
        let timeout = env("OTEL_EXPORTER_OTLP_TIMEOUT")
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .or(table.export_timeout_ms)
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        let mut capture = Capture {
            prompts: table.capture_prompts,
            answers: table.capture_answers,
            tool_arguments: table.capture_tool_arguments,
            tool_outputs: table.capture_tool_outputs,
        };
        for field in env("AGENT_OTEL_CAPTURE").unwrap_or_default().split(',') {
            match field.trim() {
                "prompts" => capture.prompts = true,
                "answers" => capture.answers = true,
                "tool_arguments" => capture.tool_arguments = true,
                "tool_outputs" => capture.tool_outputs = true,
                _ => {}
            }
        }
        let service_name = env("OTEL_SERVICE_NAME")
            .is_none()
            .then(|| table.service_name.clone().unwrap_or_else(|| "agent".to_owned()));
        Some(Self {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            headers,
            service_name,
            timeout,
            capture,
        })
    }

    /// Installs the exporters as the global providers; returns what the session may export.
    /// Once per process: a second call keeps the first installation.
    pub fn install(&self) -> crate::Result<Capture> {
        let mut installed = INSTALLED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if installed.is_some() {
            return Ok(self.capture);
        }
        let client = Client::start(&self.endpoint, self.timeout)?;
        let headers: HashMap<String, String> = self.headers.clone().into_iter().collect();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_shared_http_client(client.clone())
            .with_endpoint(format!("{}/v1/traces", self.endpoint))
            .with_headers(headers.clone())
            .with_timeout(self.timeout)
            .build()?;
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_shared_http_client(client)
            .with_endpoint(format!("{}/v1/metrics", self.endpoint))
            .with_headers(headers)
            .with_timeout(self.timeout)
            .build()?;
        let mut resource = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ));
        if let Some(name) = &self.service_name {
            resource = resource.with_service_name(name.clone());
        }
        let resource = resource.build();
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(QUEUE_SPANS)
            .with_max_export_batch_size(BATCH_SPANS)
            .with_scheduled_delay(SPAN_DELAY)
            .build();
        let processor = BatchSpanProcessor::builder(spans).with_batch_config(batch).build();
        let traces = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.clone())
            .build();
        let reader = opentelemetry_sdk::metrics::PeriodicReader::builder(metrics)
            .with_interval(METRIC_INTERVAL)
            .build();
        let meters =
            SdkMeterProvider::builder().with_reader(reader).with_resource(resource).build();
        opentelemetry::global::set_tracer_provider(traces.clone());
        opentelemetry::global::set_meter_provider(meters.clone());
        let endpoint = self.endpoint.clone();
        *installed = Some(Installed { traces, metrics: meters, timeout: self.timeout, endpoint });
        Ok(self.capture)
    }
}

/// Installs the exporters when `[telemetry]` or the environment configures them; returns the
/// content the session may export (none when export is off). A failure to install is a warning:
/// telemetry never stops a session.
pub fn install(table: &TelemetryTable, frontend: &Arc<dyn Frontend>) -> Capture {
    let env = |name: &str| std::env::var(name).ok();
    let Some(exporter) = Exporter::from_env(table, &env, frontend.as_ref()) else {
        return Capture::default();
    };
    let _ = REPORT.set(frontend.clone());
    exporter.install().unwrap_or_else(|err| {
        frontend.say(&format!("warning: telemetry: {err} (nothing is exported)"));
        Capture::default()
    })
}

/// Flushes and shuts the exporters down, waiting at most their timeout in all: the spans and
/// metrics of a short `exec` run are sent before it exits, and a collector that is down or slow
/// delays the exit by no more than that.
pub fn shutdown() {
    let installed = INSTALLED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    let Some(Installed { traces, metrics, timeout, endpoint }) = installed else { return };
    let (done, wait) = std::sync::mpsc::channel();
    let spans_done = done.clone();
    // Each provider flushes on its own thread; whichever has not finished by the deadline is
    // abandoned with the process.
    let spawned = [
        std::thread::Builder::new().name("otel-flush".into()).spawn(move || {
            let _ = traces.shutdown_with_timeout(timeout);
            let _ = spans_done.send(());
        }),
        std::thread::Builder::new().name("otel-flush".into()).spawn(move || {
            let _ = metrics.shutdown_with_timeout(timeout);
            let _ = done.send(());
        }),
    ];
    let deadline = std::time::Instant::now() + timeout;
    for _ in spawned.iter().filter(|thread| thread.is_ok()) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if wait.recv_timeout(left).is_err() {
            // A request still waiting for its answer would warn too late, or never.
            warn(&endpoint, &format!("no answer within {} ms", timeout.as_millis()));
            break;
        }
    }
}

/// `key=value,key2=value2` (values percent-decoded as the specification says).
fn parse_headers(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(key, value)| (key.trim().to_owned(), percent_decode(value.trim())))
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The exporters' HTTP client: the workspace's reqwest, driven by a current-thread runtime on a
/// thread of its own, so an export never waits for the agent's runtime (busy, or blocked on the
/// REPL's prompt) and never holds it up. The first failure is reported once.
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
    endpoint: String,
    timeout: Duration,
}

impl Client {
    fn start(endpoint: &str, timeout: Duration) -> crate::Result<Arc<Self>> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder().timeout(timeout).connect_timeout(timeout);
        if endpoint.starts_with("http://") {
            // A plain-http collector needs no certificate store (loading it costs start time).
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let http = builder.build()?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("otel-http".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
        Ok(Arc::new(Self { http, runtime: handle, endpoint: endpoint.to_owned(), timeout }))
    }

    /// Says once per process that the collector did not take an export.
    fn warn(&self, problem: &str) {
        warn(&self.endpoint, problem);
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let http = self.http.clone();
        let timeout = self.timeout;
        let task = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request.map(reqwest::Body::from))?;
            let sent = tokio::time::timeout(timeout, async {
                let mut response = http.execute(request).await?;
                let answer = http::Response::builder().status(response.status());
                let mut body = Vec::new();
                while let Some(chunk) = response.chunk().await? {
                    if body.len() + chunk.len() > ANSWER_CAP {
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok::<_, HttpError>(answer.body(Bytes::from(body))?)
            });
            sent.await.map_err(|_| -> HttpError { "timed out".into() })?
        });
        let result = match task.await {
            Ok(result) => result,
            Err(err) => Err(err.into()),
        };
        match &result {
            Ok(response) if !response.status().is_success() => {
                self.warn(&format!("HTTP {}", response.status()));
            }
            Ok(_) => {}
            Err(err) => self.warn(&err.to_string()),
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exporter configuration of `table` with the variables `vars`.
    fn check(table: &TelemetryTable, vars: &[(&str, &str)]) -> Option<Exporter> {
        let env = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned());
        Exporter::from_env(table, &env, &crate::Silent)
    }

    #[test]
    fn export_is_off_without_an_endpoint_or_when_disabled() {
        let table = TelemetryTable::default();
        assert_eq!(check(&table, &[]), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
        assert!(check(&table, &on).is_some());
        let off = [on[0], ("OTEL_SDK_DISABLED", "true")];
        assert_eq!(check(&table, &off), None);
        let disabled = TelemetryTable { enabled: Some(false), ..TelemetryTable::default() };
        assert_eq!(check(&disabled, &on), None);
        assert_eq!(check(&table, &[on[0], ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]), None);
    }

    #[test]
    fn variables_win_over_the_table() {
        let table = TelemetryTable {
            endpoint: Some("http://collector:4318/".to_owned()),
            export_timeout_ms: Some(500),
            service_name: Some("from-table".to_owned()),
            headers: [("x-a".to_owned(), "table".to_owned())].into(),
            capture_prompts: true,
            ..TelemetryTable::default()
        };
        let from_table = check(&table, &[]).unwrap();
        assert_eq!(from_table.endpoint, "http://collector:4318");
        assert_eq!(from_table.timeout, Duration::from_millis(500));
        assert_eq!(from_table.service_name.as_deref(), Some("from-table"));
        assert!(from_table.capture.prompts && !from_table.capture.tool_outputs);
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-a=env,x-key=a%20b%3D"),
            ("OTEL_SERVICE_NAME", "from-env"),
            ("AGENT_OTEL_CAPTURE", "tool_outputs, nonsense"),
        ];
        let from_env = check(&table, &vars).unwrap();
        assert_eq!(from_env.endpoint, "http://127.0.0.1:9");
        assert_eq!(from_env.timeout, Duration::from_millis(1500));
        // The SDK reads OTEL_SERVICE_NAME itself; we set no name over it.
        assert_eq!(from_env.service_name, None);
        assert_eq!(from_env.headers["x-a"], "env");
        assert_eq!(from_env.headers["x-key"], "a b=");
        assert!(from_env.capture.prompts && from_env.capture.tool_outputs);
    }

    #[test]
    fn the_docs_example_table_parses() {
        let doc = include_str!("../../../docs/telemetry.md");
        let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + doc[start..].find("```").unwrap();
        let file: crate::config::ConfigFile = toml::from_str(&doc[start..end]).unwrap();
        file.check().unwrap();
        assert_eq!(file.telemetry.export_timeout_ms, Some(2000));
        assert!(file.telemetry.capture_tool_arguments);
    }
}
