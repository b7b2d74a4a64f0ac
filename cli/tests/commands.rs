//! `toolgate audit verify|stats|tail` and `toolgate completions` on the recorded trail: their
//! exact output, their exit codes, and one clear line for bad input.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Scratch, command, counted, fixture, json_lines, rule_counts, toolgate};
use toolgate_core::audit::{
    AUDIT_LOG_FILE, AuditLog, SESSION_SUMMARIES_FILE, Trail, TrailError, chain_files,
    verify_audit_dir,
};
use toolgate_core::dispatch::sync_caller;
use toolgate_core::{Dispatcher, HookContext, ToolUse};

fn last_hash(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let last = text.lines().last().unwrap();
    Sha256::digest(format!("{last}\n").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn dir_arg(s: &Scratch) -> String {
    s.path().display().to_string()
}

// ---------------------------------------------------------------- verify

#[test]
fn verify_prints_one_line_per_chain_with_its_last_hash_and_exits_0() {
    let dir = fixture();
    let (code, out, err) = toolgate(&["audit", "verify", dir.to_str().unwrap()]);
    assert_eq!(
        (code, out, err),
        (
            0,
            format!(
                "audit_log.jsonl: ok, 34 lines, last hash {}\nsession_summaries.jsonl: ok, 11 \
                 lines, last hash {}\nkeep the last hashes elsewhere: lines deleted from the end \
                 of a file can only be caught against them\n",
                last_hash(&dir.join("audit_log.jsonl")),
                last_hash(&dir.join("session_summaries.jsonl"))
            ),
            String::new()
        )
    );
}

#[test]
fn verify_names_the_first_edited_line_and_exits_1() {
    let s = Scratch::with_fixture("verify-edited");
    let path = s.path().join("audit_log.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    // Line 4's refund turned into another amount: line 5's `prev` no longer matches.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert!(lines[3].contains("\"tool\":\"issue_refund\""));
    lines[3] = lines[3].replacen("\"amount_cents\":", "\"amount_cents\":9", 1);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = toolgate(&["audit", "verify", &dir_arg(&s)]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert_eq!(
        out.lines().next().unwrap(),
        format!(
            "audit_log.jsonl: broken: line 5 does not follow line 4: line 4 was edited, or lines \
             were deleted between them in {}",
            path.display()
        )
    );
    assert!(!out.contains("keep the last hashes"));
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_input_gets_one_clear_line_and_exit_2() {
    let empty = Scratch::new("empty");
    let not_audit = Scratch::new("not-audit");
    std::fs::write(
        not_audit.path().join("audit_log.jsonl"),
        "{\"name\":\"a build log\",\"status\":\"ok\"}\n",
    )
    .unwrap();
    let torn = Scratch::with_fixture("torn");
    let torn_log = torn.path().join("audit_log.jsonl");
    let mut text = std::fs::read(&torn_log).unwrap();
    text.extend_from_slice(b"{\"ts\":\"2026-11-30T10:00:00Z\",\"session_id\":\"s");
    std::fs::write(&torn_log, text).unwrap();
    let fixture_file = fixture().join("audit_log.jsonl");

    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["/no/such/folder".into()],
            "toolgate: error: `/no/such/folder` does not exist\n".into(),
        ),
        (
            vec![fixture_file.display().to_string()],
            format!(
                "toolgate: error: `{}` is a file, not an audit folder: give the folder that holds \
                 it (`{}`)\n",
                fixture_file.display(),
                fixture().display()
            ),
        ),
        (
            vec![dir_arg(&empty)],
            format!(
                "toolgate: error: `{}` holds no audit files (audit_log.jsonl, \
                 session_summaries.jsonl): is it the audit folder?\n",
                empty.path().display()
            ),
        ),
    ];
    for command in ["verify", "report", "tail", "stats"] {
        for (args, want) in &cases {
            let mut argv = vec!["audit", command];
            argv.extend(args.iter().map(String::as_str));
            assert_eq!(
                toolgate(&argv),
                (2, String::new(), want.clone()),
                "{command} {args:?}"
            );
        }
    }
    // A file that is not an audit log, and a line cut short, for the commands that read lines
    // (`verify` reads them as a chain: both are a broken chain there, exit 1).
    let report = Scratch::new("report-out");
    let out = report.path().join("r.html");
    for command in ["report", "tail", "stats"] {
        for (dir, want) in [
            (
                dir_arg(&not_audit),
                format!(
                    "toolgate: error: `{}` line 1: not an audit line: no string `ts`\n",
                    not_audit.path().join("audit_log.jsonl").display()
                ),
            ),
            (
                dir_arg(&torn),
                format!(
                    "toolgate: error: `{}` line 35 is cut short (no newline at the end of the \
                     file): a write was interrupted\n",
                    torn_log.display()
                ),
            ),
        ] {
            let mut argv = vec!["audit", command, &dir];
            if command == "report" {
                argv.extend(["-o", out.to_str().unwrap()]);
            }
            assert_eq!(toolgate(&argv), (2, String::new(), want), "{command} {dir}");
        }
    }
    assert!(!out.exists(), "nothing written on bad input");
    let (code, out, _) = toolgate(&["audit", "verify", &dir_arg(&torn)]);
    assert_eq!(code, 1);
    assert!(out.contains("audit_log.jsonl: broken: "), "{out}");
}

#[test]
fn usage_errors_exit_2_and_help_exits_0_with_an_example() {
    let (code, out, err) = toolgate(&["audit", "tail", "--lines", "many", "x"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.starts_with("error: invalid value 'many' for '--lines <N>'"),
        "{err}"
    );
    let (code, _, err) = toolgate(&["audit", "verfy", "x"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("tip: a similar subcommand exists: 'verify'"),
        "{err}"
    );
    for cmd in [
        vec!["--help"],
        vec!["audit", "--help"],
        vec!["audit", "verify", "--help"],
        vec!["audit", "report", "--help"],
        vec!["audit", "tail", "--help"],
        vec!["audit", "stats", "--help"],
        vec!["completions", "--help"],
    ] {
        let (code, out, err) = toolgate(&cmd);
        assert_eq!((code, err.as_str()), (0, ""), "{cmd:?}");
        assert!(out.contains("Example"), "{cmd:?}: {out}");
        if cmd.len() > 1 && cmd[0] == "audit" && cmd[1] != "--help" {
            assert!(out.contains("Exit codes:\n  0  done"), "{cmd:?}");
        }
    }
    let (code, out, _) = toolgate(&["--version"]);
    assert_eq!(
        (code, out),
        (0, format!("toolgate {}\n", env!("CARGO_PKG_VERSION")))
    );
}

#[test]
fn completions_are_scripts_for_each_shell() {
    for (shell, marker, follow) in [
        ("bash", "complete -F _toolgate", "--follow"),
        ("zsh", "#compdef toolgate", "--follow"),
        ("fish", "complete -c toolgate", "-l follow"),
        ("powershell", "Register-ArgumentCompleter", "--follow"),
        (
            "elvish",
            "edit:completion:arg-completer[toolgate]",
            "--follow",
        ),
    ] {
        let (code, out, err) = toolgate(&["completions", shell]);
        assert_eq!((code, err.as_str()), (0, ""), "{shell}");
        assert!(out.contains(marker), "{shell}");
        assert!(out.contains("verify") && out.contains(follow), "{shell}");
    }
}

// ---------------------------------------------------------------- stats

#[test]
fn stats_json_is_the_logs_own_counts() {
    let lines = json_lines(&fixture().join("audit_log.jsonl"));
    let summaries = json_lines(&fixture().join("session_summaries.jsonl"));
    let kept = counted(&lines);
    let mut outcomes = BTreeMap::<String, u64>::new();
    let mut tools = BTreeMap::<String, [u64; 2]>::new();
    let mut users = BTreeMap::<String, (Value, [u64; 3])>::new();
    // The calls that waited: an `awaiting_approval` line, or a decision on the final line.
    let paused: Vec<(&Value, &Value)> = lines
        .iter()
        .filter(|l| l["outcome"] == "awaiting_approval")
        .map(|l| (&l["session_id"], &l["tool_use_id"]))
        .collect();
    for l in &kept {
        *outcomes
            .entry(l["outcome"].as_str().unwrap().into())
            .or_default() += 1;
        let blocked = u64::from(l["outcome"] == "blocked");
        let t = tools.entry(l["tool"].as_str().unwrap().into()).or_default();
        t[0] += 1;
        t[1] += blocked;
        let waited = paused.contains(&(&l["session_id"], &l["tool_use_id"]))
            || l.get("approved_by").is_some()
            || l.get("denied_by").is_some();
        let u = users
            .entry(l["user_id"].as_str().unwrap().into())
            .or_default();
        if let Some(tier) = l.get("tier") {
            u.0 = tier.clone();
        }
        u.1[0] += 1;
        u.1[1] += blocked;
        u.1[2] += u64::from(waited);
    }
    let rules: serde_json::Map<String, Value> = rule_counts(&kept)
        .into_iter()
        .map(|(k, r)| {
            let v = json!({"runs": r[0], "denials": r[1], "asks": r[2], "rewrites": r[3],
                "failures": r[4]});
            (k, v)
        })
        .collect();
    let want = json!({
        "calls": kept.len(),
        "sessions": summaries.len(),
        "left_out": lines.len() - kept.len(),
        "outcomes": outcomes,
        "rules": rules,
        "tools": tools.into_iter().map(|(k, t)| (k, json!({"calls": t[0], "blocked": t[1]})))
            .collect::<serde_json::Map<_, _>>(),
        "users": users.into_iter().map(|(k, (tier, u))| {
            (k, json!({"tier": tier, "calls": u[0], "blocked": u[1], "waited": u[2]}))
        }).collect::<serde_json::Map<_, _>>(),
    });
    let (code, out, err) = toolgate(&["audit", "stats", fixture().to_str().unwrap(), "--json"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.ends_with("}\n") && out.lines().count() == 1);
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown, want);
    // The same, in order: members as documented.
    assert_eq!(
        shown.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "calls", "sessions", "left_out", "outcomes", "rules", "tools", "users"
        ]
    );
}

#[test]
fn stats_text_is_aligned_tables_and_escapes_control_characters() {
    let (code, out, err) = toolgate(&["audit", "stats", fixture().to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "\
28 calls in 11 sessions, 6 lines left out (replayed or not final)

outcome        calls
blocked            6
hook_failed        1
invalid_input      1
ok                17
tool_error         1
unknown_tool       2

rule                                                runs  denials  asks  rewrites  failures
support_agent::policy::large_refund_needs_approval     8        2     1         0         0
support_agent::policy::no_case_files_during_deploy     4        1     0         0         0
support_agent::policy::own_records_only               18        1     0         0         0
support_agent::policy::premium_only                   11        1     0         0         0
support_agent::policy::weekly_refund_limit             6        1     0         0         0
ops::policy_store                                      1        0     0         0         1
support_agent::policy::cap_faq_limit                   2        0     0         1         0

tool                      calls  blocked
\\u{1b}[2J\\u{1b}[31mrm_rf      1        0
create_jira_ticket            1        0
get_order_details             5        0
issue_refund                  9        3
lookup_user                   5        1
prepare_case_file             5        2
search_faq                    2        0

user   tier     calls  blocked  waited
u_001  premium     11        1       1
u_004  free         4        1       0
u_007  premium     13        4       2
"
    );
    assert!(!out.contains('\x1b'));
}

#[test]
fn stats_filters_count_the_matching_calls_and_their_sessions_only() {
    let (code, out, err) = toolgate(&[
        "audit",
        "stats",
        fixture().to_str().unwrap(),
        "--tool",
        "issue_refund",
        "--user",
        "u_007",
        "--json",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let v: Value = serde_json::from_str(&out).unwrap();
    let lines = json_lines(&fixture().join("audit_log.jsonl"));
    let mine: Vec<&Value> = counted(&lines)
        .into_iter()
        .filter(|l| l["tool"] == "issue_refund" && l["user_id"] == "u_007")
        .collect();
    let mut sessions: Vec<&str> = mine
        .iter()
        .map(|l| l["session_id"].as_str().unwrap())
        .collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(v["calls"], json!(mine.len()));
    assert_eq!(v["sessions"], json!(sessions.len()));
    assert_eq!(v["tools"].as_object().unwrap().len(), 1);
    assert_eq!(
        v["users"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["u_007"]
    );
    // The two paused lines of u_007's refunds are left out; the unknown outcome is not seen.
    assert_eq!(v["left_out"], json!(2));
}

// ---------------------------------------------------------------- tail

#[test]
fn tail_shows_the_last_lines_one_readable_line_each() {
    let (code, out, err) = toolgate(&["audit", "tail", fixture().to_str().unwrap(), "-n", "5"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let last: Vec<String> = std::fs::read_to_string(fixture().join("audit_log.jsonl"))
        .unwrap()
        .lines()
        .rev()
        .take(5)
        .map(str::to_owned)
        .collect();
    assert_eq!(
        out,
        format!(
            "\
2026-11-28T09:00:00Z hook_failed       lookup_user  user u_001 (premium)  2.1 ms  rule ops::policy_store  session sess_halt_11
2026-11-28T09:00:01Z hook_failed       lookup_user  user u_001 (premium)  3 µs  rule ops::policy_store  session sess_halt_11  (replay)
{}
2026-11-28T09:06:00Z unknown_tool      \\u{{1b}}[2J\\u{{1b}}[31mrm_rf  user u_004 (free)  12 µs  session sess_future_12
2026-11-29T08:00:00Z blocked           issue_refund  user u_007 (premium)  410 µs  rule support_agent::policy::large_refund_needs_approval  session sess_expired_09
",
            // The outcome this build does not know: the line as written.
            last[2]
        )
    );
}

#[test]
fn tail_filters_and_json_print_the_matching_lines_as_written() {
    let dir = fixture();
    let all = std::fs::read_to_string(dir.join("audit_log.jsonl")).unwrap();
    let (code, out, err) = toolgate(&[
        "audit",
        "tail",
        dir.to_str().unwrap(),
        "--outcome",
        "blocked",
        "--user",
        "u_007",
        "--json",
        "-n",
        "100",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let want: String = all
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["outcome"] == "blocked" && v["user_id"] == "u_007"
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(want.lines().count(), 4);
    assert_eq!(out, want);
    // Session and tool filters, text lines.
    let (_, out, _) = toolgate(&[
        "audit",
        "tail",
        dir.to_str().unwrap(),
        "--session",
        "sess_deny_07",
        "--tool",
        "issue_refund",
    ]);
    assert_eq!(
        out,
        "\
2026-11-25T11:00:00Z awaiting_approval issue_refund  user u_007 (premium)  127 µs  asked by support_agent::policy::large_refund_needs_approval  session sess_deny_07
2026-11-25T11:03:05.5Z blocked           issue_refund  user u_007 (premium)  18 µs  rule support_agent::policy::large_refund_needs_approval  declined by lead@shop.example  session sess_deny_07
"
    );
}

#[test]
fn tail_colours_the_outcome_only_when_asked_or_on_a_terminal() {
    let dir = fixture();
    let args = |colour: &'static str| {
        vec![
            "audit".to_owned(),
            "tail".to_owned(),
            dir.display().to_string(),
            "-n".to_owned(),
            "2".to_owned(),
            "--color".to_owned(),
            colour.to_owned(),
        ]
    };
    let run = |a: Vec<String>| toolgate(&a.iter().map(String::as_str).collect::<Vec<_>>()).1;
    let always = run(args("always"));
    // An unknown tool has no colour of its own; the hostile name stays escaped.
    assert_eq!(
        always.lines().next().unwrap(),
        "2026-11-28T09:06:00Z unknown_tool      \\u{1b}[2J\\u{1b}[31mrm_rf  user u_004 (free)  \
         12 µs  session sess_future_12"
    );
    assert!(always.contains("\x1b[33mblocked\x1b[0m           issue_refund"));
    // A pipe is not a terminal: `auto` writes no colour; `never` neither.
    let auto = run(args("auto"));
    let never = run(args("never"));
    assert_eq!(auto, never);
    assert!(!auto.contains('\x1b'));
    assert_eq!(auto, always.replace("\x1b[33m", "").replace("\x1b[0m", ""));
}

/// Reads lines from a child's standard output on a thread, so a test can wait for one with a
/// deadline.
fn lines_of(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn next_line(rx: &std::sync::mpsc::Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("tail --follow printed the line within 20 s")
}

/// An audit line of `tool` at `ts` (outside any chain: `tail` does not check it).
fn line(ts: &str, tool: &str) -> String {
    format!(
        "{{\"ts\":\"{ts}\",\"session_id\":\"s_f\",\"user_id\":\"u_f\",\"tool_use_id\":\"t_{tool}\",\
         \"tool\":\"{tool}\",\"input\":{{}},\"outcome\":\"ok\",\"is_error\":false,\"content\":\"\",\
         \"duration_us\":5}}\n"
    )
}

#[test]
fn tail_follow_shows_appended_lines_a_line_written_in_two_parts_and_the_file_after_a_rotation() {
    let s = Scratch::new("follow");
    let log = s.path().join("audit_log.jsonl");
    std::fs::write(&log, line("2026-12-01T10:00:00Z", "first")).unwrap();
    let mut child = command(&["audit", "tail", &dir_arg(&s), "--follow", "-n", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    let shown = |tool: &str, ts: &str| {
        format!("{ts} ok                {tool}  user u_f  5 µs  session s_f")
    };
    assert_eq!(next_line(&rx), shown("first", "2026-12-01T10:00:00Z"));

    let append = |text: &str| {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    append(&line("2026-12-01T10:00:01Z", "second"));
    assert_eq!(next_line(&rx), shown("second", "2026-12-01T10:00:01Z"));
    // Half a line, a pause longer than the poll, then the rest: one line, shown once whole.
    let third = line("2026-12-01T10:00:02Z", "third");
    append(&third[..40]);
    std::thread::sleep(Duration::from_millis(600));
    append(&third[40..]);
    assert_eq!(next_line(&rx), shown("third", "2026-12-01T10:00:02Z"));
    // Rotation by rename: a last line in the old file, then a new file under the old name.
    append(&line("2026-12-01T10:00:03Z", "last_before_rotation"));
    std::fs::rename(&log, s.path().join("audit_log.1.jsonl")).unwrap();
    std::fs::write(&log, line("2026-12-01T10:00:04Z", "in_the_new_file")).unwrap();
    assert_eq!(
        next_line(&rx),
        shown("last_before_rotation", "2026-12-01T10:00:03Z")
    );
    assert_eq!(
        next_line(&rx),
        shown("in_the_new_file", "2026-12-01T10:00:04Z")
    );
    append(&line("2026-12-01T10:00:05Z", "after"));
    assert_eq!(next_line(&rx), shown("after", "2026-12-01T10:00:05Z"));
    // Nothing else came, and the command is still following.
    assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

// ---------------------------------------------------------------- the chain's files

/// A dispatcher whose one tool, `echo`, answers its input's `n`, writing to `log`.
fn echo_dispatcher(log: AuditLog) -> Dispatcher {
    let echo = sync_caller(
        vec![
            json!({"name": "echo", "description": "Echoes n.", "input_schema": {
            "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}),
        ],
        |_context, call| Ok(call.input["n"].to_string()),
    );
    Dispatcher::builder()
        .wrap(echo)
        .audit_log(log)
        .build()
        .unwrap()
}

/// Calls `echo` with `n` in a session `s_rot` of its own: one audit line, `toolu_{n}`, and the
/// session's summary line when it is dropped.
fn echo(d: &Dispatcher, n: i64) {
    let session = d.session(HookContext::builder("u_rot", "s_rot").build());
    let answer = toolgate_core::block_on(session.call(&ToolUse::new(
        format!("toolu_{n}"),
        "echo",
        json!({"n": n}),
    )))
    .unwrap();
    assert_eq!(answer.content_text(), n.to_string());
}

/// The `tool_use_id`s of the JSON lines `tail --json` printed.
fn ids(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool_use_id"].to_string())
        .collect()
}

#[test]
fn audit_log_01_and_plus_1_are_no_part_of_the_chain_for_the_writer_the_verifier_the_trail_and_tail_follow()
 {
    // Two names a lenient number parser reads as rotated file 1, each with a line (an ok call of
    // its own, first in its file) that would join the trail if either were read as part of it.
    let s = Scratch::new("stray-rotations");
    let strays = ["audit_log.01.jsonl", "audit_log.+1.jsonl"];
    for name in strays {
        let stray = format!(
            "{{\"ts\":\"2026-11-24T09:00:00Z\",\"session_id\":\"s_stray\",\"user_id\":\"u_stray\",\
             \"tool_use_id\":\"toolu_{name}\",\"tool\":\"echo\",\"input\":{{\"n\":0}},\
             \"outcome\":\"ok\",\"is_error\":false,\"content\":\"0\",\"duration_us\":1,\
             \"prev\":\"{}\"}}\n",
            "0".repeat(64)
        );
        std::fs::write(s.path().join(name), stray).unwrap();
    }
    // The writer: two calls (two sessions, each with its summary line), a rotation, a third.
    let log = AuditLog::open(s.path()).unwrap();
    let d = echo_dispatcher(log.clone());
    echo(&d, 1);
    echo(&d, 2);
    let rotated = s.path().join("audit_log.1.jsonl");
    let summaries = [
        s.path().join("session_summaries.1.jsonl"),
        s.path().join(SESSION_SUMMARIES_FILE),
    ];
    assert_eq!(
        log.rotate().unwrap(),
        vec![rotated.clone(), summaries[0].clone()]
    );
    echo(&d, 3);
    let live = s.path().join(AUDIT_LOG_FILE);
    let first_of_live: Value = serde_json::from_str(
        std::fs::read_to_string(&live)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first_of_live["prev"], json!(last_hash(&rotated)));

    // The one rule, and every reader of it.
    assert_eq!(
        chain_files(s.path(), AUDIT_LOG_FILE).unwrap(),
        vec![rotated.clone(), live.clone()]
    );
    let verified = verify_audit_dir(s.path()).unwrap();
    assert_eq!(verified.calls.files, vec![rotated.clone(), live.clone()]);
    assert_eq!(
        verified.calls.status.to_string(),
        format!("ok, 3 lines, last hash {}", last_hash(&live))
    );
    let trail = Trail::read_dir(s.path()).unwrap();
    assert_eq!(
        trail.files,
        [&[rotated.clone(), live.clone()][..], &summaries[..]].concat()
    );
    let read: Vec<&str> = trail.calls.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(read, ["toolu_1", "toolu_2", "toolu_3"]);

    let mut child = command(&["audit", "tail", &dir_arg(&s), "-f", "-n", "100", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    let shown: Vec<String> = (0..3).map(|_| next_line(&rx)).collect();
    assert_eq!(ids(&shown), ["\"toolu_1\"", "\"toolu_2\"", "\"toolu_3\""]);
    // Followed through a second rotation: the writer's next file is audit_log.2.jsonl.
    assert_eq!(
        log.rotate().unwrap(),
        vec![
            s.path().join("audit_log.2.jsonl"),
            s.path().join("session_summaries.2.jsonl")
        ]
    );
    echo(&d, 4);
    assert_eq!(ids(&[next_line(&rx)]), ["\"toolu_4\""]);
    assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
    child.kill().unwrap();
    child.wait().unwrap();
    // The stray files are as they were: nothing read them as the chain's, nothing wrote them.
    for name in strays {
        assert_eq!(
            std::fs::read_to_string(s.path().join(name))
                .unwrap()
                .lines()
                .count(),
            1
        );
    }
}

#[test]
fn a_folder_that_cannot_be_listed_is_an_error_not_an_empty_trail() {
    // Made unreadable in ways that hold for root too (a mode-000 folder does not): a path that
    // is a file, a dangling symlink, and a folder whose live file is a dangling symlink.
    let s = Scratch::with_fixture("unlistable");
    let file = s.path().join(AUDIT_LOG_FILE);
    let dangling = s.path().join("gone");
    std::os::unix::fs::symlink(s.path().join("nowhere"), &dangling).unwrap();
    for (path, kind) in [
        (&file, std::io::ErrorKind::NotADirectory),
        (&dangling, std::io::ErrorKind::NotFound),
    ] {
        let e = chain_files(path, AUDIT_LOG_FILE).unwrap_err();
        assert_eq!(e.kind(), kind, "{}", path.display());
        assert!(matches!(Trail::read_dir(path), Err(TrailError::NotAFolder(p)) if p == *path));
        assert_eq!(
            verify_audit_dir(path).unwrap_err().kind(),
            std::io::ErrorKind::NotADirectory
        );
    }
    let (code, out, err) = toolgate(&["audit", "tail", dangling.to_str().unwrap()]);
    assert_eq!(
        (code, out.as_str(), err),
        (
            2,
            "",
            format!("toolgate: error: `{}` does not exist\n", dangling.display())
        )
    );

    // The live file a dangling symlink beside a rotated file: the chain names it, and every
    // reader says it cannot be read.
    let folder = Scratch::new("dangling-live");
    std::fs::copy(&file, folder.path().join("audit_log.1.jsonl")).unwrap();
    let live = folder.path().join(AUDIT_LOG_FILE);
    std::os::unix::fs::symlink(folder.path().join("nowhere"), &live).unwrap();
    assert_eq!(
        chain_files(folder.path(), AUDIT_LOG_FILE).unwrap(),
        vec![folder.path().join("audit_log.1.jsonl"), live.clone()]
    );
    let sentence = format!(
        "cannot read `{}`: No such file or directory (os error 2)",
        live.display()
    );
    assert_eq!(
        verify_audit_dir(folder.path()).unwrap_err().to_string(),
        sentence
    );
    assert_eq!(
        Trail::read_dir(folder.path()).unwrap_err().to_string(),
        sentence
    );
    for command in ["verify", "tail", "stats", "report"] {
        let (code, out, err) = toolgate(
            &["audit", command, &dir_arg(&folder), "-o", "-"]
                [..if command == "report" { 5 } else { 3 }],
        );
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (2, "", format!("toolgate: error: {sentence}\n").as_str()),
            "{command}"
        );
    }
}

// ---------------------------------------------------------------- text from the model

/// Every character that ends a line for one reader or another, and an ANSI escape sequence.
const HOSTILE: &str = "a\rb\nc\r\nd\u{85}e\u{2028}f\u{2029}g\u{1b}[31mred\u{1b}[0m";
/// [`HOSTILE`] as a person is shown it, written out by hand.
const SHOWN: &str = r"a\u{d}b\u{a}c\u{d}\u{a}d\u{85}e\u{2028}f\u{2029}g\u{1b}[31mred\u{1b}[0m";

/// `text` holds no character that ends a line but `\n`, and no ESC.
fn assert_no_raw(what: &str, text: &str) {
    for c in [
        '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}', '\u{1b}',
    ] {
        assert!(!text.contains(c), "{what}: {c:?} raw in {text:?}");
    }
}

/// A folder whose audit file holds `records`, chained, each written by serde_json as a toolgate
/// before the line's escapes wrote them (U+0085, U+2028 and U+2029 raw).
fn trail_of(name: &str, records: &[Value]) -> Scratch {
    let s = Scratch::new(name);
    let mut prev = "0".repeat(64);
    let mut text = String::new();
    for record in records {
        let object = serde_json::to_string(record).unwrap();
        let line = format!(
            "{},\"prev\":\"{prev}\"}}\n",
            object.strip_suffix('}').unwrap()
        );
        prev = Sha256::digest(line.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        text.push_str(&line);
    }
    assert!(text.contains('\u{2028}'));
    std::fs::write(s.path().join("audit_log.jsonl"), text).unwrap();
    s
}

fn hostile_records() -> Vec<Value> {
    let line = |ts: &str, tool: String, outcome: &str, more: Value| {
        let mut v = json!({
            "ts": ts, "session_id": "sess_h", "user_id": "u_1", "tool_use_id": "toolu_h",
            "tool": tool, "input": {"q": HOSTILE, HOSTILE: 1}, "outcome": outcome,
            "is_error": outcome != "ok", "content": format!("BLOCKED: {HOSTILE}"),
            "duration_us": 12
        });
        v.as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        v
    };
    vec![
        line(
            "2026-11-24T10:00:00Z",
            format!("look{HOSTILE}up"),
            "unknown_tool",
            json!({}),
        ),
        line(
            "2026-11-24T10:00:01Z",
            "note".into(),
            "blocked",
            json!({"blocked_by": format!("policy{HOSTILE}"),
                   "hooks": [{"hook": format!("policy{HOSTILE}"), "decision": "deny",
                              "duration_us": 3}]}),
        ),
        // An outcome this build does not know: tail prints the line itself.
        line(
            "2026-11-24T10:00:02Z",
            format!("note{HOSTILE}"),
            "escalated",
            json!({}),
        ),
        line(
            "2026-11-24T10:00:03Z",
            "note".into(),
            "ok",
            json!({"user_id": format!("u{HOSTILE}"), "tier": HOSTILE,
                   "approved_by": format!("lead{HOSTILE}")}),
        ),
    ]
}

#[test]
fn tail_stats_report_and_errors_print_model_text_with_no_raw_line_break_or_escape() {
    let records = hostile_records();
    let s = trail_of("hostile", &records);
    let dir = dir_arg(&s);
    // The chain of lines written before the escapes verifies.
    let (code, _, err) = toolgate(&["audit", "verify", &dir]);
    assert_eq!((code, err.as_str()), (0, ""));

    let (code, out, err) = toolgate(&["audit", "tail", &dir, "-n", "100"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_no_raw("tail", &out);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(
        lines[0],
        format!(
            "2026-11-24T10:00:00Z unknown_tool      look{SHOWN}up  user u_1  12 µs  session sess_h"
        )
    );
    assert_eq!(
        lines[1],
        format!(
            "2026-11-24T10:00:01Z blocked           note  user u_1  12 µs  rule policy{SHOWN}  session sess_h"
        )
    );
    // The unknown outcome's line: its JSON, the same value, escaped.
    assert_eq!(
        serde_json::from_str::<Value>(lines[2]).unwrap()["tool"],
        format!("note{HOSTILE}")
    );
    assert!(
        lines[2]
            .contains(r#""tool":"notea\rb\nc\r\nd\u0085e\u2028f\u2029g\u001b[31mred\u001b[0m""#),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        format!(
            "2026-11-24T10:00:03Z ok                note  user u{SHOWN} ({SHOWN})  12 µs  approved by lead{SHOWN}  session sess_h"
        )
    );

    // --json: each line the file's value, on one line, escaped.
    let (code, out, err) = toolgate(&["audit", "tail", &dir, "-n", "100", "--json"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_no_raw("tail --json", &out);
    let read: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(read, json_lines(&s.path().join("audit_log.jsonl")));

    let (code, out, err) = toolgate(&["audit", "stats", &dir]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_no_raw("stats", &out);
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("look{SHOWN}up  "))),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("policy{SHOWN}  "))),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("u{SHOWN}  {SHOWN}  "))),
        "{out}"
    );

    let (code, out, err) = toolgate(&["audit", "stats", &dir, "--json"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_no_raw("stats --json", &out);
    assert_eq!(out.lines().count(), 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tools"][format!("look{HOSTILE}up")]["calls"], 1);
    assert_eq!(v["users"][format!("u{HOSTILE}")]["tier"], HOSTILE);

    let (code, page, err) = toolgate(&["audit", "report", &dir, "-o", "-"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_no_raw("report", &page);
    assert!(page.contains(&format!("look{SHOWN}up")));

    // An error quoting a line's text: one line, escaped.
    let mut bad = records[1].clone();
    bad["hooks"][0]["decision"] = json!(format!("de{HOSTILE}ny"));
    let s = trail_of("hostile-error", &[bad]);
    let (code, out, err) = toolgate(&["audit", "tail", &dir_arg(&s)]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_no_raw("tail's error", &err);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "toolgate: error: `{}` line 1: not an audit line: unknown variant `de{SHOWN}ny`",
            s.path().join("audit_log.jsonl").display()
        )),
        "{err}"
    );
}

/// A call a person declined: `tail` names the hook that only asked and the person who declined,
/// never the hook as the one that blocked it (its line has no `blocked_by`).
#[test]
fn tail_names_the_hook_that_asked_and_the_person_who_declined() {
    let s = Scratch::new("declined");
    let asked = json!([{"hook": "app::large_refund", "reason": "refunds above 20000 cents"}]);
    let line = |ts: &str, outcome: &str, more: Value| {
        let mut v = json!({
            "ts": ts, "session_id": "sess_ask", "user_id": "u_001", "tool_use_id": "toolu_2",
            "tool": "refund", "input": {"order_id": "o_1", "amount_cents": 25000},
            "outcome": outcome, "is_error": outcome != "awaiting_approval", "content": "",
            "duration_us": 0, "asked_by": asked
        });
        v.as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        v
    };
    let records = [
        line(
            "2026-11-24T10:15:00Z",
            "awaiting_approval",
            json!({"final": false}),
        ),
        line(
            "2026-11-24T10:16:00Z",
            "blocked",
            json!({"denied_by": "lead@example.com"}),
        ),
    ];
    let mut prev = "0".repeat(64);
    let mut text = String::new();
    for record in &records {
        let object = serde_json::to_string(record).unwrap();
        let line = format!(
            "{},\"prev\":\"{prev}\"}}\n",
            object.strip_suffix('}').unwrap()
        );
        prev = Sha256::digest(line.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        text.push_str(&line);
    }
    std::fs::write(s.path().join("audit_log.jsonl"), text).unwrap();
    let (code, out, err) = toolgate(&["audit", "tail", &dir_arg(&s)]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            0,
            "2026-11-24T10:15:00Z awaiting_approval refund  user u_001  0 µs  asked by \
             app::large_refund  session sess_ask\n\
             2026-11-24T10:16:00Z blocked           refund  user u_001  0 µs  asked by \
             app::large_refund  declined by lead@example.com  session sess_ask\n",
            ""
        )
    );
}
