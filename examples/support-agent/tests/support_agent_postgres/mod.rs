//! The support agent's `--database-url`: workers with their own out-dirs and one database are
//! one agent. Its binary (built with this test's features) runs as separate processes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use toolgate::store::postgres::PostgresStore;

use toolgate_test_support::TempDir;
use toolgate_test_support::postgres::{self as server, Sql};

use crate::{run_toolgate, support_agent_ledger, toolgate_command};

const PAUSED: &str = "08_large_refund_paused.json";
const WAITING_ID: &str = "toolu_01Nq8tEcVr2W9gAy4hDj8QxF";

fn transcript(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("transcripts")
        .join(name)
}

/// Runs the support agent with `args`: (exit code, stdout, stderr).
fn agent(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_support_agent"))
        .args(args)
        .output()
        .expect("the support agent runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn refunds(sql: &Sql) -> i64 {
    sql.int("SELECT count(*) FROM support_agent_ledger")
}

/// The `ok` calls of `tool_use_id` in the database's audit trail, replays left out.
fn paid_lines(sql: &Sql, id: &str) -> i64 {
    sql.int(&format!(
        "SELECT count(*) FROM toolgate_audit WHERE chain = 'audit_log' \
         AND convert_from(line, 'UTF8')::jsonb ->> 'tool_use_id' = '{id}' \
         AND convert_from(line, 'UTF8')::jsonb ->> 'outcome' = 'ok' \
         AND NOT (convert_from(line, 'UTF8')::jsonb ? 'replay')"
    ))
}

#[test]
fn two_workers_on_one_database_replay_every_transcript_and_pay_each_refund_once() {
    let db = server::database();
    let url = server::server().url(&db.name, "worker-secret");
    let sql = Sql::connect(&db.settings);
    let (a, b) = (TempDir::new("pg-worker-a"), TempDir::new("pg-worker-b"));
    let run = |dir: &TempDir| {
        let (url, dir) = (url.clone(), dir.path().to_owned());
        std::thread::spawn(move || {
            agent(&[
                "--out-dir".as_ref(),
                dir.as_os_str(),
                "--database-url".as_ref(),
                url.as_ref(),
            ])
        })
    };
    // Both at once: each call is claimed by one worker. The other gets its answer when it was
    // kept already, an error while it is still running ("still being answered by an earlier
    // attempt"), or a pause of its own for a call the first worker paused and resumed; and the
    // weekly limit may refuse another refund than in a lone run (the ledger checks the limit
    // again where it records, in whatever order the two workers' refunds land). The replay
    // counts those as mismatches (exit 1); nothing else may be printed on standard error.
    let (first, second) = (run(&a), run(&b));
    let mut clean = true;
    for (code, out, err) in [first.join().unwrap(), second.join().unwrap()] {
        assert!(code == 0 || code == 1, "{code}: {err}");
        assert_eq!(code == 0, err.is_empty());
        clean &= code == 0;
        for line in err.lines() {
            assert!(line.starts_with("mismatch: "), "{line}\n{out}");
        }
    }
    // What must hold whatever the interleaving: every call has one final answer, every paid
    // refund one `ok` line and every `ok` refund one ledger row, no customer's week past the
    // limit and no order past what was paid, every refund its own id.
    let answers = "SELECT convert_from(line, 'UTF8')::jsonb AS j FROM toolgate_audit \
                   WHERE chain = 'audit_log'";
    let final_once = sql.int(&format!(
        "SELECT COALESCE(MAX(n), 0) FROM (SELECT count(*) AS n FROM ({answers}) lines \
         WHERE COALESCE(j ->> 'final', 'true') <> 'false' AND NOT (j ? 'replay') \
         GROUP BY j ->> 'session_id', j ->> 'tool_use_id') calls"
    ));
    assert_eq!(final_once, 1, "a call answered twice");
    let ok_refunds = format!(
        "SELECT count(*) FROM ({answers}) lines WHERE j ->> 'tool' = 'issue_refund' \
         AND j ->> 'outcome' = 'ok' AND NOT (j ? 'replay')"
    );
    let paid = refunds(&sql);
    assert_eq!(sql.int(&ok_refunds), paid);
    assert!(paid > 0, "the bundled transcripts pay refunds");
    let most = sql.int(
        "SELECT COALESCE(MAX(total), 0) FROM (SELECT SUM(amount_cents)::bigint AS total \
         FROM support_agent_ledger GROUP BY world, owner, week_year, week) weeks",
    );
    assert!(most <= 50_000, "{most} cents in one week");
    let past_paid = sql.int(
        "SELECT count(*) FROM (SELECT order_id, SUM(amount_cents) AS total \
         FROM support_agent_ledger GROUP BY world, order_id) orders \
         WHERE total > CASE order_id WHEN 'o_1001' THEN 2599 WHEN 'o_1002' THEN 45000 \
         WHEN 'o_3001' THEN 52000 WHEN 'o_3002' THEN 30000 ELSE 0 END",
    );
    assert_eq!(past_paid, 0);
    assert_eq!(
        sql.int("SELECT count(DISTINCT id) FROM support_agent_ledger"),
        paid
    );
    // A lone replay into a fresh database: when neither worker saw a mismatch, the fleet paid
    // exactly its refunds (the same worlds, orders and amounts; the order and the ids may
    // differ).
    let alone = server::database();
    let alone_url = server::server().url(&alone.name, "worker-secret");
    let c = TempDir::new("pg-worker-alone");
    let (code, out, err) = agent(&[
        "--out-dir".as_ref(),
        c.path().as_os_str(),
        "--database-url".as_ref(),
        alone_url.as_ref(),
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    // It ends with the database's trail checked and drawn by the `toolgate` command's code, the
    // URL (and its password) never printed: the verdict is the library's on that database.
    let alone_verdict = toolgate::block_on(
        PostgresStore::connect(&alone.settings)
            .unwrap()
            .audit_sink()
            .verify(None),
    )
    .unwrap();
    let shown = c.path().display();
    assert!(
        out.ends_with(&format!(
            "$ toolgate audit verify DATABASE_URL\n{alone_verdict}\
             $ toolgate audit report DATABASE_URL -o {shown}/report.html --count-tool \
             issue_refund\nreport: {shown}/report.html (25 calls, chain verifies)\n"
        )),
        "{out}"
    );
    assert!(!out.contains("worker-secret"), "{out}");
    assert!(c.path().join("report.html").exists());
    let ledger = "SELECT world, order_id, amount_cents::text FROM support_agent_ledger \
                  ORDER BY world, order_id, amount_cents";
    if clean {
        assert_eq!(sql.rows(ledger), Sql::connect(&alone.settings).rows(ledger));
    }
    // A third worker afterwards replays every answered call: nothing runs, nothing is paid.
    let ran = format!(
        "SELECT count(*) FROM ({answers}) lines \
         WHERE COALESCE(j ->> 'final', 'true') <> 'false' AND NOT (j ? 'replay')"
    );
    let ran_before = sql.int(&ran);
    let (code, out, err) = agent(&[
        "--out-dir".as_ref(),
        c.path().as_os_str(),
        "--database-url".as_ref(),
        url.as_ref(),
    ]);
    assert!(code == 0 || code == 1, "{code}: {err}");
    assert_eq!((refunds(&sql), sql.int(&ran)), (paid, ran_before));
    assert!(
        out.contains("the database's toolgate_audit"),
        "the footer names where the trail is: {out}"
    );
    assert!(!out.contains("worker-secret"), "{out}");
    // The workers wrote no audit files, and their trail is one chain that verifies.
    for dir in [&a, &b] {
        assert!(!dir.path().join("audit_log.jsonl").exists());
        assert!(!dir.path().join("state.sqlite").exists());
    }
    let store = PostgresStore::connect(&db.settings).unwrap();
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");

    // The `toolgate` command checks and draws the same trail from the database.
    let verify = || run_toolgate(&["audit".as_ref(), "verify".as_ref(), url.as_ref()]);
    let (code, out, err) = verify();
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, verdict.to_string().as_str(), "")
    );
    let here = TempDir::new("pg-report");
    std::fs::create_dir_all(here.path()).unwrap();
    let report = Command::new(toolgate_command())
        .args(["audit", "report", &url, "--count-tool", "issue_refund"])
        .current_dir(here.path())
        .output()
        .unwrap();
    // The page counts final lines, replays left out.
    let calls = sql.int(
        "SELECT count(*) FROM toolgate_audit WHERE chain = 'audit_log' \
         AND COALESCE(convert_from(line, 'UTF8')::jsonb ->> 'final', 'true') <> 'false' \
         AND NOT (convert_from(line, 'UTF8')::jsonb ? 'replay')",
    );
    assert_eq!(
        (
            report.status.code(),
            String::from_utf8_lossy(&report.stdout).into_owned(),
            String::from_utf8_lossy(&report.stderr).into_owned()
        ),
        (
            Some(0),
            format!("report: report.html ({calls} calls, chain verifies)\n"),
            String::new()
        )
    );
    let page = std::fs::read_to_string(here.path().join("report.html")).unwrap();
    assert!(page.contains(&toolgate::store::postgres::shown_settings(&url)));
    assert!(!page.contains("worker-secret"));
    // A line edited in the database: the check names it and exits 1.
    sql.run(
        "UPDATE toolgate_audit SET line = convert_to(replace(convert_from(line, 'UTF8'), \
         '\"outcome\":\"ok\"', '\"outcome\":\"blocked\"'), 'UTF8') \
         WHERE chain = 'audit_log' AND seq = 3",
    );
    let broken = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(!broken.is_ok());
    let (code, out, err) = verify();
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (1, broken.to_string().as_str(), "")
    );
    assert!(
        out.starts_with("audit_log: broken: line 4 does not follow line 3: line 3 was edited"),
        "{out}"
    );
}

#[test]
fn a_turn_paused_by_one_worker_is_resumed_once_by_any_other() {
    let db = server::database();
    let url = server::server().url(&db.name, "worker-secret");
    let sql = Sql::connect(&db.settings);
    let (a, b) = (TempDir::new("pg-pause-a"), TempDir::new("pg-pause-b"));
    let with = |dir: &TempDir, args: &[&std::ffi::OsStr]| {
        let mut all: Vec<&std::ffi::OsStr> = args.to_vec();
        all.extend([
            "--out-dir".as_ref(),
            dir.path().as_os_str(),
            "--database-url".as_ref(),
            url.as_ref(),
        ]);
        agent(&all)
    };
    let paused = transcript(PAUSED);
    let (code, _, err) = with(&a, &["--transcript".as_ref(), paused.as_os_str()]);
    assert_eq!((code, err.as_str()), (0, ""));
    let file = a
        .path()
        .join("pending/sess_paused_08/msg_01Be8qNh1CgXrZ5wPu2lTdEe.json");
    assert!(file.exists(), "the paused turn is written for a person");
    assert_eq!(refunds(&sql), 0);
    // Worker B resumes a copy of the file (the file is only the operator's handle: the turn is
    // in the database).
    std::fs::create_dir_all(b.path()).unwrap();
    let copy = b.path().join("copy.json");
    std::fs::copy(&file, &copy).unwrap();
    let resume = |dir: &TempDir, f: &Path| {
        with(
            dir,
            &[
                "--resume".as_ref(),
                f.as_os_str(),
                "--approve".as_ref(),
                WAITING_ID.as_ref(),
            ],
        )
    };
    let (code, _, err) = resume(&b, &copy);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!((refunds(&sql), paid_lines(&sql, WAITING_ID)), (1, 1));
    // Worker A resumes the original: the answer kept then, nothing paid again.
    let (code, out, err) = resume(&a, &file);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(
        out.contains("already resumed: this is the answer kept then; nothing ran again"),
        "{out}"
    );
    assert_eq!((refunds(&sql), paid_lines(&sql, WAITING_ID)), (1, 1));
    // And a replay of the transcript on either worker replays the approved call.
    let (code, _, err) = with(&b, &["--transcript".as_ref(), paused.as_os_str()]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!((refunds(&sql), paid_lines(&sql, WAITING_ID)), (1, 1));
}

#[test]
fn a_database_url_that_is_not_one_or_cannot_be_reached_says_so() {
    let dir = TempDir::new("pg-bad-url");
    let (code, out, err) = agent(&[
        "--out-dir".as_ref(),
        dir.path().as_os_str(),
        "--database-url".as_ref(),
        "mysql://localhost/agent".as_ref(),
    ]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            2,
            "",
            "error: --database-url mysql://localhost/agent: expected a postgres:// or \
             postgresql:// URL (see --help)\n"
        )
    );
    let port = server::free_port().unwrap();
    let url = format!("postgres://toolgate:hidden-pw@127.0.0.1:{port}/nothing");
    let (code, out, err) = agent(&[
        "--out-dir".as_ref(),
        dir.path().as_os_str(),
        "--database-url".as_ref(),
        url.as_ref(),
    ]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("error: --database-url: "), "{err}");
    assert!(
        !err.contains("hidden-pw"),
        "the password is not printed: {err}"
    );
    // An --out-dir that is a file (the paused turns' folder) is named before the database is
    // reached: nothing is made in it.
    std::fs::create_dir_all(dir.path()).unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let db = server::database();
    let url = server::server().url(&db.name, "pw");
    let (code, out, err) = agent(&[
        "--out-dir".as_ref(),
        file.as_os_str(),
        "--database-url".as_ref(),
        url.as_ref(),
    ]);
    assert_eq!(
        (code, out, err),
        (
            1,
            String::new(),
            format!(
                "error: --out-dir: cannot use `{}` as the folder of paused turns: it exists and \
                 is not a folder\n",
                file.display()
            )
        )
    );
    let tables = "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'toolgate%'";
    assert_eq!(Sql::connect(&db.settings).int(tables), 0);
}

// ---------------------------------------------------------------- one customer, many conversations

/// Runs `test` on a fresh database that every worker shares, each worker with its own
/// `--out-dir`.
fn on_one_database(name: &str, test: impl FnOnce(&support_agent_ledger::Store<'_>, &Path)) {
    let db = server::database();
    let url = server::server().url(&db.name, "worker-secret");
    let sql = Sql::connect(&db.settings);
    let dir = TempDir::new(name);
    let args = |worker: usize| -> Vec<OsString> {
        vec![
            "--out-dir".into(),
            dir.path().join(format!("worker-{worker}")).into(),
            "--database-url".into(),
            url.clone().into(),
        ]
    };
    let rows = || {
        sql.rows(
            "SELECT id::text, world, owner, order_id, amount_cents::text \
             FROM support_agent_ledger ORDER BY id",
        )
        .into_iter()
        .map(|r| {
            let text = |i: usize| r[i].clone().unwrap();
            support_agent_ledger::Row {
                id: text(0).parse().unwrap(),
                world: text(1),
                owner: text(2),
                order_id: text(3),
                cents: text(4).parse().unwrap(),
            }
        })
        .collect()
    };
    let store = support_agent_ledger::Store {
        args: &args,
        rows: &rows,
    };
    test(&store, &dir.path().join("transcripts"));
}

#[test]
fn conversations_of_one_customer_one_after_another_on_one_database_share_its_totals() {
    on_one_database(
        "pg-conversations-seq",
        support_agent_ledger::one_after_another,
    );
}

#[test]
fn two_and_three_conversations_of_one_customer_at_once_on_one_database_keep_its_limits() {
    for n in [2, 3] {
        on_one_database(&format!("pg-conversations-at-once-{n}"), |store, dir| {
            support_agent_ledger::all_at_once(store, dir, n);
        });
    }
}

#[test]
fn a_fleet_of_four_workers_on_one_database_pays_each_customer_exactly_what_its_rules_allow() {
    on_one_database(
        "pg-conversations-fleet",
        support_agent_ledger::fleet_of_four,
    );
}
