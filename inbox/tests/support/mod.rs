//! What the page's tests share: an agent that pauses refunds for a person, its store (an SQLite
//! file in a fresh folder, or a fresh database of the throwaway PostgreSQL server), the page
//! served on 127.0.0.1 by its own thread, four people with tokens, and a small HTTP/1.1 client
//! that sends exactly what a test says (any Host, Origin, cookie or body).
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_core::approval::inbox::{Action, InboxStore, Policy, PublishedTools};
use toolgate_core::dispatch::{PreHookDef, ToolDef};
use toolgate_core::{Decision, Dispatcher, HookContext, Reply, ToolUse};
use toolgate_inbox::{Auth, InboxPage, Tokens};

/// The refunds each order id got, across every test of the binary.
static REFUNDS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

/// How many times `order_id` was refunded.
pub fn refunds(order_id: &str) -> usize {
    REFUNDS
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(order_id).copied())
        .unwrap_or(0)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
    /// Who asked, added by a rule.
    #[serde(default)]
    note: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Transfer {
    /// The account.
    to: String,
    /// Cents.
    amount_cents: u64,
}

/// The agent: `issue_refund` (asked about; a rule adds a `note`; above 100 000 cents denied),
/// `wire_transfer` (asked about; two people must approve, by the policy).
pub fn dispatcher() -> Dispatcher {
    dispatcher_with(Duration::from_secs(3600))
}

/// [`dispatcher`] whose paused calls wait `ttl`.
pub fn dispatcher_with(ttl: Duration) -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "issue_refund",
            "Refunds an order.",
            |_env, r: Refund| {
                let mut all = REFUNDS.lock().unwrap();
                *all.get_or_insert_with(HashMap::new)
                    .entry(r.order_id.clone())
                    .or_default() += 1;
                Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
            },
        ))
        .tool(ToolDef::sync(
            "wire_transfer",
            "Sends money.",
            |_env, t: Transfer| Ok(format!("sent {} to {}", t.amount_cents, t.to)),
        ))
        .pre_hook(PreHookDef::sync(
            "support::note",
            1,
            |_env, call: &ToolUse| {
                Ok(match call.input.get("note") {
                    None if call.name == "issue_refund" => {
                        let mut input = call.input.clone();
                        input["note"] = json!("asked in chat");
                        Decision::rewrite(input)
                    }
                    _ => Decision::Allow,
                })
            },
        ))
        .pre_hook(PreHookDef::sync(
            "support::refund_cap",
            5,
            |_env, call: &ToolUse| {
                let amount = call
                    .input
                    .get("amount_cents")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                Ok(if call.name == "issue_refund" && amount > 100_000 {
                    Decision::deny("refunds above 100 000 cents are not allowed")
                } else {
                    Decision::Allow
                })
            },
        ))
        .pre_hook(PreHookDef::sync(
            "support::ask",
            10,
            |_env, call: &ToolUse| {
                Ok(Decision::ask(if call.name == "issue_refund" {
                    "refunds above 20 000 cents need a person"
                } else {
                    "transfers need two people"
                }))
            },
        ))
        .pending_ttl(ttl)
        .build()
        .expect("the agent builds")
}

/// The policy: leads approve, edit and decline everything; anyone signed in may decline;
/// transfers need two people.
pub fn policy() -> Policy {
    Policy::new()
        .allow(
            "group:leads",
            &[Action::Approve, Action::Edit, Action::Decline],
            &["*"],
        )
        .two_person("wire_transfer")
}

/// The people: `ann`, `bob` (leads), `u_001` (a lead, and the customer of the calls), `carol`
/// (nobody's lead). Token of each: `tgi_test_NAME`.
pub const PEOPLE: [(&str, &[&str]); 4] = [
    ("ann", &["leads"]),
    ("bob", &["leads"]),
    ("u_001", &["leads"]),
    ("carol", &[]),
];

/// The token of `name`.
pub fn token(name: &str) -> String {
    format!("tgi_test_{name}")
}

/// The tokens file of [`PEOPLE`].
pub fn tokens() -> Tokens {
    let mut text = String::new();
    for (name, groups) in PEOPLE {
        let hash = toolgate_test_sha256(&token(name));
        text.push_str(&format!(
            "[[person]]\nid = \"{name}\"\ngroups = {}\ntoken_sha256 = \"{hash}\"\n",
            serde_json::to_string(groups).unwrap()
        ));
    }
    Tokens::parse(&text).unwrap()
}

fn toolgate_test_sha256(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A folder removed at drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolgate-inbox-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A page over a store, served on 127.0.0.1.
pub struct World {
    pub store: Arc<dyn InboxStore>,
    pub dispatcher: Dispatcher,
    pub addr: SocketAddr,
    pub dir: TempDir,
    /// The store's decision lines (SQLite: `decisions.jsonl` in `dir`).
    pub decisions: PathBuf,
    /// Counts the database's decision lines (PostgreSQL).
    pub count_lines: Option<Box<dyn Fn() -> usize + Send + Sync>>,
    /// The same agent with a pending_ttl of 1 s.
    pub hasty: Dispatcher,
}

/// Serves `page` on 127.0.0.1 from a thread of its own; its address.
pub fn serve(page: toolgate_inbox::InboxPageBuilder) -> SocketAddr {
    let listening = toolgate_inbox::bind(page, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listening.addr();
    std::thread::spawn(move || toolgate_inbox::serve_blocking(listening));
    addr
}

impl World {
    /// The page over `store` (its tools published), tokens signing in, polling every 100 ms.
    pub fn new(store: Arc<dyn InboxStore>, dir: TempDir) -> World {
        let dispatcher = dispatcher_with(Duration::from_secs(3600));
        let hasty = dispatcher_with(Duration::from_secs(1));
        for d in [&dispatcher, &hasty] {
            toolgate_core::block_on(store.publish_tools(&PublishedTools::of(d))).unwrap();
        }
        let mut inbox =
            toolgate_core::approval::inbox::Inbox::builder(Arc::clone(&store)).policy(policy());
        if !store.audits_decisions() {
            inbox = inbox.decision_log(Arc::new(
                toolgate_core::approval::inbox::DecisionFiles::open(&dir.0).unwrap(),
            ));
        }
        let page = InboxPage::builder(Arc::new(inbox.build().unwrap()), Auth::Tokens(tokens()))
            .poll_every(Duration::from_millis(100))
            .body_limit(16 * 1024);
        let addr = serve(page);
        let decisions = dir.0.join("decisions.jsonl");
        World {
            store,
            dispatcher,
            addr,
            dir,
            decisions,
            count_lines: None,
            hasty,
        }
    }

    /// A world on a fresh SQLite file.
    pub fn sqlite(name: &str) -> World {
        let dir = TempDir::new(name);
        let store =
            toolgate_core::store::sqlite::SqliteStore::open(dir.0.join("state.sqlite")).unwrap();
        World::new(Arc::new(store), dir)
    }

    /// The context of the customer's session `session_id`.
    pub fn context(&self, session_id: &str) -> HookContext {
        HookContext::builder("u_001", session_id).build()
    }

    /// Pauses one turn of `session_id` whose calls are `calls` (`(id, tool, input)`), and keeps it
    /// in the store.
    pub fn pause(&self, session_id: &str, calls: &[(&str, &str, Value)]) {
        self.pause_by(&self.dispatcher, session_id, calls);
    }

    /// [`pause`](Self::pause) by `dispatcher`.
    pub fn pause_by(
        &self,
        dispatcher: &Dispatcher,
        session_id: &str,
        calls: &[(&str, &str, Value)],
    ) {
        let content: Vec<Value> = calls
            .iter()
            .map(|(id, tool, input)| json!({"type": "tool_use", "id": id, "name": tool, "input": input}))
            .collect();
        let message =
            serde_json::from_value(json!({"role": "assistant", "content": content})).unwrap();
        let session = dispatcher.session(self.context(session_id));
        let Reply::Pending(turn) = toolgate_core::block_on(session.respond(&message)).unwrap()
        else {
            panic!("the turn pauses for a person")
        };
        toolgate_core::block_on(self.store.put(&turn)).unwrap();
    }

    /// A client of the page, not signed in.
    pub fn client(&self) -> Client {
        Client {
            addr: self.addr,
            cookie: None,
            csrf: None,
            host: self.addr.to_string(),
        }
    }

    /// A client signed in as `name`.
    pub fn signed_in(&self, name: &str) -> Client {
        let mut c = self.client();
        c.sign_in(&token(name));
        c
    }

    /// The store's view of one call (its state, who decided).
    pub fn call(&self, session_id: &str, turn_id: &str, id: &str) -> Value {
        let turn = toolgate_core::block_on(self.store.turn(session_id, turn_id))
            .unwrap()
            .unwrap();
        serde_json::to_value(&turn.call(id).unwrap().call).unwrap()
    }

    /// The decision lines written so far (SQLite: the file; PostgreSQL: the test reads its
    /// own table).
    pub fn decision_count(&self) -> usize {
        match &self.count_lines {
            Some(count) => count(),
            None => self.decision_lines().len(),
        }
    }

    /// The decision lines of `decisions.jsonl` (SQLite).
    pub fn decision_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.decisions)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The first header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// A browser-like client: a cookie jar of one session cookie, the CSRF token its pages carry.
#[derive(Debug, Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
    /// The Host header it sends.
    pub host: String,
}

impl Client {
    /// The page's own origin.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends one request: `headers` as given (a `Host` unless one is given, the cookie), the
    /// body; the answer.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.host));
        }
        if let Some(c) = &self.cookie {
            req.push_str(&format!("Cookie: toolgate_inbox={c}\r\n"));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if method == "POST" {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.write_all(req.as_bytes()).unwrap();
        let _ = stream.write_all(body);
        parse(&read_answer(&mut stream))
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Answer {
        self.send("GET", path, &[], b"")
    }

    /// A form POST from the page's own origin.
    pub fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let origin = self.origin();
        self.send(
            "POST",
            path,
            &[
                ("Origin", &origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body.as_bytes(),
        )
    }

    /// A JSON POST to `/api/decide` with this client's CSRF token and `key`.
    pub fn decide(&self, body: &Value, key: Option<&str>) -> Answer {
        let origin = self.origin();
        let csrf = self.csrf.clone().unwrap_or_default();
        let mut headers = vec![
            ("Origin", origin.as_str()),
            ("Content-Type", "application/json"),
            ("X-CSRF-Token", csrf.as_str()),
        ];
        if let Some(k) = key {
            headers.push(("Idempotency-Key", k));
        }
        self.send("POST", "/api/decide", &headers, body.to_string().as_bytes())
    }

    /// Signs in with `token`; keeps the session cookie and the CSRF token of its pages.
    pub fn sign_in(&mut self, token: &str) {
        let form = self.get("/sign-in");
        assert_eq!(form.status, 200, "{form:?}");
        let set = form.header("set-cookie").unwrap().to_owned();
        let value = set
            .split(';')
            .next()
            .unwrap()
            .split_once('=')
            .unwrap()
            .1
            .to_owned();
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs([("sign_in", value.as_str()), ("token", token)])
            .finish();
        let origin = self.origin();
        let cookie = format!("toolgate_inbox_sign_in={value}");
        let answer = self.send(
            "POST",
            "/sign-in",
            &[
                ("Origin", &origin),
                ("Cookie", &cookie),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body.as_bytes(),
        );
        assert_eq!(answer.status, 303, "{answer:?}");
        let session = answer
            .headers
            .iter()
            .filter(|(k, _)| k == "set-cookie")
            .map(|(_, v)| v)
            .find(|v| v.starts_with("toolgate_inbox="))
            .unwrap();
        self.cookie =
            Some(session.split(';').next().unwrap()["toolgate_inbox=".len()..].to_owned());
        let list = self.get("/");
        self.csrf = hidden(&list.body, "csrf");
        assert!(self.csrf.is_some(), "{}", list.body);
    }
}

/// The value of the first hidden field `name` in `html`.
pub fn hidden(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')?;
    Some(html[start..start + end].to_owned())
}

/// One answer's bytes: its head, then as many bytes as its `Content-Length` says, or its chunks
/// up to the last, or up to the end of the connection (a server may keep it open).
fn read_answer(stream: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return raw,
            Ok(n) => n,
        };
        raw.extend_from_slice(&buf[..n]);
        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
        let body = raw.len() - split - 4;
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        match length {
            Some(len) if body >= len => return raw,
            Some(_) => {}
            None if head.contains("transfer-encoding: chunked") && raw.ends_with(b"0\r\n\r\n") => {
                return raw;
            }
            None => {}
        }
    }
}

fn parse(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = unchunk(&body);
    }
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn unchunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&data[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
    out
}
