//! `--otel` and `--otel-endpoint URL`: the run with the dispatcher's OpenTelemetry spans, through
//! `tracing-opentelemetry`: one `execute_tool {tool}` span per call with its GenAI attributes
//! (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`,
//! `error.type`) and toolgate's own (`toolgate.outcome`, `toolgate.blocked_by`,
//! `toolgate.rewritten_by`, `toolgate.session.id`), and a `pre_tool_use {hook}` child per hook
//! run with its decision.
//!
//! `--otel` prints them with the SDK's stdout exporter as each span ends. `--otel-endpoint URL`
//! sends them to a collector over OTLP/HTTP with protobuf bodies (`opentelemetry-otlp`, the
//! OpenTelemetry project's exporter; the OTLP specification's `POST /v1/traces`, `Content-Type:
//! application/x-protobuf`), batched and flushed when the run ends. URL is read as the OTLP
//! exporter specification reads its two variables ([`endpoint`]): a URL whose path ends in
//! `/v1/traces` is the traces address itself, used as given (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`);
//! any other is the collector's base address, to which `/v1/traces` is appended
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`): `http://localhost:4318` for a collector on its default port.
//! The spans name their service ([`resource`]): `service.name` from `OTEL_SERVICE_NAME` when it
//! is set, else the program's name, never the SDK's `unknown_service`. The HTTP client is the
//! example's own `ureq` behind `opentelemetry-http`'s `HttpClient` trait, so no second HTTP stack
//! is built. The library itself emits `tracing` spans only and depends on no exporter.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{
    EnvResourceDetector, ResourceDetector, TelemetryResourceDetector,
};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;

/// Where the spans go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Otel {
    /// `--otel`: printed on standard output.
    pub stdout: bool,
    /// `--otel-endpoint URL`: sent to a collector, at this traces address ([`endpoint`]).
    pub endpoint: Option<String>,
}

impl Otel {
    /// Whether any exporter is asked for.
    pub fn is_on(&self) -> bool {
        self.stdout || self.endpoint.is_some()
    }
}

/// The path of the traces address on a collector: OTLP/HTTP's `POST /v1/traces`.
pub const TRACES_PATH: &str = "/v1/traces";

/// The program's name: the spans' `service.name` when the environment names no service.
pub const SERVICE_NAME: &str = "support_agent";

/// The traces address `--otel-endpoint URL` names, URL checked (an `http://` or `https://` URL
/// with a host). A URL whose path ends in `/v1/traces` is the traces address itself and is used
/// as given, as the OTLP exporter specification uses `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`. Any
/// other URL is a collector's base address, to which `/v1/traces` is appended, as the
/// specification appends it to `OTEL_EXPORTER_OTLP_ENDPOINT`: the path's last `/` is not
/// doubled, and a query stays after the path.
///
/// | URL | traces address |
/// |---|---|
/// | `http://localhost:4318` | `http://localhost:4318/v1/traces` |
/// | `http://localhost:4318/` | `http://localhost:4318/v1/traces` |
/// | `https://gateway.example/otlp` | `https://gateway.example/otlp/v1/traces` |
/// | `https://gateway.example/otlp?tenant=a` | `https://gateway.example/otlp/v1/traces?tenant=a` |
/// | `http://localhost:4318/v1/traces` | as given |
///
/// # Errors
/// The sentence to print: not `http://` or `https://`, or no host.
pub fn endpoint(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| {
            format!(
                "--otel-endpoint {url}: expected an http:// or https:// URL \
                 (http://localhost:4318/v1/traces)"
            )
        })?;
    let host_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if host_len == 0 {
        return Err(format!("--otel-endpoint {url}: the URL names no host"));
    }
    let path_start = url.len() - rest.len() + host_len;
    let path_end = url[path_start..]
        .find(['?', '#'])
        .map_or(url.len(), |i| path_start + i);
    let path = &url[path_start..path_end];
    if path.ends_with(TRACES_PATH) {
        return Ok(url.to_owned());
    }
    let base = path.strip_suffix('/').unwrap_or(path);
    Ok(format!(
        "{}{base}{TRACES_PATH}{}",
        &url[..path_start],
        &url[path_end..]
    ))
}

/// The resource every span is sent with. `service.name`: `OTEL_SERVICE_NAME` when it is set
/// and not empty, else the `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else [`SERVICE_NAME`]
/// (the OpenTelemetry resource SDK specification's order, with the program's name where the
/// SDK would say `unknown_service`). The other attributes: those `OTEL_RESOURCE_ATTRIBUTES`
/// lists and the SDK's own (`telemetry.sdk.name`, `.language`, `.version`).
pub fn resource() -> Resource {
    let detectors: [Box<dyn ResourceDetector>; 2] = [
        Box::new(TelemetryResourceDetector),
        Box::new(EnvResourceDetector::new()),
    ];
    let builder = Resource::builder_empty()
        .with_service_name(SERVICE_NAME)
        .with_detectors(&detectors);
    match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.is_empty() => builder.with_service_name(name),
        _ => builder,
    }
    .build()
}

/// How long one export may take, the collector's answer included.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest collector answer read (an `ExportTraceServiceResponse` is a few bytes).
const ANSWER_LIMIT: u64 = 1024 * 1024;

/// What went wrong with the exports: how many failed, and the first failure's text.
#[derive(Debug, Default)]
struct Failures {
    count: u64,
    first: Option<String>,
}

/// `opentelemetry-http`'s client trait over a `ureq` agent. The exporter's batch processor
/// runs on a thread of its own, so a blocking request inside the future blocks only it.
struct UreqClient {
    agent: ureq::Agent,
    failures: Arc<Mutex<Failures>>,
}

impl fmt::Debug for UreqClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UreqClient")
    }
}

impl UreqClient {
    fn new(failures: Arc<Mutex<Failures>>) -> UreqClient {
        let config = ureq::Agent::config_builder()
            // The exporter reads the status itself.
            .http_status_as_error(false)
            .timeout_global(Some(EXPORT_TIMEOUT))
            .build();
        UreqClient {
            agent: config.into(),
            failures,
        }
    }

    fn failed(&self, what: String) {
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        f.count += 1;
        f.first.get_or_insert(what);
    }

    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let uri = request.uri().to_string();
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, body.to_vec());
        let mut answer = match self.agent.run(request) {
            Ok(a) => a,
            Err(e) => {
                self.failed(format!("{uri}: {e}"));
                return Err(Box::new(e));
            }
        };
        let status = answer.status();
        if !status.is_success() {
            self.failed(format!("{uri} answered {status}"));
        }
        let body = answer
            .body_mut()
            .with_config()
            .limit(ANSWER_LIMIT)
            .read_to_vec()?;
        Ok(Response::builder().status(status).body(Bytes::from(body))?)
    }
}

// What `#[async_trait]` writes for the trait's one method, by hand: the macro crate is not a
// dependency of the example.
impl HttpClient for UreqClient {
    fn send_bytes<'life0, 'async_trait>(
        &'life0 self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { self.send(request) })
    }
}

/// Runs `f` with a subscriber that hands every span to the exporters `otel` asks for, then
/// shuts them down (the OTLP batch is sent then). `f`'s value, and a warning when spans could
/// not be sent.
///
/// # Errors
/// The OTLP exporter could not be built (the sentence to print).
pub fn with_spans<T>(otel: &Otel, f: impl FnOnce() -> T) -> Result<(T, Option<String>), String> {
    let failures = Arc::new(Mutex::new(Failures::default()));
    let mut builder = SdkTracerProvider::builder().with_resource(resource());
    if otel.stdout {
        builder = builder.with_simple_exporter(opentelemetry_stdout::SpanExporter::default());
    }
    if let Some(url) = &otel.endpoint {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(UreqClient::new(Arc::clone(&failures)))
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("--otel-endpoint {url}: {e}"))?;
        builder = builder.with_batch_exporter(exporter);
    }
    let provider = builder.build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer(SERVICE_NAME)));
    let out = tracing::subscriber::with_default(subscriber, f);
    let shutdown = provider.shutdown();
    let failures = failures.lock().unwrap_or_else(|p| p.into_inner());
    let warning = match (&otel.endpoint, failures.count, &failures.first, shutdown) {
        (Some(url), 0, _, Err(e)) => Some(format!("the spans for {url} may be lost: {e}")),
        (Some(url), n, first, _) if n > 0 => Some(format!(
            "the spans could not all be sent to {url}: {n} export(s) failed, the first with {}",
            first.as_deref().unwrap_or("no message")
        )),
        _ => None,
    };
    Ok((out, warning))
}
