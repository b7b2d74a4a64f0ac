//! `--otel`: the replay with the dispatcher's OpenTelemetry spans printed by the SDK's stdout
//! exporter (`opentelemetry-stdout`), through `tracing-opentelemetry`: one `execute_tool {tool}`
//! span per call with its GenAI attributes (`gen_ai.operation.name`, `gen_ai.tool.name`,
//! `gen_ai.tool.call.id`, `gen_ai.tool.type`, `error.type`) and toolgate's own
//! (`toolgate.outcome`, `toolgate.blocked_by`, `toolgate.rewritten_by`, `toolgate.session.id`),
//! and a `pre_tool_use {hook}` child per hook run with its decision.
//!
//! A deployment installs the same layer with an OTLP exporter instead (`opentelemetry-otlp`); the
//! example does not, to keep its build small (`docs/opentelemetry.md` has the lines a host writes).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;

/// Runs `f` with a subscriber that exports every span to stdout as it ends, then shuts the
/// exporter down.
pub(crate) fn with_spans<T>(f: impl FnOnce() -> T) -> T {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("support_agent")));
    let out = tracing::subscriber::with_default(subscriber, f);
    let _ = provider.shutdown();
    out
}
