//! `--live` against a Messages API on loopback ([`server`]): every bundled transcript played by
//! the server gives the replay's outcomes and audit lines; every request obeys the API's rules;
//! retries, API errors, a refused connection, a missing key, `max_tokens` and `pause_turn`
//! stops, the turn bound and the token totals, each with its exact output and exit code.

mod server;

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::{approval::Approval, audit::AuditLog, provider::Provider};

use super::support::{TempDir, json_lines};
use server::{Expect, KEY, Planned, Request, Seen, Server, check_request};
use support_agent::agent::{self, Agent};
use support_agent::cli::{self, Command};
use support_agent::http::{self, ApiKey};
use support_agent::live::{self, Outside};
use support_agent::output;
use support_agent::specialist::Specialist;
use support_agent::transcript::{self, Transcript};

const MODEL: &str = "claude-sonnet-5";

/// What one `--live` run gave.
#[derive(Debug)]
struct Run {
    code: u8,
    out: String,
    err: String,
    /// The waits the client asked for between attempts (nothing actually sleeps).
    sleeps: Vec<Duration>,
}

/// Runs the command line `args` as `--live` with `key` as `ANTHROPIC_API_KEY`, through the
/// example's own parser, with nobody at a terminal.
fn live(args: &[String], key: Option<&str>) -> Run {
    live_with(args, key, None).0
}

/// [`live`] with a person at the terminal who types `answers` (in order; `None` after the
/// last) when a rule asks about a call; also returns the questions they were asked.
fn live_with(args: &[String], key: Option<&str>, answers: Option<Vec<&str>>) -> (Run, Vec<String>) {
    let command = cli::parse_args(args.iter().map(Into::into)).expect("the arguments parse");
    let Command::Live(live_args, _) = command else {
        panic!("not --live: {command:?}")
    };
    let mut sleeps = Vec::new();
    let mut sleep = |d: Duration| sleeps.push(d);
    let mut questions = Vec::new();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let person: Option<live::Person<'_>> = answers.map(|a| {
            let mut a = a.into_iter();
            let questions = &mut questions;
            Box::new(move |q: &str| {
                questions.push(q.to_owned());
                a.next().map(str::to_owned)
            }) as live::Person<'_>
        });
        live::run_with(
            live_args,
            Outside {
                key: key.map(str::to_owned),
                lines: None,
                person,
                sleep: &mut sleep,
            },
            &mut out,
            &mut err,
        )
    };
    (
        Run {
            code,
            out: String::from_utf8(out).expect("utf-8"),
            err: String::from_utf8(err).expect("utf-8"),
            sleeps,
        },
        questions,
    )
}

/// The tool definitions `specialist` sends.
fn tools(specialist: Specialist) -> Value {
    let agent = Agent::build(specialist, None).expect("builds");
    serde_json::to_value(
        agent
            .dispatcher
            .tool_definitions_for(Provider::Anthropic)
            .unwrap(),
    )
    .unwrap()
}

fn expect(specialist: Specialist) -> Expect {
    Expect {
        key: KEY.to_owned(),
        model: MODEL.to_owned(),
        tools: tools(specialist),
    }
}

/// The last answer of every scripted conversation: text, `end_turn`.
fn final_reply(text: &str, input_tokens: u64, output_tokens: u64) -> Value {
    json!({
        "id": "msg_01LiveFinalAnswer", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}
    })
}

/// `[outcome, final]` of each audit line of `tool_use_id` in `dir`'s audit log, in order.
fn outcomes_of(dir: &TempDir, tool_use_id: &str) -> Vec<Value> {
    json_lines(&dir.path().join("audit_log.jsonl"))
        .into_iter()
        .filter(|l| l["tool_use_id"] == tool_use_id)
        .map(|l| json!([l["outcome"], l["final"]]))
        .collect()
}

/// The bundled transcript `source` (its file name).
fn bundled(source: &str) -> Transcript {
    transcript::bundled()
        .unwrap()
        .into_iter()
        .find(|t| t.source == source)
        .expect("bundled")
}

/// `t`'s assistant messages as the API returned them: what the server plays.
fn recorded(t: &Transcript) -> Vec<Value> {
    t.messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

/// `--live` arguments for transcript `t`'s context, talking to `server`, writing to `dir`.
fn args_for(t: &Transcript, server: &Server, dir: &TempDir, say: &str) -> Vec<String> {
    let c = &t.context;
    [
        "--live",
        "--user",
        &c.user_id,
        "--tier",
        &c.tier,
        "--specialist",
        c.specialist.as_str(),
        "--session-id",
        &c.session_id,
        "--now",
        &c.now_text,
        "--model",
        MODEL,
        "--base-url",
        &server.base_url(),
        "--out-dir",
        &dir.path().display().to_string(),
        "--say",
        say,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Plain `--live` arguments for u_001 (premium, refunds) on `base_url`.
fn args(base_url: &str, dir: &TempDir, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--live",
        "--user",
        "u_001",
        "--tier",
        "premium",
        "--session-id",
        "sess_live_test",
        "--now",
        "2026-11-24T10:15:00Z",
        "--model",
        MODEL,
        "--base-url",
        base_url,
        "--out-dir",
        &dir.path().display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    a.extend(extra.iter().map(|s| (*s).to_owned()));
    a
}

/// An audit or summary line without what measures time or chains lines.
fn untimed(mut line: Value, also: &[&str]) -> Value {
    // Each hook run's measured time too.
    crate::support::zero_durations(&mut line);
    let map = line.as_object_mut().expect("an object");
    for key in ["ts", "duration_us", "prev"].iter().chain(also) {
        map.remove(*key);
    }
    line
}

fn usage_of(message: &Value) -> (u64, u64) {
    (
        message["usage"]["input_tokens"].as_u64().unwrap(),
        message["usage"]["output_tokens"].as_u64().unwrap(),
    )
}

// ---------------------------------------------------------------- the bundled transcripts

/// What the person at the terminal types for each call transcript `t` has a decision for, in
/// `tool_use` order (`y`, or `n` and the reason), and the `--by` name they answer under.
fn answers_for(t: &Transcript) -> Option<(Vec<String>, String)> {
    let mut by = None;
    let answers: Vec<String> = t
        .tool_use_ids()
        .filter_map(|id| t.approvals.get(id))
        .map(|approval| {
            by = Some(approval.by().to_owned());
            match approval {
                Approval::Deny { reason, .. } => format!("n {reason}"),
                _ => "y".to_owned(),
            }
        })
        .collect();
    Some((answers, by?))
}

#[test]
fn live_mode_gives_the_replays_outcomes_and_audit_lines_for_every_bundled_transcript() {
    let transcripts = transcript::bundled().unwrap();
    assert_eq!(transcripts.len(), 10);
    for t in &transcripts {
        // The replay, as `cargo run -p toolgate-support-agent` does it: a transcript's
        // `approvals` resume its paused turn; without them the turn stays paused.
        let replay_dir = TempDir::new("live-replay");
        let audit = AuditLog::open(replay_dir.path()).unwrap();
        let replay =
            agent::replay(t, Some(&audit), &support_agent::state::State::memory()).unwrap();
        drop(audit);
        let mut readable = Vec::new();
        output::write_readable(&mut readable, t, &replay).unwrap();
        let replay_calls: Vec<String> = String::from_utf8(readable)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("   toolu_"))
            .map(str::to_owned)
            .collect();
        let paused = replay.pending.is_some();
        assert_eq!(
            paused,
            t.expected
                .values()
                .any(|o| o.as_str() == "awaiting_approval"),
            "{}",
            t.source
        );

        // The same session, live: the server answers with the recorded messages, then text
        // (a paused turn ends the conversation: no final text is asked for). The person at
        // the terminal types the transcript's decisions; with none, nobody is at a terminal.
        let recorded: Vec<Value> = recorded(t);
        let last = final_reply("Is there anything else I can help with?", 1500, 11);
        let mut plan: Vec<Planned> = recorded.iter().map(Planned::message).collect();
        if !paused {
            plan.push(Planned::message(&last));
        }
        let server = Server::start(expect(t.context.specialist), plan);
        let live_dir = TempDir::new("live");
        let mut args = args_for(t, &server, &live_dir, "Hello, I need help with my order.");
        let person = answers_for(t);
        if let Some((_, by)) = &person {
            args.extend(["--by".to_owned(), by.clone()]);
        }
        let answers = person
            .as_ref()
            .map(|(a, _)| a.iter().map(String::as_str).collect());
        let (run, questions) = live_with(&args, Some(KEY), answers);
        let seen = server.finish();

        assert_eq!((run.code, run.err.as_str()), (0, ""), "{}", t.source);
        assert_eq!(seen.violations, Vec::<String>::new(), "{}", t.source);
        assert_eq!(
            seen.bodies.len(),
            t.messages.len() + usize::from(!paused),
            "{}",
            t.source
        );
        assert_eq!(run.sleeps, Vec::<Duration>::new());
        assert_eq!(questions.len(), t.approvals.len(), "{}", t.source);

        // The same per-call lines, in order.
        let live_calls: Vec<&str> = run
            .out
            .lines()
            .filter(|l| l.starts_with("   toolu_"))
            .collect();
        assert_eq!(live_calls, replay_calls, "{}", t.source);
        // One line per call, and one more for each call that waited for a decision.
        assert_eq!(
            live_calls.len(),
            t.tool_use_ids().count() + t.approvals.len(),
            "{}",
            t.source
        );

        // The same audit lines, time and chain aside (a paused call's line, a person's
        // decision, the resumed call's final line).
        let replayed: Vec<Value> = json_lines(&replay_dir.path().join("audit_log.jsonl"))
            .into_iter()
            .map(|l| untimed(l, &[]))
            .collect();
        let lived: Vec<Value> = json_lines(&live_dir.path().join("audit_log.jsonl"))
            .into_iter()
            .map(|l| untimed(l, &[]))
            .collect();
        assert_eq!(lived, replayed, "{}", t.source);
        // A final line per call, and a line for each call that waited (its only line when the
        // turn stays paused).
        let waited = replayed.iter().filter(|l| l["final"] == false).count();
        assert_eq!(
            waited,
            t.approvals.len() + usize::from(paused),
            "{}",
            t.source
        );
        assert_eq!(
            lived.len(),
            t.tool_use_ids().count() + t.approvals.len(),
            "{}",
            t.source
        );

        // A paused turn: the same pending turn as the replay's, written for --resume.
        let folder = live_dir
            .path()
            .join("pending")
            .join(support_agent::approval::file_name(&t.context.session_id));
        match &replay.pending {
            Some(pending) => {
                let file = folder.join(format!(
                    "{}.json",
                    support_agent::approval::file_name(&pending.turn_id)
                ));
                let written: Value =
                    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
                assert_eq!(
                    written,
                    serde_json::to_value(pending).unwrap(),
                    "{}",
                    t.source
                );
            }
            None => assert!(!folder.exists(), "{}", t.source),
        }

        // The same summary line, with the tokens of every response added.
        let replayed = json_lines(&replay_dir.path().join("session_summaries.jsonl"));
        let lived = json_lines(&live_dir.path().join("session_summaries.jsonl"));
        assert_eq!(replayed.len(), 1);
        assert_eq!(lived.len(), 1);
        assert_eq!(replayed[0].get("usage"), None, "a replay adds no usage");
        let (input, output) = recorded
            .iter()
            .chain((!paused).then_some(&last))
            .map(usage_of)
            .fold((0, 0), |(i, o), (a, b)| (i + a, o + b));
        assert_eq!(
            lived[0]["usage"],
            json!({"input_tokens": input, "output_tokens": output,
                   "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}),
            "{}",
            t.source
        );
        assert_eq!(
            untimed(lived[0].clone(), &["usage"]),
            untimed(replayed[0].clone(), &[]),
            "{}",
            t.source
        );
    }
}

#[test]
fn live_mode_prints_the_conversation_the_calls_and_the_token_totals() {
    let t = transcript::bundled()
        .unwrap()
        .into_iter()
        .find(|t| t.source == "02_free_tier_unusual_phrasing.json")
        .unwrap();
    let recorded: Vec<Value> = recorded(&t);
    let mut plan: Vec<Planned> = recorded.iter().map(Planned::message).collect();
    plan.push(Planned::message(&final_reply(
        "Shipping fees are credited back when an order arrives late or damaged.\n\nAnything else?",
        2000,
        30,
    )));
    let server = Server::start(expect(Specialist::Refunds), plan);
    let base = server.base_url();
    let dir = TempDir::new("live-print");
    let run = live(
        &args_for(
            &t,
            &server,
            &dir,
            "Can I get my shipping fee back as credit?",
        ),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    // The replay's lines for this transcript (tests/support_agent.rs, READABLE_LINES[4..7]).
    let calls = super::readable_lines(4..7);
    let expected = format!(
        "== live: {MODEL} at {base}\n\
         \x20  session sess_free_02, user u_004 (free), specialist refunds, clock 2026-11-24T15:40:00Z\n\
         > Can I get my shipping fee back as credit?\n\
         {}\n\
         \x20  assistant: That sounds like it needs a case file; let me prepare one.\n\
         {}\n\
         \x20  assistant: Let me check the refund policy instead.\n\
         {}\n\
         \x20  assistant: Shipping fees are credited back when an order arrives late or damaged.\n\
         \x20  assistant: Anything else?\n\
         \x20  summary: calls 3; outcomes ok 2, blocked 1; tools lookup_user 1, prepare_case_file 1, search_faq 1; observer errors 0; tokens input 6780, output 763\n\
         audit log: {dir}/audit_log.jsonl (3 lines appended, one per tool_use)\n\
         session summaries: {dir}/session_summaries.jsonl (1 line appended, one per session)\n",
        calls[0],
        calls[1],
        calls[2],
        dir = dir.path().display(),
    );
    assert_eq!(run.out, expected);
}

// ---------------------------------------------------------------- the request checks

/// A request as the agent would send it, to break one rule at a time.
fn good_request() -> (Request, Vec<Value>) {
    let served = vec![json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "tool_use", "id": "toolu_01A", "name": "lookup_user",
                     "input": {"user_id": "u_001"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    })];
    let body = json!({
        "model": MODEL, "max_tokens": 1024, "system": "You are support.",
        "tools": tools(Specialist::Refunds),
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": served[0]["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A",
                                          "content": "{}"}]}
        ]
    });
    let request = Request {
        method: "POST".into(),
        path: "/v1/messages".into(),
        headers: vec![
            ("x-api-key".into(), KEY.into()),
            ("anthropic-version".into(), "2023-06-01".into()),
            ("content-type".into(), "application/json".into()),
        ],
        body: body.to_string().into_bytes(),
    };
    (request, served)
}

fn with_body(request: &Request, edit: impl FnOnce(&mut Map<String, Value>)) -> Request {
    let mut body: Value = serde_json::from_slice(&request.body).unwrap();
    edit(body.as_object_mut().unwrap());
    Request {
        body: body.to_string().into_bytes(),
        ..request.clone()
    }
}

#[test]
fn the_request_check_catches_each_broken_rule() {
    let (good, served) = good_request();
    let e = expect(Specialist::Refunds);
    assert_eq!(check_request(&good, &e, &served), Vec::<String>::new());

    let mut no_version = good.clone();
    no_version.headers.retain(|(n, _)| n != "anthropic-version");
    assert_eq!(
        check_request(&no_version, &e, &served),
        ["anthropic-version is None (expected 2023-06-01)"]
    );
    let mut wrong_key = good.clone();
    wrong_key.headers[0].1 = "sk-other".into();
    assert_eq!(
        check_request(&wrong_key, &e, &served),
        ["x-api-key is not the key"]
    );
    let response_fields = with_body(&good, |b| {
        b["messages"][1]["id"] = json!("msg_01");
        b["messages"][1]["stop_reason"] = json!("tool_use");
    });
    assert_eq!(
        check_request(&response_fields, &e, &served),
        [
            r#"messages.1 has members ["content", "id", "role", "stop_reason"] (expected role and content only)"#
        ]
    );
    let text_first = with_body(&good, |b| {
        b["messages"][2]["content"] = json!([
            {"type": "text", "text": "here you go"},
            {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "{}"}
        ]);
    });
    assert_eq!(
        check_request(&text_first, &e, &served),
        [
            "messages.2: the first blocks are not one tool_result per tool_use of messages.1, in order"
        ]
    );
    let unanswered = with_body(&good, |b| {
        b["messages"].as_array_mut().unwrap().pop();
    });
    assert_eq!(
        check_request(&unanswered, &e, &served),
        [
            "messages.1: its tool_use blocks are not answered",
            "the last message is not a user turn"
        ]
    );
    let two_users = with_body(&good, |b| {
        let m = b["messages"].as_array_mut().unwrap();
        m.insert(
            1,
            json!({"role": "user", "content": [{"type": "text", "text": "again"}]}),
        );
    });
    assert_eq!(
        check_request(&two_users, &e, &served),
        [
            r#"messages.1.role is "user" (expected assistant: turns alternate, user first)"#,
            r#"messages.2.role is "assistant" (expected user: turns alternate, user first)"#,
            r#"messages.3.role is "user" (expected assistant: turns alternate, user first)"#,
        ]
    );
    let fewer_tools = with_body(&good, |b| {
        b["tools"].as_array_mut().unwrap().pop();
    });
    assert_eq!(
        check_request(&fewer_tools, &e, &served),
        ["tools are not the specialist's definitions"]
    );
    let edited_turn = with_body(&good, |b| {
        b["messages"][1]["content"][0]["input"] = json!({"user_id": "u_002"});
    });
    assert_eq!(
        check_request(&edited_turn, &e, &served),
        ["the assistant turns are not the answers served (1 sent, 1 expected)"]
    );
}

// ---------------------------------------------------------------- retries and errors

fn tool_use_then_final() -> Vec<Value> {
    vec![
        json!({
            "id": "msg_01Lookup", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "tool_use", "id": "toolu_01LiveLookup", "name": "lookup_user",
                         "input": {"user_id": "u_001"}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 700, "output_tokens": 40}
        }),
        final_reply("You have two orders.", 800, 9),
    ]
}

#[test]
fn a_429_waits_its_retry_after_and_a_529_backs_off_then_the_run_goes_on() {
    let [use_, done] = <[Value; 2]>::try_from(tool_use_then_final()).unwrap();
    let plan = vec![
        Planned::error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            Some("3"),
        ),
        Planned::error(529, "overloaded_error", "Overloaded", None),
        Planned::message(&use_),
        Planned::message(&done),
    ];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-retry");
    let run = live(
        &args(&server.base_url(), &dir, &["--say", "What are my orders?"]),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!(run.code, 0);
    assert_eq!(
        run.err,
        "note: the Messages API answered 429 rate_limit_error; trying again in 3 s (attempt 2 of 5)\n\
         note: the Messages API answered 529 overloaded_error; trying again in 2 s (attempt 3 of 5)\n"
    );
    assert_eq!(run.sleeps, [Duration::from_secs(3), Duration::from_secs(2)]);
    // The same request three times, then the next one with the answer.
    assert_eq!(seen.bodies.len(), 4);
    assert_eq!(seen.bodies[0], seen.bodies[1]);
    assert_eq!(seen.bodies[1], seen.bodies[2]);
    assert_eq!(seen.bodies[3]["messages"].as_array().unwrap().len(), 3);
    assert!(run.out.contains(
        "   toolu_01LiveLookup  lookup_user {\"user_id\":\"u_001\"} | allowed, ok | {\"user_id\":\"u_001\",\"tier\":\"premium\",\"orders\":[\"o_1001\",\"o_1002\"]}\n"
    ));
}

#[test]
fn a_5xx_is_tried_five_times_in_all_then_the_run_ends_with_exit_1() {
    let plan = vec![Planned::error(500, "api_error", "Internal server error", None); 5];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-5xx");
    let run = live(&args(&server.base_url(), &dir, &["--say", "hi"]), Some(KEY));
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!(seen.bodies.len(), 5);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.sleeps,
        [1, 2, 4, 8].map(Duration::from_secs),
        "1 s, doubling, without retry-after"
    );
    assert_eq!(
        run.err,
        "note: the Messages API answered 500 api_error; trying again in 1 s (attempt 2 of 5)\n\
         note: the Messages API answered 500 api_error; trying again in 2 s (attempt 3 of 5)\n\
         note: the Messages API answered 500 api_error; trying again in 4 s (attempt 4 of 5)\n\
         note: the Messages API answered 500 api_error; trying again in 8 s (attempt 5 of 5)\n\
         error: the Messages API answered 500 api_error: Internal server error (request_id req_011CTest500) after 5 attempts\n"
    );
    // The session still ends: its summary line is written.
    assert_eq!(
        json_lines(&dir.path().join("session_summaries.jsonl"))
            .into_iter()
            .map(|l| untimed(l, &[]))
            .collect::<Vec<_>>(),
        [json!({"session_id": "sess_live_test", "user_id": "u_001",
                "started_at": "2026-11-24T10:15:00Z", "ended_at": "2026-11-24T10:15:00Z",
                "calls": 0, "outcomes": {}, "tools": {}, "observer_errors": 0})]
    );
}

#[test]
fn a_400_is_shown_with_the_apis_message_and_ends_the_run_with_exit_1() {
    let plan = vec![Planned::error(
        400,
        "invalid_request_error",
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        None,
    )];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-400");
    let run = live(
        &args(
            &server.base_url(),
            &dir,
            &["--say", "hi", "--say", "and more"],
        ),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!(
        seen.bodies.len(),
        1,
        "a 400 is not tried again, and nothing more is said"
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.sleeps, Vec::<Duration>::new());
    assert_eq!(
        run.err,
        "error: the Messages API answered 400 invalid_request_error: messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$' (request_id req_011CTest400)\n"
    );
    assert!(!run.out.contains("> and more"));
}

#[test]
fn a_refused_connection_names_the_url_and_ends_the_run_with_exit_1() {
    // A port that was just free: nothing listens on it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}");
    let dir = TempDir::new("live-refused");
    let run = live(&args(&base, &dir, &["--say", "hi"]), Some(KEY));
    assert_eq!(run.code, 1);
    assert_eq!(run.sleeps, Vec::<Duration>::new());
    assert_eq!(
        run.err,
        format!(
            "error: cannot reach the Messages API at {base}/v1/messages: Connection refused (os \
             error 111)\n"
        )
    );
}

#[test]
fn without_a_key_one_line_says_how_to_set_it_exit_2_and_nothing_is_written() {
    let dir = TempDir::new("live-nokey");
    let out_dir = dir.path().join("data");
    let a = [
        "--live",
        "--user",
        "u_001",
        "--tier",
        "premium",
        "--say",
        "hi",
        "--base-url",
        "http://127.0.0.1:9",
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]
    .map(str::to_owned);
    for key in [None, Some("")] {
        let run = live(&a, key);
        assert_eq!(run.code, 2);
        assert_eq!(run.out, "");
        assert_eq!(
            run.err,
            "error: ANTHROPIC_API_KEY is not set: create a key in the Claude Console (Settings, \
             API keys), then `export ANTHROPIC_API_KEY=<your key>` and run again\n"
        );
        assert!(!out_dir.exists(), "nothing written");
    }
}

#[test]
fn the_key_is_never_printed_nor_written() {
    assert_eq!(
        format!("{:?}", ApiKey::new(KEY.to_owned()).unwrap()),
        "ApiKey(<hidden>)"
    );
    let plans = [
        vec![Planned::error(
            401,
            "authentication_error",
            "invalid x-api-key",
            None,
        )],
        vec![
            Planned::error(429, "rate_limit_error", "slow down", Some("0.5")),
            Planned::message(&tool_use_then_final()[0]),
            Planned::message(&tool_use_then_final()[1]),
        ],
    ];
    for plan in plans {
        let server = Server::start(expect(Specialist::Refunds), plan);
        let dir = TempDir::new("live-key");
        let run = live(&args(&server.base_url(), &dir, &["--say", "hi"]), Some(KEY));
        let seen = server.finish();
        assert_eq!(seen.violations, Vec::<String>::new());
        for text in [
            run.out.clone(),
            run.err.clone(),
            std::fs::read_to_string(dir.path().join("audit_log.jsonl")).unwrap_or_default(),
            std::fs::read_to_string(dir.path().join("session_summaries.jsonl")).unwrap(),
        ] {
            assert!(!text.contains(KEY), "the key leaked: {text}");
            assert!(
                !text.contains("7f3a9c51e2"),
                "part of the key leaked: {text}"
            );
        }
    }
}

// ---------------------------------------------------------------- stop reasons and bounds

#[test]
fn a_response_cut_at_max_tokens_runs_nothing_and_is_asked_again_with_twice_the_tokens() {
    let cut = json!({
        "id": "msg_01Cut", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "tool_use", "id": "toolu_01CutOff", "name": "issue_refund",
                     "input": {"order_id": "o_1001"}}],
        "stop_reason": "max_tokens", "stop_sequence": null,
        "usage": {"input_tokens": 600, "output_tokens": 256}
    });
    let [use_, done] = <[Value; 2]>::try_from(tool_use_then_final()).unwrap();
    let plan = vec![
        Planned::message(&cut),
        Planned::message(&use_),
        Planned::message(&done),
    ];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-maxtokens");
    let run = live(
        &args(
            &server.base_url(),
            &dir,
            &["--say", "refund it", "--max-tokens", "256"],
        ),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    let max_tokens: Vec<&Value> = seen.bodies.iter().map(|b| &b["max_tokens"]).collect();
    assert_eq!(max_tokens, [&json!(256), &json!(512), &json!(512)]);
    assert_eq!(
        seen.bodies[0]["messages"], seen.bodies[1]["messages"],
        "the cut answer is not kept"
    );
    assert!(run.out.contains(&format!(
        "   toolu_01CutOff  issue_refund {{\"order_id\":\"o_1001\"}} | failed, not_run | {}\n   ! cut at max_tokens 256: nothing of it runs; asking again with max_tokens 512\n",
        super::support::NOT_RUN_MAX_TOKENS
    )), "{}", run.out);
    let outcomes: Vec<(String, String)> = json_lines(&dir.path().join("audit_log.jsonl"))
        .iter()
        .map(|l| {
            (
                l["tool_use_id"].as_str().unwrap().to_owned(),
                l["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("toolu_01CutOff".to_owned(), "not_run".to_owned()),
            ("toolu_01LiveLookup".to_owned(), "ok".to_owned())
        ]
    );
    // The cut response's tokens count: they are billed.
    let summary = &json_lines(&dir.path().join("session_summaries.jsonl"))[0];
    assert_eq!(
        summary["usage"],
        json!({"input_tokens": 2100, "output_tokens": 305,
               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    );
}

#[test]
fn a_response_cut_at_the_cap_ends_the_run_with_exit_1() {
    let cut = json!({
        "id": "msg_01Cut", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": "Let me expl"}],
        "stop_reason": "max_tokens", "stop_sequence": null,
        "usage": {"input_tokens": 600, "output_tokens": 8192}
    });
    let server = Server::start(expect(Specialist::Refunds), vec![Planned::message(&cut)]);
    let dir = TempDir::new("live-cap");
    let run = live(
        &args(
            &server.base_url(),
            &dir,
            &["--say", "explain", "--max-tokens", "8192"],
        ),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!(run.code, 1);
    assert_eq!(
        run.err,
        "error: the response was cut at max_tokens 8192, the most this agent asks for\n"
    );
}

#[test]
fn a_pause_turn_is_sent_back_as_the_last_turn_and_continued() {
    let paused = json!({
        "id": "msg_01Paused", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": "Looking that up."}],
        "stop_reason": "pause_turn", "stop_sequence": null,
        "usage": {"input_tokens": 300, "output_tokens": 20}
    });
    let [use_, done] = <[Value; 2]>::try_from(tool_use_then_final()).unwrap();
    let plan = vec![
        Planned::message(&paused),
        Planned::message(&use_),
        Planned::message(&done),
    ];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-pause");
    let run = live(
        &args(&server.base_url(), &dir, &["--say", "orders?"]),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert_eq!(
        seen.bodies[1]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "orders?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Looking that up."}]}
        ])
    );
    // The continuation's blocks join the paused turn: the turns still alternate.
    assert_eq!(
        seen.bodies[2]["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Looking that up."},
            {"type": "tool_use", "id": "toolu_01LiveLookup", "name": "lookup_user",
             "input": {"user_id": "u_001"}}
        ]})
    );
}

#[test]
fn the_turn_bound_ends_a_conversation_that_keeps_calling_tools() {
    let [use_, _] = <[Value; 2]>::try_from(tool_use_then_final()).unwrap();
    let mut again = use_.clone();
    again["content"][0]["id"] = json!("toolu_01LiveLookup2");
    let plan = vec![Planned::message(&use_), Planned::message(&again)];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-bound");
    let run = live(
        &args(
            &server.base_url(),
            &dir,
            &["--say", "loop", "--max-turns", "2"],
        ),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!(seen.bodies.len(), 2);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.err,
        "error: no final answer after 2 requests (--max-turns)\n"
    );
}

#[test]
fn two_things_said_make_one_conversation() {
    let plan = vec![
        Planned::message(&final_reply("Hello!", 100, 3)),
        Planned::message(&final_reply("Goodbye!", 120, 4)),
    ];
    let server = Server::start(expect(Specialist::Triage), plan);
    let base = server.base_url();
    let dir = TempDir::new("live-two");
    let run = live(
        &args(
            &server.base_url(),
            &dir,
            &["--specialist", "triage", "--say", "hi", "--say", "bye"],
        ),
        Some(KEY),
    );
    let seen: Seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert_eq!(
        seen.bodies[1]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
            {"role": "user", "content": [{"type": "text", "text": "bye"}]}
        ])
    );
    assert_eq!(
        seen.bodies[0]["system"],
        live::system_prompt(Specialist::Triage, "u_001", "premium")
    );
    assert_eq!(
        run.out,
        format!(
            "== live: {MODEL} at {base}\n\
             \x20  session sess_live_test, user u_001 (premium), specialist triage, clock 2026-11-24T10:15:00Z\n\
             > hi\n\
             \x20  assistant: Hello!\n\
             > bye\n\
             \x20  assistant: Goodbye!\n\
             \x20  summary: calls 0; outcomes none; tools none; observer errors 0; tokens input 220, output 7\n\
             audit log: {dir}/audit_log.jsonl (0 lines appended, one per tool_use)\n\
             session summaries: {dir}/session_summaries.jsonl (1 line appended, one per session)\n",
            dir = dir.path().display()
        )
    );
}

// ---------------------------------------------------------------- the command line

#[test]
fn live_options_are_checked_before_anything_runs() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--live", "--tier", "premium", "--say", "hi"],
            "--live needs --user ID (the signed-in customer)",
        ),
        (
            &["--live", "--user", "u_001", "--say", "hi"],
            "--live needs --tier free|premium (the customer's tier)",
        ),
        (
            &["--live", "--user", "u_001", "--tier", "gold"],
            "--tier gold: expected free or premium",
        ),
        (
            &[
                "--live",
                "--user",
                "u_001",
                "--tier",
                "free",
                "--max-turns",
                "0",
            ],
            "--max-turns 0: expected a whole number above 0",
        ),
        (
            &[
                "--live", "--user", "u_001", "--tier", "free", "--now", "tomorrow",
            ],
            "--now tomorrow: expected an RFC 3339 instant like 2026-11-24T10:15:00Z",
        ),
        (
            &["--live", "--user", "u_001", "--tier", "free", "--json"],
            "--live talks to the model: it takes no --json, --schemas, --transcript or --provider",
        ),
        (
            &[
                "--live",
                "--user",
                "u_001",
                "--tier",
                "free",
                "--approve",
                "toolu_1",
            ],
            "--approve, --deny and --reason go with --resume",
        ),
        (
            &[
                "--live", "--user", "u_001", "--tier", "free", "--by", "a", "--by", "b",
            ],
            "--by is given twice",
        ),
        (&["--say", "hi"], "--say goes with --live"),
        (&["--user", "u_001"], "--user goes with --live"),
        (
            &["--live", "--user", "a", "--user", "b"],
            "--user is given twice",
        ),
    ];
    for (a, problem) in cases {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = cli::run(a.iter().map(Into::into), &mut out, &mut err);
        assert_eq!(
            (code, String::from_utf8(err).unwrap()),
            (2, format!("error: {problem} (see --help)\n")),
            "{a:?}"
        );
        assert!(out.is_empty());
    }
}

#[test]
fn live_options_have_their_defaults() {
    let Command::Live(a, _) =
        cli::parse_args(["--live", "--user", "u_001", "--tier", "free"].map(Into::into)).unwrap()
    else {
        panic!("--live")
    };
    assert_eq!(a.model, "claude-sonnet-5");
    assert_eq!(a.base_url, "https://api.anthropic.com");
    assert_eq!(a.specialist, Specialist::Refunds);
    assert_eq!((a.max_turns, a.max_tokens), (10, 1024));
    assert_eq!(a.out_dir, std::path::PathBuf::from("data"));
    assert_eq!((a.now, a.session_id, a.say), (None, None, vec![]));
    assert_eq!(a.by, "operator");
}

#[test]
fn without_words_and_without_a_terminal_live_says_what_it_needs() {
    let Command::Live(a, _) = cli::parse_args(
        [
            "--live",
            "--user",
            "u_001",
            "--tier",
            "free",
            "--out-dir",
            "/nonexistent/never",
        ]
        .map(Into::into),
    )
    .unwrap() else {
        panic!("--live")
    };
    let mut sleep = |_| {};
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = live::run_with(
        a,
        Outside {
            key: Some(KEY.to_owned()),
            lines: None,
            person: None,
            sleep: &mut sleep,
        },
        &mut out,
        &mut err,
    );
    assert_eq!(code, 2);
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "error: --live needs the customer's words: --say TEXT (repeatable), or type them at a \
         terminal (see --help)\n"
    );
}

#[test]
fn retry_after_is_read_in_seconds_and_the_backoff_doubles_to_its_cap() {
    assert_eq!(http::parse_retry_after("3"), Some(Duration::from_secs(3)));
    assert_eq!(
        http::parse_retry_after(" 0.5 "),
        Some(Duration::from_millis(500))
    );
    assert_eq!(
        http::parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT"),
        None
    );
    assert_eq!(http::parse_retry_after("-1"), None);
    let waits: Vec<u64> = (1..=7).map(|a| http::backoff(a).as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
    assert_eq!(http::backoff(u32::MAX), http::BACKOFF_CAP);
}

#[test]
fn a_long_retry_after_is_cut_to_its_cap() {
    let [use_, done] = <[Value; 2]>::try_from(tool_use_then_final()).unwrap();
    let _ = use_;
    let plan = vec![
        Planned::error(429, "rate_limit_error", "slow down", Some("3600")),
        Planned::message(&done),
    ];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-cap-wait");
    let run = live(&args(&server.base_url(), &dir, &["--say", "hi"]), Some(KEY));
    server.finish();
    assert_eq!(run.code, 0);
    assert_eq!(run.sleeps, [http::RETRY_AFTER_CAP]);
}

#[test]
fn typed_lines_are_said_in_order_and_blank_ones_skipped() {
    let plan = vec![
        Planned::message(&final_reply("Hello!", 100, 3)),
        Planned::message(&final_reply("Goodbye!", 120, 4)),
    ];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-typed");
    let Command::Live(a, _) =
        cli::parse_args(args(&server.base_url(), &dir, &[]).iter().map(Into::into)).unwrap()
    else {
        panic!("--live")
    };
    let typed = ["hi\n", "   \n", "bye\n"].map(str::to_owned);
    let mut sleep = |_| {};
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = live::run_with(
        a,
        Outside {
            key: Some(KEY.to_owned()),
            lines: Some(Box::new(typed.into_iter())),
            person: None,
            sleep: &mut sleep,
        },
        &mut out,
        &mut err,
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!((code, String::from_utf8(err).unwrap().as_str()), (0, ""));
    let said: Vec<&str> = std::str::from_utf8(&out)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("> "))
        .collect();
    assert_eq!(said, ["> hi", "> bye"]);
    assert_eq!(seen.bodies[1]["messages"][2]["content"][0]["text"], "bye");
}

#[test]
fn an_empty_final_answer_is_not_sent_back_and_the_next_words_join_the_user_turn() {
    let mut empty = final_reply("", 100, 2);
    empty["content"] = json!([]);
    let plan = vec![
        Planned::message(&empty),
        Planned::message(&final_reply("Goodbye!", 120, 4)),
    ];
    let server = Server::start(expect(Specialist::Refunds), plan);
    let dir = TempDir::new("live-empty");
    let run = live(
        &args(&server.base_url(), &dir, &["--say", "hi", "--say", "bye"]),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!(seen.violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert_eq!(
        seen.bodies[1]["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi"}, {"type": "text", "text": "bye"}
        ]}])
    );
}

#[test]
fn a_2xx_that_is_not_an_assistant_message_ends_the_run_with_exit_1() {
    let user_turn = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let cases = [
        (
            Planned::message(&user_turn),
            "error: the Messages API's answer is not an assistant message: its role is `user`\n",
        ),
        (
            Planned::message(&json!({"role": "assistant", "content": 7})),
            "error: the Messages API's answer is not an assistant message: field `content` must \
             be a string or an array of content blocks, found number\n",
        ),
    ];
    for (planned, stderr) in cases {
        let server = Server::start(expect(Specialist::Refunds), vec![planned]);
        let dir = TempDir::new("live-bad-2xx");
        let run = live(&args(&server.base_url(), &dir, &["--say", "hi"]), Some(KEY));
        let seen = server.finish();
        assert_eq!(seen.violations, Vec::<String>::new());
        assert_eq!((run.code, run.err.as_str()), (1, stderr));
    }
}

#[test]
fn a_refund_that_needs_a_person_pauses_the_live_turn() {
    // Transcript 08: a refund of 25000 cents, which the approval rule asks a person about.
    let t = bundled("08_large_refund_paused.json");
    let recorded: Vec<Value> = recorded(&t);
    let plan: Vec<Planned> = recorded.iter().map(Planned::message).collect();
    let server = Server::start(expect(t.context.specialist), plan);
    let dir = TempDir::new("live-paused");
    let run = live(
        &args_for(&t, &server, &dir, "Please refund order o_1002."),
        Some(KEY),
    );
    let seen = server.finish();
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert_eq!(seen.violations, Vec::<String>::new());
    // One request: the paused turn ends the conversation, no tool_result is sent for it.
    assert_eq!(seen.bodies.len(), 1);
    let id = "toolu_01Nq8tEcVr2W9gAy4hDj8QxF";
    let file = crate::pending_file(dir.path(), "sess_paused_08");
    let note = format!(
        "note: tool_use {id} awaits a person's approval; pending turn written to {f}; finish it \
         with --resume {f} --approve {id} [--by WHO] or --deny {id} --reason TEXT",
        f = file.display()
    );
    assert_eq!(
        run.out
            .lines()
            .filter(|l| l.starts_with("note: "))
            .collect::<Vec<_>>(),
        [note.as_str()]
    );
    let pending: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(pending["session_id"], "sess_paused_08");
    assert_eq!(pending["user_id"], "u_001");
    let awaiting: Vec<&str> = pending["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["state"] == "awaiting_approval")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(awaiting, [id]);
    // The audit log: the waiting call's line is not final.
    let waiting: Vec<Value> = outcomes_of(&dir, id);
    assert_eq!(waiting, [json!(["awaiting_approval", false])]);
}

#[test]
fn a_person_at_the_terminal_decides_and_the_live_turn_goes_on() {
    // Transcript 07: a refund of 90000 cents the approval rule asks about; the person first
    // types something that is not an answer, then declines with a reason.
    let t = bundled("07_large_refund_denied.json");
    let recorded: Vec<Value> = recorded(&t);
    let mut plan: Vec<Planned> = recorded.iter().map(Planned::message).collect();
    let last = final_reply("I have asked for a return label first.", 900, 12);
    plan.push(Planned::message(&last));
    let server = Server::start(expect(t.context.specialist), plan);
    let dir = TempDir::new("live-person");
    let mut args = args_for(&t, &server, &dir, "Please refund my order.");
    args.extend(["--by".to_owned(), "lead@shop.example".to_owned()]);
    let (run, questions) = live_with(
        &args,
        Some(KEY),
        Some(vec!["maybe", "  N   send a return label first  \n"]),
    );
    let seen = server.finish();
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert_eq!(seen.violations, Vec::<String>::new());
    let id = "toolu_01Lo6rCaTp0U7eYw2fBh6OvD";
    let question = "approve issue_refund {\"order_id\":\"o_3002\",\"amount_cents\":30000}? y = \
                    approve, n REASON = decline: ";
    assert_eq!(questions, [question, question]);
    let person: Vec<&str> = run
        .out
        .lines()
        .filter(|l| l.starts_with("   ?") || l.starts_with("   ="))
        .collect();
    assert_eq!(
        person,
        [
            format!(
                "   ? {id} issue_refund waits for a person: a refund of 30000 cents is above \
                 20000 cents and needs a person's approval"
            ),
            "   = `maybe` is not an answer: type y to approve, or n and the reason to decline"
                .to_owned(),
            format!("   = {id} declined by lead@shop.example: send a return label first"),
        ]
    );
    // The declined call is answered in the next request, and the conversation goes on to the
    // final answer; nothing is left paused.
    assert_eq!(seen.bodies.len(), 3);
    let answer = &seen.bodies[2]["messages"][4];
    assert_eq!(
        answer,
        &json!({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": id, "is_error": true,
            "content": "BLOCKED: a person declined this call: send a return label first"
        }]})
    );
    assert!(!dir.path().join("pending").exists());
    assert_eq!(
        run.out.lines().find(|l| l.starts_with("audit log: ")),
        Some(
            format!(
                "audit log: {}/audit_log.jsonl (3 lines appended, one per tool_use, and 1 not \
                 final for calls that waited for approval)",
                dir.path().display()
            )
            .as_str()
        )
    );
    let decided: Vec<Value> = json_lines(&dir.path().join("audit_log.jsonl"))
        .into_iter()
        .filter(|l| l["tool_use_id"] == id)
        .map(|l| json!([l["outcome"], l["final"], l["denied_by"]]))
        .collect();
    assert_eq!(
        decided,
        [
            json!(["awaiting_approval", false, null]),
            json!(["blocked", null, "lead@shop.example"])
        ]
    );
}

#[test]
fn when_the_terminal_input_ends_before_a_decision_the_live_turn_pauses() {
    // Transcript 06's refund waits; the person's input ends (Ctrl-D) at the question, or
    // three answers in a row cannot be read: the turn is written for --resume as when nobody
    // is at a terminal, and nothing is decided.
    let t = bundled("06_large_refund_approved.json");
    let id = "toolu_01Jm4pAyRn8S5cWu0dZf4MtB";
    for answers in [vec![], vec!["ok", "sure", "fine"]] {
        let recorded: Vec<Value> = recorded(&t);
        let plan: Vec<Planned> = recorded.iter().map(Planned::message).collect();
        let server = Server::start(expect(t.context.specialist), plan);
        let dir = TempDir::new("live-person-gone");
        let tries = answers.len();
        let (run, questions) = live_with(
            &args_for(&t, &server, &dir, "Please refund my order."),
            Some(KEY),
            Some(answers),
        );
        let seen = server.finish();
        assert_eq!((run.code, run.err.as_str()), (0, ""));
        assert_eq!(seen.bodies.len(), 2);
        assert_eq!(questions.len(), tries.max(1));
        let file = crate::pending_file(dir.path(), "sess_approve_06");
        let pending: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let waiting: Vec<&str> = pending["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["state"] == "awaiting_approval")
            .map(|b| b["tool_use_id"].as_str().unwrap())
            .collect();
        assert_eq!(waiting, [id]);
        assert_eq!(
            run.out.lines().filter(|l| l.starts_with("   = ")).count(),
            tries
        );
        let lines: Vec<Value> = outcomes_of(&dir, id);
        assert_eq!(lines, [json!(["awaiting_approval", false])]);
    }
}

#[test]
fn a_persons_answer_is_read_as_documented() {
    use live::parse_answer;
    let by = "lead@shop.example";
    for yes in ["y", "Y", "yes", " YES \n"] {
        assert_eq!(parse_answer(yes, by), Ok(Approval::approve(by)), "{yes:?}");
    }
    for (no, reason) in [
        ("n", "declined by lead@shop.example"),
        ("No\n", "declined by lead@shop.example"),
        (
            "n  the items are not back yet ",
            "the items are not back yet",
        ),
        ("no\tnot this week", "not this week"),
    ] {
        assert_eq!(
            parse_answer(no, by),
            Ok(Approval::deny(by, reason)),
            "{no:?}"
        );
    }
    for other in ["", "yes please", "nope", "approve", "ja"] {
        assert_eq!(
            parse_answer(other, by),
            Err(format!(
                "`{}` is not an answer: type y to approve, or n and the reason to decline",
                other.trim()
            )),
            "{other:?}"
        );
    }
}

#[cfg(feature = "postgres")]
#[test]
fn live_mode_on_postgres_keeps_its_answers_and_trail_there_and_a_second_worker_runs_nothing() {
    use super::pg_server;
    let t = transcript::bundled()
        .unwrap()
        .into_iter()
        .find(|t| t.source == "02_free_tier_unusual_phrasing.json")
        .unwrap();
    let db = pg_server::database();
    let url = pg_server::server().url(&db.name, "live-secret");
    let sql = pg_server::Sql::connect(&db.settings);
    let plan = || {
        let mut plan: Vec<Planned> = recorded(&t).iter().map(Planned::message).collect();
        plan.push(Planned::message(&final_reply("Anything else?", 2000, 30)));
        plan
    };
    let lines = |filter: &str| {
        sql.int(&format!(
            "SELECT count(*) FROM toolgate_audit WHERE chain = 'audit_log' \
             AND convert_from(line, 'UTF8')::jsonb ->> 'session_id' = 'sess_free_02' {filter}"
        ))
    };
    // Worker A answers the conversation; its audit lines go to the database, not the folder.
    let dir = TempDir::new("live-pg-a");
    let server = Server::start(expect(Specialist::Refunds), plan());
    let mut a = args_for(
        &t,
        &server,
        &dir,
        "Can I get my shipping fee back as credit?",
    );
    a.extend(["--database-url".to_owned(), url.clone()]);
    let run = live(&a, Some(KEY));
    assert_eq!(server.finish().violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert!(
        run.out.ends_with(
            "audit log: the database's toolgate_audit (3 lines appended, one per tool_use)\n\
             session summaries: the database's toolgate_audit (1 line appended, one per session)\n"
        ),
        "{}",
        run.out
    );
    assert!(!run.out.contains("live-secret"));
    assert!(!dir.path().join("audit_log.jsonl").exists());
    assert_eq!(lines(""), 3);
    // Worker B gets the same conversation again (a retry after a crash, on another machine):
    // the model's tool_use ids are answered from the database, nothing runs again.
    let dir_b = TempDir::new("live-pg-b");
    let server = Server::start(expect(Specialist::Refunds), plan());
    let mut b = args_for(
        &t,
        &server,
        &dir_b,
        "Can I get my shipping fee back as credit?",
    );
    b.extend(["--database-url".to_owned(), url.clone()]);
    let run = live(&b, Some(KEY));
    assert_eq!(server.finish().violations, Vec::<String>::new());
    assert_eq!((run.code, run.err.as_str()), (0, ""));
    assert_eq!(
        run.out.matches("replayed: answered earlier").count(),
        3,
        "{}",
        run.out
    );
    assert_eq!(
        (
            lines(""),
            lines("AND convert_from(line, 'UTF8')::jsonb ? 'replay'")
        ),
        (6, 3)
    );
}
