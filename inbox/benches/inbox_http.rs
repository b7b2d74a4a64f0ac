//! The approval inbox's page over HTTP, BENCHMARKS.md ("The approval inbox's page"):
//!
//! `cargo bench -p toolgate-inbox --all-features --bench inbox_http` starts a throwaway
//! PostgreSQL server (as the tests do: `toolgate_test_support::postgres`), reached over TCP on
//! 127.0.0.1 with `synchronous_commit` on, serves the page on 127.0.0.1 (a person signed in by
//! token; one kept-alive HTTP/1.1 connection, as a browser's), and prints one `NAME VALUE` line
//! per figure, sides interleaved round by round, medians of the rounds:
//!
//! - `update_floor_us`: one bare conditional `UPDATE … WHERE id = $1 AND state = 'waiting' AND
//!   digest = $2 AND expires_at > now() RETURNING id` (prepared, autocommit) on the same server;
//! - `http_decide_us`: one approval through `POST /api/decide` (JSON, CSRF header, idempotency
//!   key): the request read and checked, `Inbox::decide` on `PostgresStore`, the JSON answer;
//!   `inbox_decide_over_update` is the per-round ratio (target ≤ 3);
//! - `library_decide_us`: the same approval through `Inbox::decide` in this process, on the same
//!   store; `http_decide_over_library` is what the page adds (reading, checking and answering
//!   the request; the store's blocking threads);
//! - `http_list_1k_us`, `http_list_10k_us`: `GET /?tool=refund`, the list page (50 rows of HTML)
//!   with 1 000 and with 10 000 waiting calls (half of them refunds); `inbox_list_10k_over_1k`
//!   (target ≤ 1.5);
//! - `serve_10k_peak_mib`: the peak resident memory (`VmHWM`) of a process serving the page
//!   over 10 000 waiting calls (this bench run again as that process: the code `toolgate inbox`
//!   runs, `Source::inbox` then `serve_blocking`) after it answered every page of the list, a
//!   turn's page for 200 calls and two live-update streams (target ≤ 50 MiB).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it does one small round and checks
//! only that every side answered, never a time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use toolgate_core::approval::PendingTurn;
use toolgate_core::approval::inbox::{Action, Inbox, InboxStore, Policy, Query};
use toolgate_core::store::PendingStore;
use toolgate_core::store::postgres::PostgresStore;
use toolgate_inbox::{Auth, InboxPage, Source, Tokens};
use toolgate_test_support::floor::Floor;
use toolgate_test_support::postgres as server;

/// The person of the bench: her token and its tokens file.
const TOKEN: &str = "tgi_bench_lead";

fn tokens() -> Tokens {
    let hash = toolgate_inbox_sha256(TOKEN);
    Tokens::parse(&format!(
        "[[person]]\nid = \"lead@example.com\"\ntoken_sha256 = \"{hash}\"\n"
    ))
    .expect("the bench's tokens")
}

fn toolgate_inbox_sha256(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn policy() -> Policy {
    Policy::new().allow("*", &[Action::Approve], &["*"])
}

/// A paused turn `id` of one waiting call of `tool`, as a session writes it.
fn turn(id: &str, tool: &str) -> PendingTurn {
    let input = json!({"order_id": format!("o_{id}"), "amount_cents": 25000});
    serde_json::from_value(json!({
        "format": 2, "turn_format": "anthropic_messages", "turn_id": id,
        "session_id": format!("sess_{id}"), "user_id": "u_bench",
        "fingerprint": "f".repeat(64), "created_at": "2026-12-05T10:00:00Z",
        "pending_ttl_ms": 86_400_000,
        "blocks": [{"state": "awaiting_approval", "tool_use_id": id, "tool": tool,
                    "input": input, "effective_input": input,
                    "input_digest": toolgate_core::approval::input_digest(&input),
                    "asked_by": [{"hook": "bench::ask", "reason": "a person decides"}]}]
    }))
    .expect("a paused turn")
}

/// Keeps `n` turns named `prefix_…`, every other one a `refund`, a hundred puts in flight.
fn fill(store: &PostgresStore, prefix: &str, n: usize) {
    let turns: Vec<PendingTurn> = (0..n)
        .map(|i| {
            let tool = if i % 2 == 0 { "refund" } else { "lookup" };
            turn(&format!("toolu_{prefix}_{i}"), tool)
        })
        .collect();
    for chunk in turns.chunks(100) {
        let puts: Vec<_> = chunk.iter().map(|t| store.put(t)).collect();
        for put in puts {
            toolgate_core::block_on(put).expect("kept");
        }
    }
}

/// One kept-alive HTTP/1.1 connection to the page, signed in.
struct Http {
    stream: BufReader<TcpStream>,
    host: String,
    cookie: String,
    csrf: String,
}

impl Http {
    fn connect(addr: SocketAddr) -> Http {
        let stream = TcpStream::connect(addr).expect("the page listens");
        stream.set_nodelay(true).unwrap();
        let mut http = Http {
            stream: BufReader::new(stream),
            host: addr.to_string(),
            cookie: String::new(),
            csrf: String::new(),
        };
        let (_, head, _) = http.send("GET", "/sign-in", &[], "");
        let value = cookie(&head, "toolgate_inbox_sign_in");
        let body = format!("sign_in={value}&token={TOKEN}");
        let origin = format!("http://{}", http.host);
        let pre = format!("toolgate_inbox_sign_in={value}");
        let (status, head, _) = http.send(
            "POST",
            "/sign-in",
            &[
                ("Origin", &origin),
                ("Cookie", &pre),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &body,
        );
        assert_eq!(status, 303, "signed in");
        http.cookie = format!("toolgate_inbox={}", cookie(&head, "toolgate_inbox"));
        let (_, _, page) = http.get("/");
        let marker = "name=\"csrf\" value=\"";
        let at = page.find(marker).expect("a CSRF token") + marker.len();
        http.csrf = page[at..at + 64].to_owned();
        http
    }

    fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        self.stream
            .get_mut()
            .write_all(req.as_bytes())
            .expect("sent");
        let mut head = String::new();
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).expect("an answer");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_owned())
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).expect("the body");
        (status, head, String::from_utf8_lossy(&body).into_owned())
    }

    fn get(&mut self, path: &str) -> (u16, String, String) {
        let cookie = self.cookie.clone();
        self.send("GET", path, &[("Cookie", &cookie)], "")
    }

    fn decide(&mut self, body: &str, key: &str) -> (u16, String, String) {
        let (cookie, csrf, origin) = (
            self.cookie.clone(),
            self.csrf.clone(),
            format!("http://{}", self.host),
        );
        self.send(
            "POST",
            "/api/decide",
            &[
                ("Cookie", &cookie),
                ("Origin", &origin),
                ("X-CSRF-Token", &csrf),
                ("Idempotency-Key", key),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    }
}

fn cookie(head: &str, name: &str) -> String {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, v)| v.trim().strip_prefix(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap_or("").to_owned())
        .next()
        .unwrap_or_else(|| panic!("no cookie {name} in {head}"))
}

/// Serves the page over `store` on 127.0.0.1 from a thread; its address.
fn serve(store: &PostgresStore) -> SocketAddr {
    let store: Arc<dyn InboxStore> = Arc::new(store.clone());
    let inbox = Inbox::builder(store)
        .policy(policy())
        .build()
        .expect("the store audits");
    let page = InboxPage::builder(Arc::new(inbox), Auth::Tokens(tokens()));
    let listening = toolgate_inbox::bind(page, "127.0.0.1:0".parse().unwrap()).expect("bound");
    let addr = listening.addr();
    std::thread::spawn(move || toolgate_inbox::serve_blocking(listening));
    addr
}

/// The next `n` approvals over HTTP; the time per decision (µs).
fn decide(http: &mut Http, calls: &mut impl Iterator<Item = (String, String)>, n: usize) -> f64 {
    let start = Instant::now();
    for (id, digest) in calls.take(n) {
        let body = json!({"session_id": format!("sess_{id}"), "turn_id": id, "tool_use_id": id,
                          "input_digest": digest, "choice": "approve"})
        .to_string();
        let (status, _, answer) = http.decide(&body, &format!("key_{id}"));
        assert_eq!(status, 200, "{answer}");
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// The next `n` approvals through `Inbox::decide` in this process (no HTTP); the time per
/// decision (µs).
fn decide_in_process(
    inbox: &Inbox,
    calls: &mut impl Iterator<Item = (String, String)>,
    n: usize,
) -> f64 {
    let lead = toolgate_core::approval::inbox::Identity::new("lead@example.com");
    let start = Instant::now();
    for (id, digest) in calls.take(n) {
        let request = toolgate_core::approval::inbox::DecisionRequest::new(
            format!("sess_{id}"),
            &id,
            &id,
            digest,
            toolgate_core::approval::inbox::Choice::Approve,
        )
        .idempotency_key(format!("key_{id}"));
        toolgate_core::block_on(inbox.decide(&lead, request)).expect("decided");
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// `n` list pages of the waiting refunds; the time per page (µs).
fn list(http: &mut Http, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let (status, _, page) = http.get("/?tool=refund");
        assert_eq!(status, 200);
        assert!(page.contains("50 calls wait for a person."), "a full page");
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn figure(name: &str, value: f64) {
    println!("{name} {value:.3}");
}

/// The process `serve_10k_peak_mib` measures: the page over the database of the URL in
/// `TOOLGATE_INBOX_BENCH_SERVE`, as `toolgate inbox` serves it; prints its address.
fn serve_child(url: &str) -> ! {
    let inbox = Source::parse(url)
        .inbox(policy(), None)
        .expect("the store opens");
    let page = InboxPage::builder(Arc::new(inbox), Auth::Tokens(tokens()));
    let listening = toolgate_inbox::bind(page, "127.0.0.1:0".parse().unwrap()).expect("bound");
    println!("{}", listening.addr());
    std::io::stdout().flush().unwrap();
    let _ = toolgate_inbox::serve_blocking(listening);
    std::process::exit(0)
}

/// The peak resident memory, MiB, of a process serving `url` after a person's session.
fn peak_memory(url: &str, turns: usize) -> f64 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("TOOLGATE_INBOX_BENCH_SERVE", url)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the serving process");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: SocketAddr = line.trim().parse().expect("its address");
    let mut http = Http::connect(addr);
    // Two live-update streams stay open while the person reads every page of the list.
    let streams: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            write!(
                s,
                "GET /events?tool=refund HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\n\r\n",
                http.cookie
            )
            .unwrap();
            s
        })
        .collect();
    let mut next = Some(String::from("/"));
    let mut pages = 0;
    while let Some(path) = next.take() {
        let (status, _, page) = http.get(&path);
        assert_eq!(status, 200);
        pages += 1;
        next = page
            .split("<p class=\"next\"><a href=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(|href| href.replace("&amp;", "&"));
    }
    for i in (0..turns).step_by((turns / 200).max(1)) {
        let (status, _, _) = http.get(&format!("/turn?session=sess_toolu_l_{i}&turn=toolu_l_{i}"));
        assert_eq!(status, 200);
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    drop(streams);
    child.kill().unwrap();
    child.wait().unwrap();
    eprintln!("serving process: {pages} list pages, peak {kib} kB");
    kib / 1024.0
}

fn main() {
    if let Ok(url) = std::env::var("TOOLGATE_INBOX_BENCH_SERVE") {
        serve_child(&url);
    }
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, decisions, lists): (usize, usize, usize) =
        if bench { (9, 200, 200) } else { (1, 5, 5) };
    let (small, large) = if bench { (1_000, 10_000) } else { (120, 240) };
    let began = Instant::now();
    let db = server::database();
    let store = PostgresStore::connect(&db.tcp).expect("the bench's store");
    let to_decide = 20 + rounds * 2 * decisions.div_ceil(5) * 5;
    fill(&store, "d", to_decide * 2);
    let mut calls = Vec::new();
    let all = Query::waiting().tool("refund").limit(Query::MAX_LIMIT);
    let mut query = all.clone();
    while calls.len() < to_decide {
        let page = toolgate_core::block_on(store.list(&query)).expect("listed");
        calls.extend(
            page.calls
                .into_iter()
                .map(|c| (c.tool_use_id, c.input_digest)),
        );
        match page.next {
            Some(next) => query = all.clone().after(next),
            None => break,
        }
    }
    let mut calls = calls.into_iter();
    let mut floor = Floor::new(&db.tcp, (to_decide + 10) as i64);
    let (db_small, db_large) = (server::database(), server::database());
    let (store_small, store_large) = (
        PostgresStore::connect(&db_small.tcp).expect("the 1k store"),
        PostgresStore::connect(&db_large.tcp).expect("the 10k store"),
    );
    fill(&store_small, "s", small);
    fill(&store_large, "l", large);
    for sql in [&db_small.tcp, &db_large.tcp] {
        server::Sql::connect(sql).run("VACUUM ANALYZE");
    }
    let mut decider = Http::connect(serve(&store));
    let library = Inbox::builder(Arc::new(store.clone()) as Arc<dyn InboxStore>)
        .policy(policy())
        .build()
        .expect("the store audits");
    let mut lister_small = Http::connect(serve(&store_small));
    let mut lister_large = Http::connect(serve(&store_large));
    decide(&mut decider, &mut calls, 10);
    decide_in_process(&library, &mut calls, 10);
    floor.run(10);
    list(&mut lister_small, 5);
    list(&mut lister_large, 5);
    // Each round, the sides take turns five operations at a time (a burst of load on the shared
    // machine falls on every side); a side's figure is its mean per operation in the round.
    let mut rows: [Vec<f64>; 5] = Default::default();
    for _ in 0..rounds {
        let mut sums = [0.0f64; 5];
        for _ in 0..decisions.div_ceil(5) {
            sums[0] += floor.run(5);
            sums[1] += decide(&mut decider, &mut calls, 5);
            sums[2] += decide_in_process(&library, &mut calls, 5);
        }
        for _ in 0..lists.div_ceil(5) {
            sums[3] += list(&mut lister_small, 5);
            sums[4] += list(&mut lister_large, 5);
        }
        for (row, (sum, n)) in rows.iter_mut().zip(
            sums.iter()
                .zip([decisions, decisions, decisions, lists, lists]),
        ) {
            row.push(sum / n.div_ceil(5) as f64);
        }
    }
    let ratio = |a: &[f64], b: &[f64]| -> f64 {
        let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        median(&r)
    };
    figure("update_floor_us", median(&rows[0]));
    figure("http_decide_us", median(&rows[1]));
    figure("library_decide_us", median(&rows[2]));
    figure("inbox_decide_over_update", ratio(&rows[1], &rows[0]));
    figure("http_decide_over_library", ratio(&rows[1], &rows[2]));
    figure("http_list_1k_us", median(&rows[3]));
    figure("http_list_10k_us", median(&rows[4]));
    figure("inbox_list_10k_over_1k", ratio(&rows[4], &rows[3]));
    let url = server::server().url(&db_large.name, "bench-password");
    figure("serve_10k_peak_mib", peak_memory(&url, large));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "inbox_http bench: {:.1} s, load average {}",
        began.elapsed().as_secs_f64(),
        load.split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
}
