//! `--otel-endpoint URL` against an OTLP/HTTP receiver on loopback, started by the test: every
//! request it gets is decoded as the OTLP specification's `ExportTraceServiceRequest`
//! (opentelemetry-proto's types, prost), and the spans are checked against the audit log the
//! same run wrote: names, parents, attributes, and no content attribute (the agent does not turn
//! `span_content()` on).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::Value;

use super::support::{TempDir, json_lines};
use super::{exit, os, run};

/// One request the receiver got: method, path, content type, body.
struct Got {
    method: String,
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// Reads HTTP/1.1 requests off one connection (kept alive by the client) and answers each
/// `200 OK` with an empty protobuf body (an empty `ExportTraceServiceResponse`).
fn serve(stream: TcpStream, got: &Mutex<Vec<Got>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
        );
        let mut headers = BTreeMap::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        got.lock().unwrap().push(Got {
            method,
            path,
            content_type: headers.get("content-type").cloned().unwrap_or_default(),
            body,
        });
        writer.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )?;
    }
}

/// The receiver's base address (`http://127.0.0.1:PORT`, no path) and what it got so far.
fn receiver() -> (String, Arc<Mutex<Vec<Got>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let got = Arc::clone(&shared);
            std::thread::spawn(move || serve(stream, &got));
        }
    });
    (url, got)
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).map(|a| {
        match a.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(Any::StringValue(s)) => s.clone(),
            Some(Any::IntValue(i)) => i.to_string(),
            Some(Any::BoolValue(b)) => b.to_string(),
            other => format!("{other:?}"),
        }
    })
}

#[test]
fn otel_endpoint_sends_every_calls_spans_to_a_collector_over_otlp_http() {
    let (base, got) = receiver();
    let url = format!("{base}/v1/traces");
    let dir = TempDir::new("otlp");
    let (code, _, err) = run(&[
        &os("--out-dir"),
        &os(dir.path()),
        &os("--otel-endpoint"),
        &os(&url),
    ]);
    assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""));

    let got = got.lock().unwrap();
    assert!(!got.is_empty());
    let mut spans: Vec<Span> = Vec::new();
    for g in got.iter() {
        assert_eq!(
            (g.method.as_str(), g.path.as_str(), g.content_type.as_str()),
            ("POST", "/v1/traces", "application/x-protobuf")
        );
        let request = ExportTraceServiceRequest::decode(g.body.as_slice()).unwrap();
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                assert_eq!(
                    scope.scope.as_ref().map(|s| s.name.as_str()),
                    Some("support_agent")
                );
                spans.extend(scope.spans);
            }
        }
    }
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    let hooks: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("pre_tool_use "))
        .collect();
    // Every span is a call or a hook run.
    assert_eq!(calls.len() + hooks.len(), spans.len());

    // One call span per audit line, with the line's tool, id and outcome.
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    let key = |tool: &str, id: &str, outcome: &str| format!("{tool} {id} {outcome}");
    let mut from_log: Vec<String> = lines
        .iter()
        .map(|l| {
            key(
                l["tool"].as_str().unwrap(),
                l["tool_use_id"].as_str().unwrap(),
                l["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    let mut from_spans: Vec<String> = calls
        .iter()
        .map(|s| {
            let tool = attr(s, "gen_ai.tool.name").unwrap();
            assert_eq!(s.name, format!("execute_tool {tool}"));
            assert_eq!(
                attr(s, "gen_ai.operation.name").as_deref(),
                Some("execute_tool")
            );
            assert_eq!(attr(s, "gen_ai.tool.type").as_deref(), Some("function"));
            let outcome = attr(s, "toolgate.outcome").unwrap();
            let error = attr(s, "error.type");
            assert_eq!(
                error.as_deref(),
                (outcome != "ok").then_some(outcome.as_str())
            );
            // No arguments or results without `span_content()`.
            assert_eq!(attr(s, "gen_ai.tool.call.arguments"), None);
            assert_eq!(attr(s, "gen_ai.tool.call.result"), None);
            key(&tool, &attr(s, "gen_ai.tool.call.id").unwrap(), &outcome)
        })
        .collect();
    from_log.sort();
    from_spans.sort();
    assert_eq!(from_spans, from_log);

    // Each hook run is a child of its call's span, in the same trace, with the decision the
    // audit line recorded, in order.
    for call in &calls {
        let id = attr(call, "gen_ai.tool.call.id").unwrap();
        let outcome = attr(call, "toolgate.outcome").unwrap();
        let line: &Value = lines
            .iter()
            .find(|l| l["tool_use_id"] == id.as_str() && l["outcome"] == outcome.as_str())
            .unwrap();
        let mut children: Vec<&&Span> = hooks
            .iter()
            .filter(|h| h.parent_span_id == call.span_id)
            .collect();
        assert!(children.iter().all(|h| h.trace_id == call.trace_id));
        children.sort_by_key(|h| h.start_time_unix_nano);
        let shown: Vec<(String, String)> = children
            .iter()
            .map(|h| {
                (
                    h.name.trim_start_matches("pre_tool_use ").to_owned(),
                    attr(h, "toolgate.hook.decision").unwrap(),
                )
            })
            .collect();
        let recorded: Vec<(String, String)> = line["hooks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|r| {
                (
                    r["hook"].as_str().unwrap().to_owned(),
                    r["decision"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(shown, recorded, "{id}");
    }
    // Every hook span found its call.
    let parented = hooks
        .iter()
        .filter(|h| calls.iter().any(|c| c.span_id == h.parent_span_id))
        .count();
    assert_eq!(parented, hooks.len());
}

#[test]
fn an_unreachable_collector_is_a_warning_naming_it_and_the_run_goes_on() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1/traces");
    let dir = TempDir::new("otlp-down");
    let plain = TempDir::new("otlp-plain");
    let (code, out, err) = run(&[
        &os("--out-dir"),
        &os(dir.path()),
        &os("--otel-endpoint"),
        &os(&url),
    ]);
    let (_, expected, _) = run(&[&os("--out-dir"), &os(plain.path())]);
    assert_eq!(code, exit::EXIT_OK);
    assert_eq!(
        crate::hashes_hidden(&out),
        crate::hashes_hidden(&expected.replace(
            &plain.path().display().to_string(),
            &dir.path().display().to_string()
        ))
    );
    assert!(
        err.starts_with(&format!(
            "warning: the spans could not all be sent to {url}: "
        )),
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn otel_endpoint_reads_a_base_address_or_a_full_traces_url_as_the_otlp_variables_do() {
    use support_agent::otel::endpoint;
    // A path ending in /v1/traces: used as given (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
    for full in [
        "http://localhost:4318/v1/traces",
        "https://gateway.example/tenant-a/v1/traces",
        "http://[::1]:4318/v1/traces?tenant=a",
    ] {
        assert_eq!(endpoint(full).as_deref(), Ok(full));
    }
    // Any other: a base address, /v1/traces appended (OTEL_EXPORTER_OTLP_ENDPOINT).
    for (base, traces) in [
        ("http://localhost:4318", "http://localhost:4318/v1/traces"),
        ("http://localhost:4318/", "http://localhost:4318/v1/traces"),
        (
            "https://gateway.example/otlp",
            "https://gateway.example/otlp/v1/traces",
        ),
        (
            "https://gateway.example/otlp/",
            "https://gateway.example/otlp/v1/traces",
        ),
        (
            "https://gateway.example/otlp?tenant=a",
            "https://gateway.example/otlp/v1/traces?tenant=a",
        ),
        (
            "http://collector?tenant=a",
            "http://collector/v1/traces?tenant=a",
        ),
        ("http://collector#top", "http://collector/v1/traces#top"),
        // Not the traces path, only a name ending like it.
        (
            "http://collector/v1/traces2",
            "http://collector/v1/traces2/v1/traces",
        ),
        (
            "http://collector/xv1/traces",
            "http://collector/xv1/traces/v1/traces",
        ),
    ] {
        assert_eq!(endpoint(base).as_deref(), Ok(traces), "{base}");
    }
    for (bad, problem) in [
        (
            "ftp://collector",
            "--otel-endpoint ftp://collector: expected an http:// or https:// URL \
             (http://localhost:4318/v1/traces)",
        ),
        ("http://", "--otel-endpoint http://: the URL names no host"),
        (
            "http://?tenant=a",
            "--otel-endpoint http://?tenant=a: the URL names no host",
        ),
    ] {
        assert_eq!(endpoint(bad), Err(problem.to_owned()));
    }
}

/// Each request's path, and the `service.name` of each resource it carries.
fn paths_and_services(got: &[Got]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for g in got {
        let request = ExportTraceServiceRequest::decode(g.body.as_slice()).unwrap();
        for spans in request.resource_spans {
            let attributes = spans.resource.map(|r| r.attributes).unwrap_or_default();
            let name = resource_attr(&attributes, "service.name");
            found.push((g.path.clone(), name.unwrap_or_default()));
        }
    }
    found
}

fn resource_attr(
    attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<String> {
    attributes.iter().find(|a| a.key == key).map(|a| {
        match a.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(Any::StringValue(s)) => s.clone(),
            other => format!("{other:?}"),
        }
    })
}

#[test]
fn the_spans_go_to_the_path_the_endpoint_names() {
    let transcript =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("transcripts/03_parallel_batch.json");
    for (suffix, path) in [
        ("", "/v1/traces"),
        ("/", "/v1/traces"),
        ("/otlp", "/otlp/v1/traces"),
        ("/otlp/?tenant=a", "/otlp/v1/traces?tenant=a"),
        ("/custom/v1/traces", "/custom/v1/traces"),
    ] {
        let (base, got) = receiver();
        let dir = TempDir::new("otlp-path");
        let url = format!("{base}{suffix}");
        let (code, _, err) = run(&[
            &os("--transcript"),
            &os(&transcript),
            &os("--out-dir"),
            &os(dir.path()),
            &os("--otel-endpoint"),
            &os(&url),
        ]);
        assert_eq!((code, err.as_str()), (exit::EXIT_OK, ""), "{url}");
        let got = got.lock().unwrap();
        // Every request (a batch of spans; one or more) to that path.
        let mut paths: Vec<&str> = got.iter().map(|g| g.path.as_str()).collect();
        paths.dedup();
        assert_eq!(paths, [path], "{url}");
    }
}

#[test]
fn the_spans_name_their_service_from_otel_service_name_or_else_the_program() {
    // The variables are the process's: the agent runs as its own process, as a user runs it.
    let binary = env!("CARGO_BIN_EXE_support_agent");
    let transcript =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("transcripts/03_parallel_batch.json");
    for (service_name, resource_attributes, expected, environment) in [
        (None, None, "support_agent", None),
        (Some("refund-desk"), None, "refund-desk", None),
        // Empty is unset, as the SDK reads it.
        (Some(""), None, "support_agent", None),
        (
            None,
            Some("service.name=from-attributes,deployment.environment.name=ci"),
            "from-attributes",
            Some("ci"),
        ),
        (
            Some("refund-desk"),
            Some("service.name=from-attributes,deployment.environment.name=ci"),
            "refund-desk",
            Some("ci"),
        ),
    ] {
        let (base, got) = receiver();
        let dir = TempDir::new("otlp-service");
        let mut command = std::process::Command::new(binary);
        command
            .arg("--transcript")
            .arg(&transcript)
            .arg("--out-dir")
            .arg(dir.path())
            .arg("--otel-endpoint")
            .arg(&base)
            .env_remove("OTEL_SERVICE_NAME")
            .env_remove("OTEL_RESOURCE_ATTRIBUTES");
        if let Some(name) = service_name {
            command.env("OTEL_SERVICE_NAME", name);
        }
        if let Some(attributes) = resource_attributes {
            command.env("OTEL_RESOURCE_ATTRIBUTES", attributes);
        }
        let output = command.output().expect("the support agent runs");
        let case = format!(
            "OTEL_SERVICE_NAME={service_name:?} OTEL_RESOURCE_ATTRIBUTES={resource_attributes:?}"
        );
        assert_eq!(
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stderr)
            ),
            (Some(0), "".into()),
            "{case}"
        );
        let got = got.lock().unwrap();
        // Every request (one or more batches) to /v1/traces, every resource naming the service.
        let mut found = paths_and_services(&got);
        found.dedup();
        assert_eq!(
            found,
            [("/v1/traces".to_owned(), expected.to_owned())],
            "{case}"
        );
        let request = ExportTraceServiceRequest::decode(got[0].body.as_slice()).unwrap();
        let attributes = &request.resource_spans[0]
            .resource
            .as_ref()
            .unwrap()
            .attributes;
        assert_eq!(
            resource_attr(attributes, "deployment.environment.name").as_deref(),
            environment,
            "{case}"
        );
        assert_eq!(
            resource_attr(attributes, "telemetry.sdk.language").as_deref(),
            Some("rust")
        );
    }
}
