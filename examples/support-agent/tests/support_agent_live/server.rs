//! A Messages API on loopback for the `--live` tests: a std `TcpListener` on `127.0.0.1:0`, a
//! small HTTP/1.1 reader (one request per connection, `connection: close`), a script of answers,
//! and a check of every request against the API's rules ([`check_request`]); every rule broken
//! is a violation the test asserts is absent.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// The key the tests give the agent; the server requires it in `x-api-key`.
pub(crate) const KEY: &str = "sk-ant-test-7f3a9c51e2-not-a-real-key";

/// One scripted answer.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Planned {
    /// A 200 with `message` (an assistant Message as the API returns it).
    pub(crate) fn message(message: &Value) -> Planned {
        Planned {
            status: 200,
            headers: Vec::new(),
            body: message.to_string(),
        }
    }

    /// An error status with the API's error body; `retry_after` as the header's value.
    pub(crate) fn error(
        status: u16,
        kind: &str,
        message: &str,
        retry_after: Option<&str>,
    ) -> Planned {
        Planned {
            status,
            headers: retry_after
                .map(|v| vec![("retry-after".to_owned(), v.to_owned())])
                .unwrap_or_default(),
            body: json!({
                "type": "error",
                "error": {"type": kind, "message": message},
                "request_id": format!("req_011CTest{status}"),
            })
            .to_string(),
        }
    }
}

/// What the client must send: the key, the model and the specialist's tool definitions.
#[derive(Debug, Clone)]
pub(crate) struct Expect {
    /// `x-api-key`.
    pub(crate) key: String,
    /// `model`.
    pub(crate) model: String,
    /// `tools`, exactly.
    pub(crate) tools: Value,
}

/// What the server saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// Each request's body, in order.
    pub(crate) bodies: Vec<Value>,
    /// Every rule a request broke: `request N: …`.
    pub(crate) violations: Vec<String>,
    /// The 200 answers served so far (for the assistant turns the client must send back).
    served: Vec<Value>,
}

/// The running server.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts serving `plan`, in order, checking each request against `expect`. A request
    /// beyond the plan is a violation (answered 500).
    pub(crate) fn start(expect: Expect, plan: Vec<Planned>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let thread = {
            let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
            std::thread::spawn(move || {
                let mut next = 0;
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
                            serve(stream, &expect, plan.get(next), &mut seen);
                            next += 1;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        Err(e) => panic!("accept: {e}"),
                    }
                }
            })
        };
        Server {
            addr,
            stop,
            seen,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server and returns what it saw.
    pub(crate) fn finish(mut self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("the server thread");
        }
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A request as read off the socket.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    /// `POST`.
    pub(crate) method: String,
    /// `/v1/messages`.
    pub(crate) path: String,
    /// Header names in lower case, in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn serve(stream: TcpStream, expect: &Expect, planned: Option<&Planned>, seen: &mut Seen) {
    stream.set_nonblocking(false).expect("blocking");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let n = seen.bodies.len() + 1;
    let mut reader = BufReader::new(stream);
    let request = match read_request(&mut reader) {
        Ok(r) => r,
        Err(e) => {
            seen.violations
                .push(format!("request {n}: unreadable: {e}"));
            return;
        }
    };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    for problem in check_request(&request, expect, &seen.served) {
        seen.violations.push(format!("request {n}: {problem}"));
    }
    seen.bodies.push(body);
    let answer = match planned {
        Some(p) => p.clone(),
        None => {
            seen.violations
                .push(format!("request {n}: beyond the script"));
            Planned::error(500, "api_error", "beyond the script", None)
        }
    };
    if answer.status == 200 {
        seen.served
            .push(serde_json::from_str(&answer.body).expect("a scripted message is JSON"));
    }
    let mut stream = reader.into_inner();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: \
         close\r\n",
        answer.status,
        reason(answer.status),
        answer.body.len()
    );
    for (k, v) in &answer.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(answer.body.as_bytes());
    let _ = stream.flush();
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

/// Reads one HTTP/1.1 request with a `content-length` body (chunked bodies are refused).
fn read_request(reader: &mut impl BufRead) -> Result<Request, String> {
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path), Some("HTTP/1.1")) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line {line:?}"));
    };
    let mut request = Request {
        method: method.to_owned(),
        path: path.to_owned(),
        ..Request::default()
    };
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        request
            .headers
            .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    if request.header("transfer-encoding").is_some() {
        return Err("a chunked body (the client should send content-length)".to_owned());
    }
    let length: usize = request
        .header("content-length")
        .ok_or("no content-length")?
        .parse()
        .map_err(|_| "a bad content-length".to_owned())?;
    request.body = vec![0; length];
    reader
        .read_exact(&mut request.body)
        .map_err(|e| e.to_string())?;
    Ok(request)
}

/// Every rule of the Messages API `request` breaks, given the 200 answers `served` before it:
/// the path and headers (`x-api-key`, `anthropic-version: 2023-06-01`, JSON), the body's
/// members (`model`, `max_tokens` above 0, a `system` text, `tools` equal to the specialist's),
/// `messages` starting with a user turn and alternating, each turn only `role` and `content`
/// (non-empty), each assistant turn's `tool_use` ids answered first thing in the next user
/// turn, in order, and the assistant turns equal to the answers served (a `max_tokens` answer
/// dropped, a `pause_turn` answer sent back as the last turn and continued by the next).
pub(crate) fn check_request(request: &Request, expect: &Expect, served: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    if request.method != "POST" || request.path != "/v1/messages" {
        problems.push(format!(
            "{} {} (expected POST /v1/messages)",
            request.method, request.path
        ));
    }
    if request.header("x-api-key") != Some(expect.key.as_str()) {
        problems.push("x-api-key is not the key".to_owned());
    }
    if request.header("anthropic-version") != Some("2023-06-01") {
        problems.push(format!(
            "anthropic-version is {:?} (expected 2023-06-01)",
            request.header("anthropic-version")
        ));
    }
    if request.header("content-type") != Some("application/json") {
        problems.push(format!(
            "content-type is {:?}",
            request.header("content-type")
        ));
    }
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => {
            problems.push("the body is not a JSON object".to_owned());
            return problems;
        }
    };
    let known = ["model", "max_tokens", "system", "tools", "messages"];
    for key in body.as_object().into_iter().flat_map(|m| m.keys()) {
        if !known.contains(&key.as_str()) {
            problems.push(format!("unexpected member `{key}`"));
        }
    }
    if body["model"] != json!(expect.model) {
        problems.push(format!(
            "model is {} (expected {})",
            body["model"], expect.model
        ));
    }
    if body["max_tokens"].as_u64().is_none_or(|n| n == 0) {
        problems.push(format!("max_tokens is {}", body["max_tokens"]));
    }
    if body["system"].as_str().is_none_or(str::is_empty) {
        problems.push("system is not a non-empty text".to_owned());
    }
    if body["tools"] != expect.tools {
        problems.push("tools are not the specialist's definitions".to_owned());
    }
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        problems.push("messages is not a non-empty array".to_owned());
        return problems;
    };
    for (i, m) in messages.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        if m["role"] != want {
            problems.push(format!(
                "messages.{i}.role is {} (expected {want}: turns alternate, user first)",
                m["role"]
            ));
        }
        let mut keys: Vec<&str> = m
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        if keys != ["content", "role"] {
            problems.push(format!(
                "messages.{i} has members {keys:?} (expected role and content only)"
            ));
        }
        if m["content"].as_array().is_none_or(Vec::is_empty) {
            problems.push(format!("messages.{i}.content is not a non-empty array"));
        }
        let uses: Vec<&Value> = blocks(m, "tool_use").map(|b| &b["id"]).collect();
        if m["role"] == "assistant" && !uses.is_empty() {
            match messages.get(i + 1) {
                None => problems.push(format!(
                    "messages.{i}: its tool_use blocks are not answered"
                )),
                Some(next) => {
                    let content = next["content"].as_array().cloned().unwrap_or_default();
                    let first: Vec<&Value> = content
                        .iter()
                        .take(uses.len())
                        .map(|b| {
                            if b["type"] == "tool_result" {
                                &b["tool_use_id"]
                            } else {
                                &Value::Null
                            }
                        })
                        .collect();
                    if first != uses {
                        problems.push(format!(
                            "messages.{}: the first blocks are not one tool_result per tool_use of \
                             messages.{i}, in order",
                            i + 1
                        ));
                    }
                }
            }
        }
    }
    let sent: Vec<&Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| &m["content"])
        .collect();
    let kept = kept_turns(served);
    if sent.iter().copied().ne(kept.iter()) {
        problems.push(format!(
            "the assistant turns are not the answers served ({} sent, {} expected)",
            sent.len(),
            kept.len()
        ));
    }
    let paused = served
        .last()
        .is_some_and(|m| m["stop_reason"] == "pause_turn");
    let last = if paused { "assistant" } else { "user" };
    if messages.last().is_some_and(|m| m["role"] != last) {
        problems.push(format!("the last message is not a {last} turn"));
    }
    problems
}

/// The blocks of `message` of type `kind`.
fn blocks<'a>(message: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |b| b["type"] == kind)
}

/// The `content` of each assistant turn the client must send back after `served`: a
/// `max_tokens` answer and an empty one dropped; a `pause_turn` answer's blocks continued by
/// the next answer's.
fn kept_turns(served: &[Value]) -> Vec<Value> {
    let mut kept = Vec::new();
    let mut paused: Option<Vec<Value>> = None;
    for m in served {
        let content = m["content"].as_array().cloned().unwrap_or_default();
        match m["stop_reason"].as_str() {
            Some("max_tokens") => {}
            Some("pause_turn") => paused.get_or_insert_with(Vec::new).extend(content),
            _ => {
                let mut turn = paused.take().unwrap_or_default();
                turn.extend(content);
                // An empty answer is not sent back.
                if !turn.is_empty() {
                    kept.push(Value::Array(turn));
                }
            }
        }
    }
    if let Some(turn) = paused {
        kept.push(Value::Array(turn));
    }
    kept
}
