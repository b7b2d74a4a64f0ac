//! `toolgate audit … postgres://…`: a fleet's database as the source, on the throwaway
//! PostgreSQL server of the root package's tests (or `TOOLGATE_TEST_DATABASE_URL`). The
//! recorded trail's lines go into `toolgate_audit` as they are (the database's chain rule is
//! the files' rule), so every command must say of the database what it says of the folder.

mod support;

use support::{Scratch, fixture, toolgate};
use toolgate_core::store::postgres::PostgresStore;
use toolgate_test_support::postgres::{self as server, Sql};

/// A password that must never be printed.
const SECRET: &str = "s3cret-pw";

/// A migrated database holding the recorded trail; its URL (with [`SECRET`]).
fn loaded() -> (server::TestDb, String) {
    let db = server::database();
    drop(PostgresStore::connect(&db.settings).unwrap());
    let sql = Sql::connect(&db.settings);
    for (chain, file) in [
        ("audit_log", "audit_log.jsonl"),
        ("session_summaries", "session_summaries.jsonl"),
    ] {
        let text = std::fs::read_to_string(fixture().join(file)).unwrap();
        for (n, line) in text.lines().enumerate() {
            let quoted = line.replace('\'', "''");
            sql.run(&format!(
                "INSERT INTO toolgate_audit (chain, seq, line, writer_id, writer_n) VALUES \
                 ('{chain}', {}, convert_to('{quoted}', 'UTF8'), 1, {})",
                n + 1,
                n + 1 + if chain == "audit_log" { 0 } else { 1_000 }
            ));
        }
    }
    let url = server::server().url(&db.name, SECRET);
    (db, url)
}

fn last_hash(file: &str) -> String {
    let (_, out, _) = toolgate(&["audit", "verify", fixture().to_str().unwrap()]);
    let line = out.lines().find(|l| l.starts_with(file)).unwrap();
    line.rsplit(' ').next().unwrap().to_owned()
}

#[test]
fn verify_checks_the_chains_in_the_database_and_names_an_edited_row() {
    let (db, url) = loaded();
    let (code, out, err) = toolgate(&["audit", "verify", &url]);
    assert_eq!(
        (code, out, err),
        (
            0,
            format!(
                "audit_log: ok, 34 lines, last hash {}\nsession_summaries: ok, 11 lines, last \
                 hash {}\nkeep the last hashes elsewhere: lines deleted from the end of a file \
                 can only be caught against them\n",
                last_hash("audit_log.jsonl"),
                last_hash("session_summaries.jsonl")
            ),
            String::new()
        )
    );
    // A refund's amount changed in place, as an UPDATE by someone with the rights would.
    Sql::connect(&db.settings).run(
        "UPDATE toolgate_audit SET line = convert_to(replace(convert_from(line, 'UTF8'), \
         '\"amount_cents\":', '\"amount_cents\":9'), 'UTF8') WHERE chain = 'audit_log' AND \
         seq = 4",
    );
    let (code, out, err) = toolgate(&["audit", "verify", &url]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert!(out.starts_with("audit_log: broken: "), "{out}");
    assert!(out.contains("line 5"), "{out}");
    assert!(!out.contains("keep the last hashes"));
}

#[test]
fn stats_tail_and_report_say_of_the_database_what_they_say_of_the_folder() {
    let (_db, url) = loaded();
    let folder = fixture().display().to_string();
    for args in [
        vec!["audit", "stats", "SOURCE", "--json"],
        vec!["audit", "stats", "SOURCE"],
        vec!["audit", "tail", "SOURCE", "-n", "8"],
        vec![
            "audit",
            "tail",
            "SOURCE",
            "--json",
            "--outcome",
            "blocked",
            "-n",
            "100",
        ],
    ] {
        let with = |source: &str| -> Vec<String> {
            args.iter()
                .map(|a| {
                    if *a == "SOURCE" {
                        source.to_owned()
                    } else {
                        (*a).to_owned()
                    }
                })
                .collect()
        };
        let run = |v: Vec<String>| toolgate(&v.iter().map(String::as_str).collect::<Vec<_>>());
        let (from_db, from_folder) = (run(with(&url)), run(with(&folder)));
        assert_eq!(from_db.0, 0, "{args:?}: {}", from_db.2);
        assert_eq!(from_db, from_folder, "{args:?}");
    }
    // The report: the same page but for the source it names, the password hidden.
    let s = Scratch::new("db-report");
    let page = |source: &str, name: &str| {
        let out = s.path().join(name);
        let (code, stdout, err) = toolgate(&[
            "audit",
            "report",
            source,
            "-o",
            out.to_str().unwrap(),
            "--now",
            "2026-11-27T00:00:00Z",
        ]);
        assert_eq!((code, err.as_str()), (0, ""), "{source}");
        assert!(!stdout.contains(SECRET));
        std::fs::read_to_string(out).unwrap()
    };
    let shown = url.replace(SECRET, "***");
    let from_db = page(&url, "db.html");
    assert!(
        from_db.contains(&format!("<code>{shown}</code>")),
        "{shown}"
    );
    assert!(!from_db.contains(SECRET));
    assert_eq!(
        from_db.replace(&shown, "SOURCE"),
        page(&folder, "folder.html").replace(&folder, "SOURCE")
    );
}

#[test]
fn a_database_that_is_not_an_agents_is_named_and_left_as_it_is() {
    let db = server::database();
    let url = server::server().url(&db.name, SECRET);
    for command in ["verify", "stats", "tail", "report"] {
        let (code, out, err) = toolgate(
            &["audit", command, &url, "-o", "/dev/null"][..if command == "report" { 5 } else { 3 }],
        );
        assert_eq!((code, out.as_str()), (2, ""), "{command}");
        assert_eq!(
            err,
            format!(
                "toolgate: error: {}: the store failed: PostgreSQL: the database holds no \
                 toolgate tables (no toolgate_schema): is it the agent's database?\n",
                url.replace(SECRET, "***")
            ),
            "{command}"
        );
    }
    assert_eq!(
        Sql::connect(&db.settings)
            .int("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'toolgate_%'"),
        0
    );
    // Following a database is not offered: one line, exit 2.
    let (code, _, err) = toolgate(&["audit", "tail", &url, "--follow"]);
    assert_eq!(
        (code, err),
        (
            2,
            format!(
                "toolgate: error: {}: --follow reads a folder's live file; a database is shown \
                 as it is now (without --follow)\n",
                url.replace(SECRET, "***")
            )
        )
    );
}
