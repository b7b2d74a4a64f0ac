//! The audit files' hash chain: each line's `prev` is the SHA-256 of the line before it (its
//! `\n` included), recomputed here with the tests' own hashing; it holds across reopening,
//! rotation, torn lines, two logs and two processes on one folder; the verifier names the first
//! line that was edited, deleted, inserted or reordered.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use toolgate::{
    Dispatcher, HookContext, ToolUse,
    audit::{
        AuditLog, CHAIN_START, ChainProblem, ChainStatus, verify_audit_dir, verify_audit_file,
    },
};

use crate::support::{self, TempDir, ZEROS, chained_lines, sha256_hex};

mod tools {
    use toolgate::tool;

    /// Echoes a number.
    #[tool]
    pub(crate) fn echo(
        /// The number.
        n: i64,
    ) -> i64 {
        n
    }
}

fn dispatcher(log: AuditLog) -> Dispatcher {
    Dispatcher::builder()
        .registered_under(format!("{}::tools", module_path!()))
        .audit_log(log)
        .build()
        .unwrap()
}

/// `calls` calls of `echo` in session `session`, then its end (one summary line).
fn session(d: &Dispatcher, session: &str, calls: std::ops::Range<i64>) {
    let s = d.session(HookContext::builder("u_001", session).build());
    for n in calls {
        let r = toolgate::block_on(s.call(&ToolUse::new(
            format!("toolu_{n}"),
            "echo",
            json!({"n": n}),
        )))
        .unwrap();
        assert_eq!(r.content_text(), n.to_string());
    }
    s.end();
}

/// The raw lines of a file, each with its `\n`.
fn raw(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_owned)
        .collect()
}

fn ok(lines: u64, last_hash: impl Into<String>) -> ChainStatus {
    ChainStatus::Ok {
        lines,
        last_hash: last_hash.into(),
    }
}

/// Where a chain broke: (file, line, problem, the sentence the CLI prints).
fn broken(status: ChainStatus) -> (PathBuf, u64, ChainProblem, String) {
    match status {
        ChainStatus::Broken(b) => (b.file.clone(), b.line, b.problem.clone(), b.to_string()),
        other => panic!("the chain verified: {other}"),
    }
}

#[test]
fn a_reopened_file_continues_its_chain_from_its_last_line() {
    let dir = TempDir::new("chain-reopen");
    session(&dispatcher(AuditLog::open(&dir).unwrap()), "sess_1", 0..2);
    session(&dispatcher(AuditLog::open(&dir).unwrap()), "sess_2", 2..3);
    let path = dir.join("audit_log.jsonl");
    let (lines, last) = chained_lines(&path, ZEROS);
    assert_eq!(lines.len(), 3);
    let all = raw(&path);
    assert_eq!(last, sha256_hex(all[2].as_bytes()));
    let (summaries, last_summary) = chained_lines(&dir.join("session_summaries.jsonl"), ZEROS);
    assert_eq!(summaries.len(), 2);
    let verified = verify_audit_dir(&dir).unwrap();
    assert_eq!(verified.calls.files, std::slice::from_ref(&path));
    assert_eq!(verified.calls.status, ok(3, last));
    assert_eq!(verified.sessions.status, ok(2, last_summary));
    assert!(verified.is_ok());
}

#[test]
fn rotation_and_a_rename_carry_the_last_hash_over_to_the_new_file() {
    let dir = TempDir::new("chain-rotate");
    let log = AuditLog::open(&dir).unwrap();
    let d = dispatcher(log.clone());
    session(&d, "sess_a", 0..2);
    assert_eq!(
        log.rotate().unwrap(),
        [
            dir.join("audit_log.1.jsonl"),
            dir.join("session_summaries.1.jsonl")
        ]
    );
    // Nothing to rotate in empty files.
    assert_eq!(log.rotate().unwrap(), Vec::<PathBuf>::new());
    session(&d, "sess_b", 2..3);
    // The host renames the live file (logrotate's default): the writer notices at its next line.
    std::fs::rename(dir.join("audit_log.jsonl"), dir.join("audit_log.2.jsonl")).unwrap();
    session(&d, "sess_c", 3..4);
    drop(d);
    // A new log on the folder after another rotation continues from the newest rotated file.
    assert_eq!(
        log.rotate().unwrap(),
        [
            dir.join("audit_log.3.jsonl"),
            dir.join("session_summaries.2.jsonl")
        ]
    );
    drop(log);
    session(&dispatcher(AuditLog::open(&dir).unwrap()), "sess_d", 4..5);

    let (one, h1) = chained_lines(&dir.join("audit_log.1.jsonl"), ZEROS);
    let (two, h2) = chained_lines(&dir.join("audit_log.2.jsonl"), &h1);
    let (three, h3) = chained_lines(&dir.join("audit_log.3.jsonl"), &h2);
    let (live, h4) = chained_lines(&dir.join("audit_log.jsonl"), &h3);
    assert_eq!(
        [one.len(), two.len(), three.len(), live.len()],
        [2, 1, 1, 1]
    );
    let (s1, sh1) = chained_lines(&dir.join("session_summaries.1.jsonl"), ZEROS);
    let (s2, sh2) = chained_lines(&dir.join("session_summaries.2.jsonl"), &sh1);
    let (s_live, sh3) = chained_lines(&dir.join("session_summaries.jsonl"), &sh2);
    assert_eq!([s1.len(), s2.len(), s_live.len()], [1, 2, 1]);

    let verified = verify_audit_dir(&dir).unwrap();
    assert_eq!(
        verified.calls.files,
        [
            "audit_log.1.jsonl",
            "audit_log.2.jsonl",
            "audit_log.3.jsonl",
            "audit_log.jsonl"
        ]
        .map(|n| dir.join(n))
    );
    assert_eq!(verified.calls.status, ok(5, h4));
    assert_eq!(verified.sessions.status, ok(4, sh3));

    // A rotated file gone missing: the next file does not start where the chain was.
    std::fs::remove_file(dir.join("audit_log.2.jsonl")).unwrap();
    let verified = verify_audit_dir(&dir).unwrap();
    let third = dir.join("audit_log.3.jsonl");
    let found = raw(&third)[0].clone();
    let found = found
        .trim_end()
        .rsplit_once("\"prev\":\"")
        .unwrap()
        .1
        .trim_end_matches("\"}")
        .to_owned();
    assert_eq!(found, h2);
    assert_eq!(
        broken(verified.calls.status),
        (
            third.clone(),
            1,
            ChainProblem::FirstLine {
                expected: h1.clone(),
                found: h2.clone()
            },
            format!(
                "line 1 does not start the file's chain: its prev is {h2}, expected {h1} (lines \
                 were deleted from the start, or the file before it is missing or changed) in {}",
                third.display()
            )
        )
    );
}

/// Five calls in one file; returns its path and raw lines.
fn five_lines(dir: &Path) -> (PathBuf, Vec<String>) {
    session(&dispatcher(AuditLog::open(dir).unwrap()), "sess_five", 1..6);
    let path = dir.join("audit_log.jsonl");
    let lines = raw(&path);
    assert_eq!(lines.len(), 5);
    (path, lines)
}

/// Writes `lines` to `path` and verifies it as a chain from 64 zeros.
fn verify(path: &Path, lines: &[String]) -> ChainStatus {
    std::fs::write(path, lines.concat()).unwrap();
    verify_audit_file(path, CHAIN_START).unwrap()
}

#[test]
fn the_verifier_names_the_first_line_edited_deleted_inserted_or_reordered() {
    let dir = TempDir::new("chain-tamper");
    let (path, lines) = five_lines(&dir);
    let at = |line: u64, problem: ChainProblem, text: &str| {
        (
            path.clone(),
            line,
            problem,
            format!("{text} in {}", path.display()),
        )
    };
    let h = |i: usize| sha256_hex(lines[i].as_bytes());
    assert_eq!(verify(&path, &lines), ok(5, h(4)));

    // Line 3 edited (its result changed): line 4 no longer follows it.
    let mut edited = lines.clone();
    edited[2] = edited[2].replace(r#""content":"3""#, r#""content":"30""#);
    assert_ne!(edited[2], lines[2]);
    assert_eq!(
        broken(verify(&path, &edited)),
        at(
            4,
            ChainProblem::DoesNotFollow,
            "line 4 does not follow line 3: line 3 was edited, or lines were deleted between them"
        )
    );

    // Line 3 deleted: the new line 3 does not follow line 2.
    let mut deleted = lines.clone();
    deleted.remove(2);
    assert_eq!(
        broken(verify(&path, &deleted)),
        at(
            3,
            ChainProblem::DoesNotFollow,
            "line 3 does not follow line 2: line 2 was edited, or lines were deleted between them"
        )
    );

    // A forged line inserted after line 2, even with a correct `prev` of its own.
    let mut inserted = lines.clone();
    let forged = lines[2].replace(r#""content":"3""#, r#""content":"3000""#);
    let forged = format!(
        "{}\"prev\":\"{}\"}}\n",
        forged.rsplit_once("\"prev\":\"").unwrap().0,
        h(1)
    );
    inserted.insert(2, forged);
    assert_eq!(
        broken(verify(&path, &inserted)),
        at(
            3,
            ChainProblem::Inserted { until: 3 },
            "line 3 was inserted: line 4 follows line 2"
        )
    );
    // Two lines inserted, the second chained to the first.
    let second = format!(
        "{}\"prev\":\"{}\"}}\n",
        inserted[2].rsplit_once("\"prev\":\"").unwrap().0,
        sha256_hex(inserted[2].as_bytes())
    );
    inserted.insert(3, second);
    assert_eq!(
        broken(verify(&path, &inserted)),
        at(
            3,
            ChainProblem::Inserted { until: 4 },
            "lines 3 to 4 were inserted: line 5 follows line 2"
        )
    );

    // Lines 3 and 4 swapped.
    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    assert_eq!(
        broken(verify(&path, &swapped)),
        at(
            3,
            ChainProblem::Reordered { follows: 4 },
            "line 3 follows line 4, which comes after it: lines were reordered"
        )
    );

    // The first line deleted.
    assert_eq!(
        broken(verify(&path, &lines[1..])),
        at(
            1,
            ChainProblem::FirstLine {
                expected: ZEROS.to_owned(),
                found: h(0)
            },
            &format!(
                "line 1 does not start the file's chain: its prev is {}, expected {ZEROS} (lines \
                 were deleted from the start, or the file before it is missing or changed)",
                h(0)
            )
        )
    );

    // Line 2 is no longer a JSON object ending with its `prev`.
    for garbage in [
        "not json\n".to_owned(),
        lines[1].replace(r#""prev":""#, r#""prev":"0"#),
        lines[1]
            .replace(r#""prev":""#, r#""other":"x","prev":""#)
            .replace(r#"{"ts""#, r#"{"prev":"x","ts""#),
        lines[1].replace(r#"{"ts""#, r#"["ts""#),
    ] {
        let mut garbled = lines.clone();
        garbled[1] = garbage;
        assert_eq!(
            broken(verify(&path, &garbled)),
            at(
                2,
                ChainProblem::Unreadable,
                "line 2 is not a JSON object ending with a \"prev\" hash (edited, or cut short)"
            )
        );
    }

    // The last line cut short.
    let mut torn = lines.clone();
    torn[4].truncate(20);
    assert_eq!(
        broken(verify(&path, &torn)),
        at(
            5,
            ChainProblem::Torn,
            "line 5 has no newline (a write was cut short)"
        )
    );

    // The last line deleted: the shorter chain verifies; only the last hash kept elsewhere
    // (h(4)) shows it.
    assert_eq!(verify(&path, &lines[..4]), ok(4, h(3)));

    // A start that is not a hash is a usage error.
    let err = verify_audit_file(&path, "abc").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        "`abc` is not a SHA-256 hash (64 lowercase hex digits)"
    );
}

#[test]
fn a_torn_last_line_is_ended_before_the_next_line_and_reported() {
    let dir = TempDir::new("chain-torn");
    let log = AuditLog::open(&dir).unwrap();
    let d = dispatcher(log);
    session(&d, "sess_1", 1..2);
    let path = dir.join("audit_log.jsonl");
    // A crash cut a line short.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"ts\":\"2026")
        .unwrap();
    session(&d, "sess_2", 2..3);
    let lines = raw(&path);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1], "{\"ts\":\"2026\n");
    // Line 3 follows the torn line as it now stands, `\n` included.
    assert!(
        lines[2].ends_with(&format!(
            "\"prev\":\"{}\"}}\n",
            sha256_hex(lines[1].as_bytes())
        )),
        "{}",
        lines[2]
    );
    assert_eq!(
        broken(verify_audit_dir(&dir).unwrap().calls.status).1,
        2,
        "the torn line is reported"
    );
}

#[test]
fn an_empty_folder_verifies_and_a_file_is_not_a_folder() {
    let dir = TempDir::new("chain-empty");
    let verified = verify_audit_dir(&dir).unwrap();
    assert_eq!(verified.calls.files, Vec::<PathBuf>::new());
    assert_eq!(verified.calls.status, ok(0, CHAIN_START));
    assert_eq!(verified.sessions.status, ok(0, CHAIN_START));
    assert_eq!(
        verified.calls.status.to_string(),
        format!("ok, 0 lines, last hash {ZEROS}")
    );
    let file = dir.join("plain");
    std::fs::write(&file, "x").unwrap();
    let err = verify_audit_dir(&file).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory);
    assert_eq!(
        err.to_string(),
        format!("`{}` is not a folder", file.display())
    );
}

#[test]
fn two_logs_on_one_folder_keep_one_chain_through_the_file_lock() {
    // Two `AuditLog`s open the files separately, as two processes would: their threads do not
    // share a mutex, only the file lock (`flock` is per open file).
    let dir = TempDir::new("chain-two-logs");
    let a = dispatcher(AuditLog::open(&dir).unwrap());
    let b = dispatcher(AuditLog::open(&dir).unwrap());
    std::thread::scope(|s| {
        for t in 0..4i64 {
            let d = if t % 2 == 0 { &a } else { &b };
            s.spawn(move || session(d, &format!("sess_{t}"), t * 1000..t * 1000 + 300));
        }
    });
    let (lines, last) = chained_lines(&dir.join("audit_log.jsonl"), ZEROS);
    assert_eq!(lines.len(), 1200);
    let (_, last_summary) = chained_lines(&dir.join("session_summaries.jsonl"), ZEROS);
    let verified = verify_audit_dir(&dir).unwrap();
    assert_eq!(verified.calls.status, ok(1200, last));
    assert_eq!(verified.sessions.status, ok(4, last_summary));
}

/// Set in the child processes of the test below.
const CHILD_DIR: &str = "TOOLGATE_TEST_AUDIT_CHILD_DIR";

#[test]
fn two_processes_appending_to_one_folder_keep_one_chain() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        // In a child: append 400 lines and exit.
        let id: i64 = std::process::id().into();
        session(
            &dispatcher(AuditLog::open(dir).unwrap()),
            &format!("sess_pid_{id}"),
            0..400,
        );
        return;
    }
    let dir = TempDir::new("chain-processes");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "audit_chain::two_processes_appending_to_one_folder_keep_one_chain",
                    "--exact",
                    "--test-threads=1",
                ])
                .env(CHILD_DIR, dir.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // This process writes at the same time.
    session(
        &dispatcher(AuditLog::open(&dir).unwrap()),
        "sess_parent",
        0..400,
    );
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let (lines, last) = chained_lines(&dir.join("audit_log.jsonl"), ZEROS);
    assert_eq!(lines.len(), 1200);
    let sessions: std::collections::BTreeSet<String> =
        support::json_lines(&dir.join("audit_log.jsonl"))
            .iter()
            .map(|l| l["session_id"].as_str().unwrap().to_owned())
            .collect();
    assert_eq!(sessions.len(), 3, "three processes wrote");
    assert_eq!(verify_audit_dir(&dir).unwrap().calls.status, ok(1200, last));
}

#[test]
fn the_progress_of_a_check_adds_up_to_the_files_bytes_and_its_verdict_is_the_same() {
    let dir = TempDir::new("chain-progress");
    let log = AuditLog::open(dir.path()).unwrap();
    let d = dispatcher(log.clone());
    // Rotated files and more than one 64 KiB report per chain.
    for (i, part) in [0..300, 300..600, 600..900].into_iter().enumerate() {
        session(&d, &format!("sess_progress_{i}"), part);
        log.rotate().unwrap();
    }
    session(&d, "sess_progress_live", 900..910);
    drop((d, log));
    let bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let reports = std::cell::RefCell::new(Vec::new());
    let verified = toolgate::audit::verify_audit_dir_with_progress(dir.path(), &|n| {
        reports.borrow_mut().push(n)
    })
    .unwrap();
    let reports = reports.into_inner();
    assert_eq!(reports.iter().sum::<u64>(), bytes);
    assert!(reports.iter().all(|n| *n > 0 && *n <= 64 * 1024 + 4096));
    assert!(verified.calls.files.len() > 2, "{:?}", verified.calls.files);
    assert_eq!(verified, verify_audit_dir(dir.path()).unwrap());
    assert!(verified.is_ok());
}
